"""Aerodynamic loads on limbs and foliage (DESIGN §5), and their velocity Jacobian.

Each limb is sampled at its midpoint. With the relative air velocity
``v = wind − v_mid`` (so aerodynamic damping comes out of the limb's own motion):

- cylinder cross-flow drag on the component normal to the limb's axis ``e``:
  ``F = ½ ρ C_d (2 r L) |v_n| v_n``, ``v_n = v − (v·e) e``;
- foliage drag on limbs with leaf area A > 0:
  ``F = ½ ρ C_dleaf A |v| v (|v| / U_v)^β`` (Vogel exponent β, U_v = 1 m/s).

The force acts at the midpoint: as a load on the limb's base it is the force
and the torque ``ρ_mid × F`` with ``ρ_mid = r_mid − r_base``. The Jacobian
``D = ∂F/∂v`` (3×3, symmetric positive semidefinite) gives the drag's damping
on the limb's velocity ``[ω; ṙ_base]`` as ``Lᵀ D L`` with ``L = [−ρ_mid^×, 1]``;
the implicit step adds ``θh`` times it to the limb's spatial inertia.
"""

from __future__ import annotations

import math

from .kernel import kernel

VOGEL_REFERENCE_SPEED = 1.0  # U_v, m/s


@kernel(inline="always")
def _identity_plus_outer(J, a, b, x0, x1, x2):
    """J = a 1 + b x xᵀ."""
    J[0, 0] = a + b * x0 * x0
    J[1, 1] = a + b * x1 * x1
    J[2, 2] = a + b * x2 * x2
    J[0, 1] = J[1, 0] = b * x0 * x1
    J[0, 2] = J[2, 0] = b * x0 * x2
    J[1, 2] = J[2, 1] = b * x1 * x2


@kernel(inline="always")
def _add_outer(J, b, x0, x1, x2):
    """J += b x xᵀ."""
    J[0, 0] += b * x0 * x0
    J[1, 1] += b * x1 * x1
    J[2, 2] += b * x2 * x2
    J[0, 1] += b * x0 * x1
    J[1, 0] += b * x0 * x1
    J[0, 2] += b * x0 * x2
    J[2, 0] += b * x0 * x2
    J[1, 2] += b * x1 * x2
    J[2, 1] += b * x1 * x2


@kernel
def midpoints(C_IF, base, omega, base_vel, length, u, mid, mid_vel, lever):
    """Midpoints (N, 3) m, their velocities (N, 3) m/s, and lever arms base → midpoint (N, 3) m,
    inertial axes, after forward_kinematics."""
    for i in range(length.shape[0]):
        half = 0.5 * length[i]
        for r in range(3):
            lever[i, r] = half * (C_IF[i, r, 0] * u[i, 0] + C_IF[i, r, 1] * u[i, 1]
                                  + C_IF[i, r, 2] * u[i, 2])
        w0, w1, w2 = omega[i, 0], omega[i, 1], omega[i, 2]
        l0, l1, l2 = lever[i, 0], lever[i, 1], lever[i, 2]
        mid_vel[i, 0] = base_vel[i, 0] + w1 * l2 - w2 * l1
        mid_vel[i, 1] = base_vel[i, 1] + w2 * l0 - w0 * l2
        mid_vel[i, 2] = base_vel[i, 2] + w0 * l1 - w1 * l0
        for r in range(3):
            mid[i, r] = base[i, r] + lever[i, r]


@kernel
def drag_loads(wind_at_mid, mid_vel, lever, length, radius, leaf_area, air_density,
               drag_coefficient, leaf_drag_coefficient, vogel_exponent, with_jacobian,
               force, torque, jacobian):
    """Drag force (N, 3) N at each midpoint, its torque about the base (N, 3) N m, and (when
    with_jacobian) D = ∂F/∂v_rel (N, 3, 3) N s/m, all inertial axes. Returns nothing: writes."""
    for i in range(length.shape[0]):
        v0 = wind_at_mid[i, 0] - mid_vel[i, 0]
        v1 = wind_at_mid[i, 1] - mid_vel[i, 1]
        v2 = wind_at_mid[i, 2] - mid_vel[i, 2]
        inv_len = 1.0 / length[i]
        e0, e1, e2 = lever[i, 0] * 2.0 * inv_len, lever[i, 1] * 2.0 * inv_len, lever[i, 2] * 2.0 * inv_len
        along = v0 * e0 + v1 * e1 + v2 * e2
        n0, n1, n2 = v0 - along * e0, v1 - along * e1, v2 - along * e2
        speed_n = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
        k_cyl = 0.5 * air_density * drag_coefficient * 2.0 * radius[i] * length[i]
        f0 = k_cyl * speed_n * n0
        f1 = k_cyl * speed_n * n1
        f2 = k_cyl * speed_n * n2
        if with_jacobian:
            # ∂(|v_n| v_n)/∂v = |v_n| (1 − e eᵀ) + v_n v_nᵀ / |v_n|
            J = jacobian[i]
            inv_n = 1.0 / speed_n if speed_n > 0.0 else 0.0
            _identity_plus_outer(J, k_cyl * speed_n, -k_cyl * speed_n, e0, e1, e2)
            _add_outer(J, k_cyl * inv_n, n0, n1, n2)
        area = leaf_area[i]
        if area > 0.0:
            speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
            if speed > 0.0:
                k_leaf = 0.5 * air_density * leaf_drag_coefficient * area
                # F = k |v|^(1+β) v / U_v^β
                magnitude = k_leaf * speed * (speed / VOGEL_REFERENCE_SPEED) ** vogel_exponent
                f0 += magnitude * v0
                f1 += magnitude * v1
                f2 += magnitude * v2
                if with_jacobian:
                    # ∂(c |v|^(1+β) v)/∂v = c |v|^(1+β) (1 + (1 + β) v̂ v̂ᵀ)
                    J = jacobian[i]
                    for r in range(3):
                        J[r, r] += magnitude
                    inv = 1.0 / speed
                    _add_outer(J, magnitude * (1.0 + vogel_exponent), v0 * inv, v1 * inv,
                               v2 * inv)
        force[i, 0] = f0
        force[i, 1] = f1
        force[i, 2] = f2
        l0, l1, l2 = lever[i, 0], lever[i, 1], lever[i, 2]
        torque[i, 0] = l1 * f2 - l2 * f1
        torque[i, 1] = l2 * f0 - l0 * f2
        torque[i, 2] = l0 * f1 - l1 * f0
