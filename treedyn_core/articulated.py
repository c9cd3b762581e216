"""Articulated-body algorithm for a tree of limbs on spherical joints (RBDA, Table 7.1).

Coordinates: every limb's quantities are taken about its own base point (the
joint), in inertial axes; accelerations are the classical ones
``a = [ω̇; r̈_base]``, so the transform from a parent's base to a child's base
is the translation ``X = [1, 0; −d^×, 1]`` with ``d = base_child − base_parent``
and no rotation is needed in the recursion. The joint rate ``v`` is in the
child's axes (``ω_rel = C_IF v``); the recursion solves for ``C_IF v̇``.

Gravity enters as the fictitious ground acceleration ``[0; −g]``, which is
the same as a force ``m g`` at every centre of mass. External loads are a
force (N) and a torque about the base (N m), inertial axes.

For the implicit step (DESIGN §4) each joint's ``D`` block receives the
armature ``a_c C + a_k K`` (the joint's damper and spring) and ``θ²h²`` times
the positive-semidefinite part of gravity's stiffness of the subtree, which
makes the articulated inertia passed to the parent a full 6×6 matrix.
"""

from __future__ import annotations

import math

import numpy as np
from .kernel import kernel

from . import linalg3 as la
from .joints import gravity_stiffness_psd
from .so3 import hat_into, quat_to_matrix_into


class Workspace:
    """Preallocated work arrays of the recursions for N limbs (nothing is allocated per step)."""

    def __init__(self, n: int):
        self.R_rel = np.zeros((n, 3, 3))      # joint rotations, child → parent axes
        self.C_IF = np.zeros((n, 3, 3))       # limb → inertial
        self.base = np.zeros((n, 3))          # m, inertial
        self.omega = np.zeros((n, 3))         # rad/s, inertial axes
        self.base_vel = np.zeros((n, 3))      # m/s, velocity of each base point
        self.omega_rel = np.zeros((n, 3))     # rad/s, C_IF v
        self.theta = np.zeros((n, 3))         # rad, spring error rotation vectors
        self.tau = np.zeros((n, 3))           # N m, joint torques, child axes
        self.IA_A = np.zeros((n, 3, 3))       # articulated inertia, angular block
        self.IA_B = np.zeros((n, 3, 3))       # coupling block
        self.IA_C = np.zeros((n, 3, 3))       # linear block
        self.pA_w = np.zeros((n, 3))          # bias moment about the base
        self.pA_f = np.zeros((n, 3))          # bias force
        self.c_w = np.zeros((n, 3))           # velocity-product accelerations
        self.c_f = np.zeros((n, 3))
        self.D_inv = np.zeros((n, 3, 3))
        self.u = np.zeros((n, 3))
        self.acc_w = np.zeros((n, 3))
        self.acc_f = np.zeros((n, 3))
        self.sub_m = np.zeros(n)              # kg, subtree mass
        self.sub_h = np.zeros((n, 3))         # kg m, subtree first moment about the origin
        self.sub_fw = np.zeros(n)             # N, subtree Σ |F| of the applied loads
        self.sub_fh = np.zeros((n, 3))        # N m, Σ |F| r (r: point of application)
        self.sub_f = np.zeros((n, 3))         # N, Σ F
        self.mid = np.zeros((n, 3))           # m, limb midpoints
        self.mid_vel = np.zeros((n, 3))       # m/s, their velocities
        self.lever = np.zeros((n, 3))         # m, base → midpoint
        self.wind_at_mid = np.zeros((n, 3))   # m/s
        self.aero_force = np.zeros((n, 3))    # N, at the midpoints
        self.aero_torque = np.zeros((n, 3))   # N m, about the bases
        self.drag_jacobian = np.zeros((n, 3, 3))  # N s/m, ∂F/∂v_rel
        self.total_force = np.zeros((n, 3))   # N, external + aerodynamic
        self.total_torque = np.zeros((n, 3))  # N m
        self.vdot = np.zeros((n, 3))          # rad/s², joint accelerations, child axes
        self.tmp = np.zeros((11, 3, 3))
        self.vec = np.zeros((8, 3))


