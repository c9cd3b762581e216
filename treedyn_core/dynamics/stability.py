"""How small an explicit (rk4) step must be for a tree, and whether the app can afford it.

docs/design.md §4: in the app, rk4 runs with sub-steps below its stability limit, or is
refused. The limit is estimated from a bound on the fastest eigenvalue of the
linearised joint springs and dampers, treating each limb as a rotor of inertia
``J_i`` (about its base, limb axes) coupled to its parent and its children:

    ω²  ≤ max_i 2 (‖K_i‖ + Σ_children ‖K_c‖) / λmin(J_i)        (Gershgorin)
    γ   ≤ max_i 2 (‖C_i‖ + Σ_children ‖C_c‖) / λmin(J_i)
    |λ| ≤ γ/2 + sqrt(γ²/4 + ω²)                                (λ² + γλ + ω² = 0)

and rk4 is stable for h |λ| ≤ 2.78 (its stability region on the negative real
axis; 2.83 on the imaginary axis). The single-limb estimate sqrt(λmax(K_i) /
λmin(J_i)) is 3–10× too optimistic on generated trees: a thin limb between
its parent's and its children's joints, and the large twist dampers (sized on
the whole subtree's inertia) acting on a limb's tiny axial inertia, make the
fastest modes; rk4 blew up at 0.2× that estimate's step on ``young_oak``.
"""

from __future__ import annotations

import math

import numpy as np

# rk4's stability boundary on the negative real axis is h|λ| = 2.785; keep a margin.
RK4_STABILITY = 2.78
SAFETY = 0.9


def fastest_rate(tree, inertia_base: np.ndarray, stiffness_scale: float,
                 damping_scale: float) -> float:
    """Bound on the largest |eigenvalue| of the joint spring–damper system, 1/s.

    tree : treedyn_core Tree (stiffness, damping (N, 3, 3) limb axes; parent (N,))
    inertia_base : (N, 3, 3) kg m², each limb's inertia about its base, limb axes
    """
    k = stiffness_scale * np.linalg.norm(tree.stiffness, ord=2, axis=(1, 2))
    c = damping_scale * np.linalg.norm(tree.damping, ord=2, axis=(1, 2))
    j_min = np.linalg.eigvalsh(0.5 * (inertia_base + inertia_base.transpose(0, 2, 1)))[:, 0]
    j_min = np.maximum(j_min, np.finfo(float).tiny)
    k_touching, c_touching = k.copy(), c.copy()
    children = tree.parent >= 0
    np.add.at(k_touching, tree.parent[children], k[children])
    np.add.at(c_touching, tree.parent[children], c[children])
    omega2 = float(np.max(2.0 * k_touching / j_min))
    gamma = float(np.max(2.0 * c_touching / j_min))
    return 0.5 * gamma + math.sqrt(0.25 * gamma * gamma + omega2)


def rk4_substeps(dt: float, rate: float) -> int:
    """Sub-steps per step of `dt` (s) that keep rk4 below its stability limit for `rate` (1/s)."""
    if rate <= 0.0:
        return 1
    h_max = SAFETY * RK4_STABILITY / rate
    return max(1, math.ceil(dt / h_max - 1e-12))
