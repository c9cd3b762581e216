"""Poses between two simulation states, for drawing slow motion at the display's rate.

At time scale ×0.1 the worker publishes a state per simulated step (dt = 1/120 s), 12 a second
of wall time; drawn as they come the view moved 12 times a second. The window draws instead
the pose between the last two states at the wall-clock time of each frame: each limb's base
moved along the line between its two positions and its axis turned along the great circle
between its two directions (the slerp of the limb's rotation about the axis normal to both),
its length kept. Plain numpy: no Qt.
"""

from __future__ import annotations

import numpy as np

# Below this angle (rad) between a limb's two directions, the slerp's weights are replaced by
# the linear ones (sin θ/θ → 1) to avoid 0/0; the error is O(θ²) of a tiny turn.
SMALL_ANGLE = 1e-6


def between(base0: np.ndarray, tip0: np.ndarray, base1: np.ndarray, tip1: np.ndarray,
            alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(base, tip) : (N, 3) m, inertial, the pose a fraction `alpha` (0..1) of the way from
    state 0 (base0, tip0 : (N, 3) m) to state 1: bases linearly, limb directions by slerp,
    lengths from state 0 (a rigid limb's length does not change)."""
    alpha = float(min(max(alpha, 0.0), 1.0))
    base = base0 + alpha * (base1 - base0)
    axis0, axis1 = tip0 - base0, tip1 - base1
    length = np.linalg.norm(axis0, axis=1)
    safe = np.where(length > 0, length, 1.0)[:, None]
    u0 = axis0 / safe
    u1 = axis1 / np.where(np.linalg.norm(axis1, axis=1) > 0,
                          np.linalg.norm(axis1, axis=1), 1.0)[:, None]
    cos = np.clip(np.einsum("ni,ni->n", u0, u1), -1.0, 1.0)
    theta = np.arccos(cos)
    sin = np.sin(theta)
    small = (theta < SMALL_ANGLE) | (sin < SMALL_ANGLE)  # no turn, or half a turn
    with np.errstate(divide="ignore", invalid="ignore"):
        w0 = np.where(small, 1.0 - alpha, np.sin((1.0 - alpha) * theta) / sin)
        w1 = np.where(small, alpha, np.sin(alpha * theta) / sin)
    u = w0[:, None] * u0 + w1[:, None] * u1
    u /= np.maximum(np.linalg.norm(u, axis=1), 1e-300)[:, None]
    return base, base + length[:, None] * u