@kernel
def forward_kinematics(parent, base_offset, q, v, R_rel, C_IF, base, omega, base_vel, omega_rel):
    """Outward pass: poses and velocities of every limb from the joint state.

    q (N, 4) joint quaternions (child → parent), v (N, 3) rad/s joint rates in child axes.
    Writes R_rel (N, 3, 3), C_IF (N, 3, 3) limb → inertial, base (N, 3) m, omega (N, 3) rad/s
    and base_vel (N, 3) m/s in inertial axes, omega_rel = C_IF v (N, 3).
    """
    n = parent.shape[0]
    d = np.empty(3)
    for i in range(n):
        quat_to_matrix_into(q[i], R_rel[i])
        p = parent[i]
        if p < 0:
            for r in range(3):
                for s in range(3):
                    C_IF[i, r, s] = R_rel[i, r, s]
                base[i, r] = base_offset[i, r]
                base_vel[i, r] = 0.0
            la.matvec(C_IF[i], v[i], omega_rel[i])
            for r in range(3):
                omega[i, r] = omega_rel[i, r]
            continue
        la.matmul(C_IF[p], R_rel[i], C_IF[i])
        la.matvec(C_IF[p], base_offset[i], d)
        la.cross(omega[p], d, base_vel[i])
        la.matvec(C_IF[i], v[i], omega_rel[i])
        for r in range(3):
            base[i, r] = base[p, r] + d[r]
            base_vel[i, r] += base_vel[p, r]
            omega[i, r] = omega[p, r] + omega_rel[i, r]


@kernel(inline="always")
def _add_implicit_stiffness(K, theta_h, omega_rel, D, tau, scratch):
    """Make a joint stiffness K (3, 3), inertial axes, implicit in the θ-method: D += (θh)² K
    and tau −= θh K omega_rel."""
    la.matvec(K, omega_rel, scratch)
    h2 = theta_h * theta_h
    for r in range(3):
        tau[r] -= theta_h * scratch[r]
        for s in range(3):
            D[r, s] += h2 * K[r, s]


