"""Prestress (docs/design.md §6): spring rest rotations that make the rest pose the static equilibrium.

At the rest pose every joint's spring must balance the moment of its subtree's
weight about the joint, G: J_r(θ)⁻ᵀ K θ = G (the spring torque is −J_r⁻ᵀ K θ).
Each joint is solved on its own, so the whole tree costs O(N).
"""

from __future__ import annotations

import math

import numpy as np
from .kernel import kernel

from . import so3
from .articulated import forward_kinematics, subtree_gravity_moments
from .errors import TreedynError

# Fixed-point iterations of θ ← K⁻¹ J_r(θ)ᵀ G: J_r is within a few % of 1 for the
# sags of real trees, so this contracts fast; 100 is far more than needed.
_MAX_ITERATIONS = 100
_TOLERANCE = 1e-15  # rad, relative to |θ| + 1e-300


@kernel
def _solve_spring_rotations(G, K, theta, status):
    """theta (N, 3) with J_r(θ)⁻ᵀ K θ = G per joint; status[i] = 0 ok, 1 no stiffness, 2 no
    convergence or |θ| beyond π/2 (a spring too soft to hold its subtree up)."""
    n = G.shape[0]
    K_inv = np.empty((3, 3))
    for i in range(n):
        status[i] = 0
        g_norm = math.sqrt(G[i, 0] ** 2 + G[i, 1] ** 2 + G[i, 2] ** 2)
        for r in range(3):
            theta[i, r] = 0.0
        if g_norm == 0.0:
            continue
        det = np.linalg.det(K[i])
        if det <= 0.0:
            status[i] = 1
            continue
        K_inv[:, :] = np.linalg.inv(K[i])
        converged = False
        for _ in range(_MAX_ITERATIONS):
            Jr = so3.right_jacobian(theta[i])
            rhs = Jr.T @ G[i]
            new = K_inv @ rhs
            change = 0.0
            size = 0.0
            for r in range(3):
                change += (new[r] - theta[i, r]) ** 2
                size += new[r] ** 2
                theta[i, r] = new[r]
            if math.sqrt(change) <= _TOLERANCE * (math.sqrt(size) + 1e-300):
                converged = True
                break
        if not converged or math.sqrt(size) > 0.5 * math.pi:
            status[i] = 2


def prestressed_spring_rotations(tree, gravity: np.ndarray, k_scale: float) -> np.ndarray:
    """Spring rest orientations (N, 3, 3), child → parent axes, that hold the rest pose still
    under `gravity` (m/s²) with stiffness k_scale·K. Raises TreedynError naming a limb whose
    spring cannot hold its subtree."""
    n = tree.n
    q = so3.quats_from_matrices(tree.rest_C_rel)
    v = np.zeros((n, 3))
    C_IF = np.empty((n, 3, 3))
    base, omega, base_vel, omega_rel = (np.empty((n, 3)) for _ in range(4))
    forward_kinematics(tree.parent, tree.base_offset, q, v, C_IF, base, omega, base_vel, omega_rel)
    G = np.empty((n, 3))
    subtree_gravity_moments(tree.parent, tree.mass, tree.com_offset, C_IF, base,
                            np.asarray(gravity, float), np.empty(n), np.empty((n, 3)), G)
    theta = np.empty((n, 3))
    status = np.empty(n, dtype=np.int64)
    _solve_spring_rotations(G, k_scale * tree.stiffness, theta, status)
    bad = np.flatnonzero(status)
    if bad.size:
        i = int(bad[0])
        why = ("has no stiffness to carry" if status[i] == 1
               else "is too soft to hold up (sag beyond 90°)")
        raise TreedynError(
            f"prestress: the joint of limb '{tree.names[i]}' {why} the weight of its subtree "
            f"({np.linalg.norm(G[i]):.3g} N m); stiffen it or set simulation.prestress: false")
    return tree.rest_C_rel @ so3.exp_many(-theta)
