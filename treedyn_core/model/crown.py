"""A tree's crown as the wind-tunnel studies measure it: its width and depth at rest, and its
drag area C_d·A in a uniform wind (docs/validation.md, "Crown streamlining").

Mayhead (1973, Agricultural Meteorology 12: 123–130) and the studies after him give the drag
of whole crowns as F = ½ ρ U² C(U) A, with A the crown's width × depth at rest (ForestGALES'
C(U) = C·U^(−N), U in m/s, per species). `drag_area` is the same quantity of a treedyn tree:
its drag along the wind at rest, by `aero`'s laws, over ½ ρ U².
"""

from __future__ import annotations

import math

import numpy as np


def _trunk(tree) -> np.ndarray:
    """(N,) bool: the limbs of the stem (named ``trunk…`` by the generator)."""
    return np.array([name.startswith("trunk") for name in tree.names])


def dimensions(tree) -> tuple[float, float]:
    """Crown width (m, twice the largest horizontal reach of a branch tip from the stem's
    base) and depth (m, from the lowest branch base to the top) of `tree` at rest."""
    branch = ~_trunk(tree)
    if not branch.any():
        return 0.0, 0.0
    root = tree.rest_base[0]
    reach = np.hypot(tree.rest_tip[branch, 0] - root[0], tree.rest_tip[branch, 1] - root[1])
    top = max(tree.rest_tip[:, 2].max(), tree.rest_base[:, 2].max())
    return 2.0 * float(reach.max()), float(top - tree.rest_base[branch, 2].min())


def drag_area(tree, wind: dict, speed: float, direction_deg: float = 0.0,
              crown_only: bool = False) -> float:
    """C_d·A (m²) of `tree` at rest in a uniform wind of `speed` m/s toward `direction_deg`:
    the drag along the wind (`aero`'s laws on the rest pose) over ½ ρ U². `crown_only`: without
    the stem's limbs (the crowns of the wind-tunnel studies were cut from their stems).

    Cylinders: C_d 2 r L sin³φ (φ between limb and wind: |v_n| v_n along the wind); foliage:
    C_leaf A (U/U_v)^β.
    """
    azimuth = math.radians(direction_deg)
    along = np.array([math.cos(azimuth), math.sin(azimuth), 0.0])
    axes = np.einsum("nij,nj->ni", tree.rest_C_IF, tree.u)
    cos_phi = np.clip(axes @ along, -1.0, 1.0)
    sin3 = (1.0 - cos_phi * cos_phi) ** 1.5
    cylinders = float(wind["drag_coefficient"]) * 2.0 * tree.radius * tree.length * sin3
    foliage = float(wind["leaf_drag_coefficient"]) * tree.leaf_area * speed ** float(
        wind["vogel_exponent"])
    area = cylinders + foliage
    if crown_only:
        area = area[~_trunk(tree)]
    return float(area.sum())


def law_drag_area(c: float, n: float, width: float, depth: float, speed: float) -> float:
    """C·U^(−N)·width·depth (m²): a wind-tunnel law of crown drag (ForestGALES' form)."""
    return c * speed ** (-n) * width * depth