@kernel
def articulated_accelerations(parent, mass, com_offset, inertia_base, stiffness, damping,
                              C_IF, base, omega, omega_rel, tau, gravity, ext_force, ext_torque,
                              armature_k, armature_c, gravity_theta_h, drag_jacobian, drag_lever,
                              drag_theta_h, IA_A, IA_B, IA_C, pA_w, pA_f, c_w, c_f, D_inv, u,
                              acc_w, acc_f, sub_m, sub_h, sub_fw, sub_fh, sub_f, tmp, vec, vdot):
    """Joint accelerations vdot (N, 3), rad/s², child axes: RBDA Table 7.1 in base-point coordinates.

    tau (N, 3) N m joint torques (child axes); inertia_base (N, 3, 3) kg m² about the base, limb
    axes; com_offset (N, 3) m limb axes; stiffness, damping (N, 3, 3) child axes, added to D as
    armature_k·K + armature_c·C; gravity_theta_h > 0 adds θ²h² times the PSD gravity stiffness to
    D and −θh times it, applied to omega_rel, to the joint torque (0 for explicit methods).
    drag_theta_h > 0 adds θh times the drag's damping Lᵀ D L (drag_jacobian D (N, 3, 3) N s/m,
    L = [−ρ^×, 1] with drag_lever ρ (N, 3) m, base → midpoint) to each limb's inertia, so that
    aerodynamic damping is implicit too; the bias forces keep the rigid inertia. It also adds
    the PSD part of the loads' geometric stiffness (ext_force applied at base + drag_lever,
    gathered per subtree like gravity's, about the subtree's force-weighted centre), implicit
    like gravity's: a large drag on a light limb is a stiff "weathervane" spring.
    """
    n = parent.shape[0]
    I_w = tmp[0]
    arm = tmp[1]
    AD = tmp[2]
    DB = tmp[3]
    d_hat = tmp[4]
    T1 = tmp[5]
    T2 = tmp[6]
    T3 = tmp[7]
    Aa = tmp[8]
    Ba = tmp[9]
    Ca = tmp[10]
    mc = vec[0]
    w_tmp = vec[1]
    Du = vec[2]
    d = vec[3]
    tau_w = vec[4]
    pa_w = vec[5]
    pa_f = vec[6]

    # Pass 1 (outward order, independent per limb): rigid-body inertias and bias forces.
    for i in range(n):
        la.congruence(C_IF[i], inertia_base[i], IA_A[i])
        la.matvec(C_IF[i], com_offset[i], mc)
        m = mass[i]
        for r in range(3):
            mc[r] *= m
        hat_into(mc, IA_B[i])
        for r in range(3):
            for s in range(3):
                IA_C[i, r, s] = 0.0
            IA_C[i, r, r] = m
        # pA = [ω × I ω; ω × (ω × m c)] − f_ext
        la.matvec(IA_A[i], omega[i], w_tmp)
        la.cross(omega[i], w_tmp, pA_w[i])
        la.cross(omega[i], mc, w_tmp)
        la.cross(omega[i], w_tmp, pA_f[i])
        for r in range(3):
            pA_w[i, r] -= ext_torque[i, r]
            pA_f[i, r] -= ext_force[i, r]
            sub_h[i, r] = m * base[i, r] + mc[r]
        sub_m[i] = m
        if drag_theta_h > 0.0:
            hat_into(drag_lever[i], d_hat)
            la.matmul(d_hat, drag_jacobian[i], T1)  # ρ^× D
            la.matmul(T1, d_hat, T2)                # ρ^× D ρ^×
            for r in range(3):
                for s in range(3):
                    IA_A[i, r, s] -= drag_theta_h * T2[r, s]
                    IA_B[i, r, s] += drag_theta_h * T1[r, s]
                    IA_C[i, r, s] += drag_theta_h * drag_jacobian[i, r, s]
            # Gravity enters as the ground acceleration −g, which would give the added inertia
            # a weight: cancel it (pA += θh Lᵀ D L [0; g] = θh [ρ × D g; D g]).
            la.matvec(drag_jacobian[i], gravity, w_tmp)
            la.cross(drag_lever[i], w_tmp, Du)
            for r in range(3):
                pA_f[i, r] += drag_theta_h * w_tmp[r]
                pA_w[i, r] += drag_theta_h * Du[r]
            weight = math.sqrt(ext_force[i, 0] ** 2 + ext_force[i, 1] ** 2 + ext_force[i, 2] ** 2)
            sub_fw[i] = weight
            for r in range(3):
                sub_fh[i, r] = weight * (base[i, r] + drag_lever[i, r])
                sub_f[i, r] = ext_force[i, r]
        p = parent[i]
        if p < 0:
            for r in range(3):
                c_w[i, r] = 0.0
                c_f[i, r] = 0.0
        else:
            la.cross(omega[p], omega_rel[i], c_w[i])
            for r in range(3):
                d[r] = base[i, r] - base[p, r]
            la.cross(omega[p], d, w_tmp)
            la.cross(omega[p], w_tmp, c_f[i])

    # Pass 2 (inward): articulated inertias IA and bias forces pA.
    for i in range(n - 1, -1, -1):
        p = parent[i]
        for r in range(3):
            for s in range(3):
                arm[r, s] = armature_k * stiffness[i, r, s] + armature_c * damping[i, r, s]
        la.congruence(C_IF[i], arm, I_w)  # armature, inertial axes
        la.matvec(C_IF[i], tau[i], tau_w)
        if gravity_theta_h > 0.0:
            inv_m = 1.0 / sub_m[i]
            for r in range(3):
                d[r] = sub_h[i, r] * inv_m - base[i, r]
            gravity_stiffness_psd(sub_m[i], d, gravity, T2)
            _add_implicit_stiffness(T2, gravity_theta_h, omega_rel[i], I_w, tau_w, w_tmp)
        if drag_theta_h > 0.0 and sub_fw[i] > 0.0:
            inv_w = 1.0 / sub_fw[i]
            for r in range(3):
                d[r] = sub_fh[i, r] * inv_w - base[i, r]
            gravity_stiffness_psd(1.0, d, sub_f[i], T2)
            _add_implicit_stiffness(T2, drag_theta_h, omega_rel[i], I_w, tau_w, w_tmp)
        for r in range(3):
            for s in range(3):
                I_w[r, s] += IA_A[i, r, s]  # D = Sᵀ IA S + armature
            u[i, r] = tau_w[r] - pA_w[i, r]
        la.inverse_symmetric(I_w, D_inv[i])
        if p < 0:
            continue
        sub_m[p] += sub_m[i]
        for r in range(3):
            sub_h[p, r] += sub_h[i, r]
        if drag_theta_h > 0.0:
            sub_fw[p] += sub_fw[i]
            for r in range(3):
                sub_fh[p, r] += sub_fh[i, r]
                sub_f[p, r] += sub_f[i, r]
        A = IA_A[i]
        B = IA_B[i]
        C = IA_C[i]
        la.matmul(A, D_inv[i], AD)
        la.matmul(D_inv[i], B, DB)
        la.matvec(D_inv[i], u[i], Du)
        # Ia = IA − U D⁻¹ Uᵀ with U = [A; Bᵀ]: blocks A − A D⁻¹ A, B − A D⁻¹ B, C − Bᵀ D⁻¹ B.
        la.matmul_symmetric(AD, A, T1)
        la.matmul(AD, B, T2)
        la.matmul_tn_symmetric(B, DB, T3)
        for r in range(3):
            for s in range(3):
                Aa[r, s] = A[r, s] - T1[r, s]
                Ba[r, s] = B[r, s] - T2[r, s]
                Ca[r, s] = C[r, s] - T3[r, s]
        # pa = pA + Ia c + U D⁻¹ u
        for r in range(3):
            pw = pA_w[i, r]
            pf = pA_f[i, r]
            for k in range(3):
                pw += Aa[r, k] * c_w[i, k] + Ba[r, k] * c_f[i, k] + A[r, k] * Du[k]
                pf += Ba[k, r] * c_w[i, k] + Ca[r, k] * c_f[i, k] + B[k, r] * Du[k]
            pa_w[r] = pw
            pa_f[r] = pf
        # Shift to the parent's base: X = [1, 0; −d^×, 1], IA_p += Xᵀ Ia X, pA_p += Xᵀ pa:
        # A'' = Aa − Ba d^× + d^× Baᵀ − d^× Ca d^×,  B'' = Ba + d^× Ca,  C'' = Ca.
        for r in range(3):
            d[r] = base[i, r] - base[p, r]
        la.skew_matmul(d, Ca, T1)      # d^× Ca
        la.matmul_skew(Ba, d, T2)      # Ba d^×  (and d^× Baᵀ = −(Ba d^×)ᵀ)
        la.matmul_skew(T1, d, T3)      # d^× Ca d^× (symmetric)
        for r in range(3):
            for s in range(3):
                IA_A[p, r, s] += Aa[r, s] - T2[r, s] - T2[s, r] - T3[r, s]
                IA_B[p, r, s] += Ba[r, s] + T1[r, s]
                IA_C[p, r, s] += Ca[r, s]
        la.cross(d, pa_f, w_tmp)
        for r in range(3):
            pA_w[p, r] += pa_w[r] + w_tmp[r]
            pA_f[p, r] += pa_f[r]

    # Pass 3 (outward): accelerations.
    for i in range(n):
        p = parent[i]
        if p < 0:
            for r in range(3):
                acc_w[i, r] = c_w[i, r]
                acc_f[i, r] = -gravity[r] + c_f[i, r]
        else:
            for r in range(3):
                d[r] = base[i, r] - base[p, r]
            la.cross(acc_w[p], d, w_tmp)
            for r in range(3):
                acc_w[i, r] = acc_w[p, r] + c_w[i, r]
                acc_f[i, r] = acc_f[p, r] + w_tmp[r] + c_f[i, r]
        A = IA_A[i]
        B = IA_B[i]
        for r in range(3):
            w_tmp[r] = u[i, r]
            for k in range(3):
                w_tmp[r] -= A[k, r] * acc_w[i, k] + B[r, k] * acc_f[i, k]
        la.matvec(D_inv[i], w_tmp, Du)
        for r in range(3):
            acc_w[i, r] += Du[r]
        la.matvec_t(C_IF[i], Du, vdot[i])


