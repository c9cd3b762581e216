"""Aerodynamic loads on limbs and foliage (docs/design.md §5), and their velocity Jacobian.

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
the implicit step adds ``4h`` times it to the limb's spatial inertia (not θh:
docs/design.md §4.2).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..numerics import mat3 as m3
from ..numerics.fastmath import fast_pow
from ..numerics.kernel import kernel
from ..numerics.runs import run_end

VOGEL_REFERENCE_SPEED = 1.0  # U_v, m/s


class Air(NamedTuple):
    """The aerodynamic inputs of the step kernels, read by name (`Simulation.air`).

    enabled False: no wind field and no drag at all (the loads given are applied alone).
    """

    enabled: bool
    length: np.ndarray               # (N,) m, limb lengths
    radius: np.ndarray               # (N,) m
    leaf_area: np.ndarray            # (N,) m², foliage area of each limb
    limb_u: np.ndarray               # (N, 3) unit limb axes, limb axes
    air_density: float               # kg/m³
    drag_coefficient: float          # C_d of the cylinders
    leaf_drag_coefficient: float     # C_d of the foliage
    vogel_exponent: float            # β
    wind: object                     # `wind.WindInputs`: the field and its state


@kernel(allocates=False)
def midpoints(limbs, C_IF, base, omega, base_vel, length, u, mid, mid_vel, lever):
    """Midpoints (N, 3) m, their velocities (N, 3) m/s, and lever arms base → midpoint (N, 3) m,
    inertial axes, of the limbs ``limbs`` (int array), after forward_kinematics."""
    for k in range(limbs.shape[0]):
        i = limbs[k]
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


@kernel(allocates=False)
def drag_loads(limbs, wind_at_mid, mid_vel, lever, length, radius, leaf_area, air_density,
               drag_coefficient, leaf_drag_coefficient, vogel_exponent, with_jacobian,
               force, torque, jacobian):
    """Drag force (N, 3) N at the midpoint of each limb of ``limbs`` (int array), its torque
    about the base (N, 3) N m, and (when with_jacobian) D = ∂F/∂v_rel (N, 3, 3) N s/m, all
    inertial axes. Returns nothing: writes."""
    # The foliage's (|v|/U_v)^β first, in loops that vectorise (fast_pow; over each run of
    # consecutive limbs as views, `runs`), held in force[:, 0] until the main loop overwrites
    # it.
    k = 0
    while k < limbs.shape[0]:
        end = run_end(limbs, k)
        first, stop = limbs[k], limbs[k] + end - k
        wind, motion, out = wind_at_mid[first:stop], mid_vel[first:stop], force[first:stop]
        for j in range(stop - first):
            speed2 = 0.0
            for r in range(3):
                speed2 += (wind[j, r] - motion[j, r]) ** 2
            relative = max(speed2, 1e-300) * (1.0 / VOGEL_REFERENCE_SPEED ** 2)
            out[j, 0] = fast_pow(relative, 0.5 * vogel_exponent)
        k = end
    for k in range(limbs.shape[0]):
        i = limbs[k]
        v = m3.vsub(m3.vload(wind_at_mid[i]), m3.vload(mid_vel[i]))
        rho = m3.vload(lever[i])
        e = m3.vscale(2.0 / length[i], rho)           # the limb's unit axis
        v_n = m3.vsub(v, m3.vscale(m3.dot(v, e), e))
        speed_n = math.sqrt(m3.dot(v_n, v_n))
        k_cyl = air_density * drag_coefficient * radius[i] * length[i]   # ½ ρ C_d (2 r L)
        F = m3.vscale(k_cyl * speed_n, v_n)
        # ∂(|v_n| v_n)/∂v = |v_n| (1 − e eᵀ) + v_n v_nᵀ / |v_n|
        inv_n = 1.0 / speed_n if speed_n > 0.0 else 0.0
        J = m3.add(m3.scale(k_cyl * speed_n, m3.sub(m3.diagonal(1.0), m3.outer(e, e))),
                   m3.scale(k_cyl * inv_n, m3.outer(v_n, v_n)))
        area = leaf_area[i]
        if area > 0.0:
            speed = math.sqrt(m3.dot(v, v))
            if speed > 0.0:
                k_leaf = 0.5 * air_density * leaf_drag_coefficient * area
                # F = k |v|^(1+β) v / U_v^β
                magnitude = k_leaf * speed * force[i, 0]
                F = m3.vadd(F, m3.vscale(magnitude, v))
                # ∂(c |v|^(1+β) v)/∂v = c |v|^(1+β) (1 + (1 + β) v̂ v̂ᵀ)
                J = m3.add(J, m3.add(m3.diagonal(magnitude), m3.scale(
                    magnitude * (1.0 + vogel_exponent) / (speed * speed), m3.outer(v, v))))
        m3.vstore(F, force[i])
        m3.vstore(m3.cross(rho, F), torque[i])
        if with_jacobian:
            m3.store(J, jacobian[i])
