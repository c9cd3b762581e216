"""Time integrators of the articulated model (docs/design.md §4), as compiled step loops.

- `implicit_steps`: the θ-method, linearly implicit in the joint rates, with the
  springs, dampers and the PSD part of gravity's stiffness implicit:
  ``(M + θhC + θ²h²K) a = f(q, v) − θhK v``, ``v ← v + h a``, each joint
  quaternion advanced by ``exp(h (v_old + θ h a))``. The drag's damping enters the
  inertias as ``h LᵀDL`` (backward Euler, not θh): the drag also depends on where a
  limb is in the gusty field, an explicit term that θh left unstable on light leafy
  shoots in a storm.
- `rk4_steps`: classical RK4 on the joint quaternions as vectors in R⁴
  (``q̇ = ½ q ⊗ (0, v)``) and the joint rates, quaternions renormalised after
  each full step.

Both loop over steps in compiled code and stop at the first non-finite joint
rate, returning how many steps they completed and the offending limb. The wind
is sampled at the start of each step (RK4's stages see the limbs' motion but
the wind field of the step's start) and advanced by h after it.
"""

from __future__ import annotations

import math

from .kernel import kernel

from .aero import drag_loads, midpoints
from .articulated import articulated_accelerations, forward_kinematics
from . import mat3 as m3
from .joints import spring_torque_q
from .so3 import quat_advance, quat_rate
from .wind import advance_wind, wind_velocity


@kernel
def joint_torques(q, v, spring_q, stiffness, damping, k_scale, c_scale, implicit_kv, theta, tau):
    """Spring + damper torques (N, 3), N m, child axes; minus implicit_kv·K v (the θh K v of
    the θ-method's right-hand side; 0 for explicit methods). q (N, 4) joint quaternions,
    spring_q (N, 4) the springs' rest orientations, both child → parent. Writes the springs'
    error rotation vectors into theta (N, 3), rad. Returns the spring energy, J."""
    energy = 0.0
    for i in range(q.shape[0]):
        theta_i, spring, V = spring_torque_q(q[i], spring_q[i], stiffness[i], k_scale)
        rate_matrix = m3.add(m3.scale(c_scale, m3.load(damping[i])),
                             m3.scale(implicit_kv * k_scale, m3.load(stiffness[i])))
        m3.vstore(theta_i, theta[i])
        m3.vstore(m3.vsub(spring, m3.matvec(rate_matrix, m3.vload(v[i]))), tau[i])
        energy += V
    return energy


@kernel
def _dynamics(model, q, v, ext_force, ext_torque, k_scale, c_scale, implicit_h, drag_h, w, air):
    """Joint accelerations of state (q, v) into w[-1] (vdot); implicit_h = θh for the joints'
    springs and dampers, drag_h = h for the aerodynamic terms (both 0: explicit).

    Stages: kinematics → aerodynamic loads (if air[0]) → joint torques → articulated-body
    recursion. With air, the loads given in ext_force/ext_torque are added to the drag.
    """
    (parent, base_offset, mass, com_offset, inertia_base, stiffness, damping, spring_q,
     gravity) = model
    (C_IF, base, omega, base_vel, omega_rel, theta, tau, IA_A, IA_B, IA_C, pA_w, pA_f,
     c_w, c_f, D_inv, u, acc_w, acc_f, sub_m, sub_h, sub_fw, sub_fh, sub_f, mid,
     mid_vel, lever, wind_at_mid, aero_force, aero_torque, drag_jacobian, total_force,
     total_torque, vdot) = w
    (enabled, length, radius, leaf_area, limb_u, air_density, drag_coefficient,
     leaf_drag_coefficient, vogel_exponent, wind_state, reference_height, profile_exponent,
     mode_k, mode_amp, mode_phase, wind_work) = air
    forward_kinematics(parent, base_offset, q, v, C_IF, base, omega, base_vel, omega_rel)
    drag_implicit_h = 0.0
    force, torque = ext_force, ext_torque
    if enabled:
        midpoints(C_IF, base, omega, base_vel, length, limb_u, mid, mid_vel, lever)
        wind_velocity(mid, wind_state, reference_height, profile_exponent, mode_k, mode_amp,
                      mode_phase, wind_work, wind_at_mid)
        drag_loads(wind_at_mid, mid_vel, lever, length, radius, leaf_area, air_density,
                   drag_coefficient, leaf_drag_coefficient, vogel_exponent, drag_h > 0.0,
                   aero_force, aero_torque, drag_jacobian)
        for i in range(total_force.shape[0]):
            for r in range(3):
                total_force[i, r] = ext_force[i, r] + aero_force[i, r]
                total_torque[i, r] = ext_torque[i, r] + aero_torque[i, r]
        force, torque = total_force, total_torque
        drag_implicit_h = drag_h
    joint_torques(q, v, spring_q, stiffness, damping, k_scale, c_scale, implicit_h, theta, tau)
    articulated_accelerations(parent, mass, com_offset, inertia_base, stiffness, damping, C_IF,
                              base, omega, omega_rel, tau, gravity, force, torque,
                              implicit_h * implicit_h * k_scale, implicit_h * c_scale, implicit_h,
                              drag_jacobian, lever, drag_implicit_h,
                              IA_A, IA_B, IA_C, pA_w, pA_f, c_w, c_f, D_inv, u, acc_w, acc_f,
                              sub_m, sub_h, sub_fw, sub_fh, sub_f, vdot)


