"""Prestress (docs/design.md §6): spring rest rotations that make the rest pose the static equilibrium.

At the rest pose every joint's spring must balance the moment of its subtree's
weight about the joint, G: J_r(θ)⁻ᵀ K θ = G (the spring torque is −J_r⁻ᵀ K θ).
Each joint is solved on its own, so the whole tree costs O(N).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import TreedynError
from ..numerics import mat3 as m3
from ..numerics import so3
from ..numerics.kernel import kernel
from .articulated import forward_kinematics, subtree_gravity_moments

# Fixed-point iterations of θ ← K⁻¹ J_r(θ)ᵀ G: J_r is within a few % of 1 for the
# sags of real trees, so this contracts fast; 100 is far more than needed.
_MAX_ITERATIONS = 100
_TOLERANCE = 1e-15  # rad, relative to |θ| + 1e-300


@kernel
def _right_jacobian_t_times(theta, g):
    """J_r(θ)ᵀ g for θ rad, g (3-tuples): with T = θ^×, J_r = 1 − a T + b T², so
    J_rᵀ g = g + a θ × g + b θ × (θ × g) (the coefficients of `so3.right_jacobian`)."""
    phi2 = m3.dot(theta, theta)
    phi = math.sqrt(phi2)
    if phi < 1e-4:  # so3's small-angle threshold: the series are exact to round-off there
        a = 0.5 - phi2 / 24.0
        b = 1.0 / 6.0 - phi2 / 120.0
    else:
        a = (1.0 - math.cos(phi)) / phi2
        b = (phi - math.sin(phi)) / (phi2 * phi)
    t_g = m3.cross(theta, g)
    return m3.vadd(g, m3.vadd(m3.vscale(a, t_g), m3.vscale(b, m3.cross(theta, t_g))))


@kernel
def _solve_spring_rotations(G, K, theta, status):
    """theta (N, 3) with J_r(θ)⁻ᵀ K θ = G per joint; status[i] = 0 ok, 1 no stiffness, 2 no
    convergence or |θ| beyond π/2 (a spring too soft to hold its subtree up).

    In 3-tuples (`mat3`), K⁻¹ by cofactors: numpy's det, inv and @ inside a kernel cost ~6 s
    of compiling on a first run."""
    for i in range(G.shape[0]):
        status[i] = 0
        for r in range(3):
            theta[i, r] = 0.0
        g = m3.vload(G[i])
        if m3.dot(g, g) == 0.0:
            continue
        k0, k1, k2, k3, k4, k5, k6, k7, k8 = m3.load(K[i])
        adjugate = (k4 * k8 - k5 * k7, k2 * k7 - k1 * k8, k1 * k5 - k2 * k4,
                    k5 * k6 - k3 * k8, k0 * k8 - k2 * k6, k2 * k3 - k0 * k5,
                    k3 * k7 - k4 * k6, k1 * k6 - k0 * k7, k0 * k4 - k1 * k3)
        det = k0 * adjugate[0] + k1 * adjugate[3] + k2 * adjugate[6]
        if det <= 0.0:
            status[i] = 1
            continue
        K_inv = m3.scale(1.0 / det, adjugate)
        t = (0.0, 0.0, 0.0)
        converged = False
        for _ in range(_MAX_ITERATIONS):
            new = m3.matvec(K_inv, _right_jacobian_t_times(t, g))
            change = m3.vsub(new, t)
            t = new
            if math.sqrt(m3.dot(change, change)) <= _TOLERANCE * (
                    math.sqrt(m3.dot(t, t)) + 1e-300):
                converged = True
                break
        m3.vstore(t, theta[i])
        if not converged or math.sqrt(m3.dot(t, t)) > 0.5 * math.pi:
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
    forward_kinematics(np.arange(n), tree.parent, tree.base_offset, q, v, C_IF, base, omega,
                       base_vel, omega_rel)
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