@kernel
def mechanical_energy(mass, com_offset, inertia_com, C_IF, base, omega, base_vel, gravity, vec):
    """Kinetic energy T and gravity's potential V_g = −Σ m g·r_com, J (after forward_kinematics)."""
    kinetic = 0.0
    potential = 0.0
    c = vec[0]
    v_com = vec[1]
    w_body = vec[2]
    Iw = vec[3]
    for i in range(mass.shape[0]):
        la.matvec(C_IF[i], com_offset[i], c)
        la.cross(omega[i], c, v_com)
        la.matvec_t(C_IF[i], omega[i], w_body)
        la.matvec(inertia_com[i], w_body, Iw)
        for r in range(3):
            v_com[r] += base_vel[i, r]
            kinetic += 0.5 * mass[i] * v_com[r] * v_com[r] + 0.5 * w_body[r] * Iw[r]
            potential -= mass[i] * gravity[r] * (base[i, r] + c[r])
    return kinetic, potential


@kernel
def subtree_gravity_moments(parent, mass, com_offset, C_IF, base, gravity, sub_m, sub_h, out):
    """Moment of each subtree's weight about its joint, N m, in the child's axes (N, 3).

    This is the generalized gravity force on each joint; accumulated inward in O(N).
    """
    n = parent.shape[0]
    c = np.empty(3)
    rho = np.empty(3)
    moment = np.empty(3)
    for i in range(n):
        la.matvec(C_IF[i], com_offset[i], c)
        sub_m[i] = mass[i]
        for r in range(3):
            sub_h[i, r] = mass[i] * (base[i, r] + c[r])
    for i in range(n - 1, -1, -1):
        for r in range(3):
            rho[r] = sub_h[i, r] - sub_m[i] * base[i, r]  # Σ m (r_com − base)
        la.cross(rho, gravity, moment)
        la.matvec_t(C_IF[i], moment, out[i])
        p = parent[i]
        if p >= 0:
            sub_m[p] += sub_m[i]
            for r in range(3):
                sub_h[p, r] += sub_h[i, r]