@kernel
def first_non_finite(v):
    """Index of the first limb whose rates (N, 3) hold a non-finite value, or −1."""
    for i in range(v.shape[0]):
        for r in range(3):
            if not math.isfinite(v[i, r]):
                return i
    return -1


@kernel
def implicit_steps(n_steps, h, theta_m, model, q, v, ext_force, ext_torque, k_scale, c_scale, w,
                   air):
    """Advance (q, v) in place by n_steps θ-method steps of h seconds.

    Returns (steps completed, index of the first limb with a non-finite rate or −1).
    """
    vdot = w[-1]
    for step in range(n_steps):
        _dynamics(model, q, v, ext_force, ext_torque, k_scale, c_scale, theta_m * h, h, w, air)
        bad = first_non_finite(vdot)
        if bad >= 0:
            return step, bad
        for i in range(q.shape[0]):
            v_old = m3.vload(v[i])
            a = m3.vload(vdot[i])
            m3.vstore(m3.vadd(v_old, m3.vscale(h, a)), v[i])
            quat_advance(q[i], m3.vscale(h, m3.vadd(v_old, m3.vscale(theta_m * h, a))))
        advance_wind(air[9], h)
    return n_steps, -1


@kernel
def rk4_steps(n_steps, h, model, q, v, ext_force, ext_torque, k_scale, c_scale, w, stages, air):
    """Advance (q, v) in place by n_steps classical RK4 steps of h seconds.

    stages = (q0, v0, qs, vs, kq (4, N, 4), kv (4, N, 3)) work arrays.
    Returns (steps completed, index of the first limb with a non-finite rate or −1).
    """
    q0, v0, qs, vs, kq, kv = stages
    vdot = w[-1]
    n = q.shape[0]
    weights = (0.0, 0.5, 0.5, 1.0)
    for step in range(n_steps):
        q0[:] = q
        v0[:] = v
        for stage in range(4):
            a = weights[stage] * h
            for i in range(n):
                for r in range(4):
                    qs[i, r] = q0[i, r] + (a * kq[stage - 1, i, r] if stage > 0 else 0.0)
                for r in range(3):
                    vs[i, r] = v0[i, r] + (a * kv[stage - 1, i, r] if stage > 0 else 0.0)
            _dynamics(model, qs, vs, ext_force, ext_torque, k_scale, c_scale, 0.0, 0.0, w, air)
            bad = first_non_finite(vdot)
            if bad >= 0:
                q[:] = q0
                v[:] = v0
                return step, bad
            for i in range(n):
                quat_rate(qs[i], vs[i], kq[stage, i])
                for r in range(3):
                    kv[stage, i, r] = vdot[i, r]
        for i in range(n):
            norm = 0.0
            for r in range(4):
                q[i, r] = q0[i, r] + h / 6.0 * (kq[0, i, r] + 2.0 * kq[1, i, r] + 2.0 * kq[2, i, r] + kq[3, i, r])
                norm += q[i, r] * q[i, r]
            norm = 1.0 / math.sqrt(norm)
            for r in range(4):
                q[i, r] *= norm
            for r in range(3):
                v[i, r] = v0[i, r] + h / 6.0 * (kv[0, i, r] + 2.0 * kv[1, i, r] + 2.0 * kv[2, i, r] + kv[3, i, r])
        advance_wind(air[9], h)
    return n_steps, -1
