"""The seed's model (docs/design.md §3 `seed`): every limb a rotor about its own base joint.

The blog post's equations as written (docs/design.md §3.2), with docs/design.md §1's
attitude kinematics. State per limb F: the absolute attitude ``C_IF`` (a unit
quaternion, limb → inertial) and the absolute body rate ``ω_F`` (rad/s, F axes):

    dC_IF/dt = C_IF ω_F^×
    dω_F/dt  = I_F⁻¹ (Σ M^F − ω_F × I_F ω_F),   I_F about the limb's base (kg m², F axes)

Moments on limb B (parent A), N m, B axes:

- spring:   ``−k_s K_B (E − Eᵀ)^∨`` with ``E = C_abᵀ C_AB`` (docs/design.md §2), ``K_B`` the
  stiffness matrix in B's axes applied to the vector ``(E − Eᵀ)^∨ = 2 sin φ · a``
  (for an isotropic k this is the seed's ``−k (E − Eᵀ)^∨``). Note the factor:
  near rest this spring is ``−2 K θ``, twice the articulated model's ``−K θ``.
- damper:   ``−c_s C_B ω_B`` on the ABSOLUTE rate (the seed's choice).
- the parent A receives the equal and opposite moment of both, ``−C_AB M`` in A axes
  (the root's parent is the ground).
- gravity:  ``c_B × (m_B C_IBᵀ g)``, the limb's own weight about its own base.
- external: ``C_IBᵀ τ_ext``; an external force acts at the base and so has no moment
  about it. No force is transmitted between limbs: a parent does not carry the
  weight of its children, only their spring and damper reactions.

Positions follow the drawing formula (a child's base at ``attach·L_p`` along its
parent's current axis), which is the articulated model's forward kinematics of
the same attitudes, so `Simulation` keeps its joint state ``(q, v)`` and outputs:
`SeedDynamics.step` converts to absolute attitudes and rates, steps, and converts
back (O(N) each way, once per call).

Energy (what the seed model conserves with damping off and isotropic springs):
``T = Σ ½ ω_Fᵀ I_F ω_F``, gravity ``V_g = −Σ m g·(r_base,rest + C_IF c)`` (each
limb's weight about its own base; the rest base heights make it equal to the
articulated model's at the rest pose), spring ``V_s = Σ 2 (1 − cos φ) aᵀ k_s K a``
(exact for isotropic K; for anisotropic K the seed's moment has no potential and
this is its second-order-exact stand-in).

The integrators are `integrators`' (written once for both models), on the absolute
quaternions and rates; what is the seed model's own is the θ-method's linear system
(docs/design.md §4), which `seed_dynamics` solves for θh > 0:

- `implicit`: the θ-method on the absolute rates. The rotor inertias
  (block-diagonal) are coupled by the joints' springs and dampers, which gives the
  tree-structured system ``(𝕄 + θh𝒞 + θ²h²𝒦) a = f − θh𝒦 ω`` with
  ``𝒦 = Gᵀ K_t G + K_g`` and ``𝒞 = Gᵀ C`` (G maps absolute rates to joint-relative
  rates ``ρ_B = ω_B − C_ABᵀ ω_A``; ``K_t = 2 k_s K`` the seed spring's stiffness at
  rest; ``K_g`` the positive-semidefinite part of each limb's own gravity stiffness,
  as in docs/design.md §4; ``C`` acts on the absolute rate, so 𝒞 is not symmetric). It is
  solved in O(N) by eliminating leaves toward the root (`_solve_tree_system`).
- `rk4` and `dop853`: Euler's equation per limb, nothing implicit.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import TreedynError
from ..numerics import mat3 as m3
from ..numerics.kernel import kernel
from ..numerics.so3 import (exp_many, quat_conj_mul, quat_matrix, quat_mul, quat_store_normalised,
                            quats_from_matrices)
from .aero import Air, drag_loads, midpoints
from .joints import error_rotation_vector, gravity_stiffness_psd
from .wind import plan_samples, wind_at

# Spring stiffness of the seed's moment −K (E − Eᵀ)^∨ at rest, in units of K.
SEED_SPRING_FACTOR = 2.0


# -- small allocation-free helpers ------------------------------------------------------------

@kernel(inline="always")
def euler_acceleration(inertia, inertia_inv, omega, moment, out):
    """Euler's equation: out = I⁻¹ (M − ω × I ω), rad/s², body axes (I kg m², M N m)."""
    w = m3.vload(omega)
    gyroscopic = m3.cross(w, m3.matvec(m3.load(inertia), w))
    m3.vstore(m3.matvec(m3.load(inertia_inv), m3.vsub(m3.vload(moment), gyroscopic)), out)


@kernel(inline="always")
def _inverse3(A, out):
    """out = A⁻¹ for a general (not necessarily symmetric) 3×3 A, by cofactors."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    inv = 1.0 / (A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02)
    a00, a01, a02 = A[0, 0], A[0, 1], A[0, 2]
    a10, a11, a12 = A[1, 0], A[1, 1], A[1, 2]
    a20, a21, a22 = A[2, 0], A[2, 1], A[2, 2]
    out[0, 0] = c00 * inv
    out[1, 0] = c01 * inv
    out[2, 0] = c02 * inv
    out[0, 1] = (a02 * a21 - a01 * a22) * inv
    out[1, 1] = (a00 * a22 - a02 * a20) * inv
    out[2, 1] = (a01 * a20 - a00 * a21) * inv
    out[0, 2] = (a01 * a12 - a02 * a11) * inv
    out[1, 2] = (a02 * a10 - a00 * a12) * inv
    out[2, 2] = (a00 * a11 - a01 * a10) * inv


# -- joint state ↔ absolute state ---------------------------------------------------------------

@kernel
def joint_to_absolute(parent, q, v, qa, omega):
    """Absolute quaternions qa (N, 4) limb → inertial and body rates omega (N, 3) rad/s from
    joint quaternions q (N, 4) child → parent and joint rates v (N, 3) rad/s, child axes
    (ω_B = C_ABᵀ ω_A + v_B)."""
    for i in range(parent.shape[0]):
        p = parent[i]
        if p < 0:   # the root's joint is its attitude
            quat_store_normalised(q[i], qa[i])
            m3.vstore(m3.vload(v[i]), omega[i])
            continue
        quat_store_normalised(quat_mul(qa[p], q[i]), qa[i])
        m3.vstore(m3.vadd(m3.matvec_t(quat_matrix(q[i]), m3.vload(omega[p])), m3.vload(v[i])),
                  omega[i])


@kernel
def absolute_to_joint(parent, qa, omega, q, v):
    """The inverse of `joint_to_absolute`: q = conj(qa_A) ⊗ qa_B, v = ω_B − C_ABᵀ ω_A."""
    for i in range(parent.shape[0]):
        p = parent[i]
        if p < 0:
            quat_store_normalised(qa[i], q[i])
            m3.vstore(m3.vload(omega[i]), v[i])
            continue
        quat_store_normalised(quat_conj_mul(qa[p], qa[i]), q[i])
        m3.vstore(m3.vsub(m3.vload(omega[i]), m3.matvec_t(quat_matrix(q[i]), m3.vload(omega[p]))),
                  v[i])


# -- the model's stages -------------------------------------------------------------------------

@kernel
def seed_pose(parent, qa, C_IF, R_rel):
    """C_IF (N, 3, 3) limb → inertial from the absolute quaternions, and the joint rotations
    R_rel = C_AB = C_IAᵀ C_IB (N, 3, 3), child → parent axes (root: C_IF)."""
    for i in range(parent.shape[0]):
        C = quat_matrix(qa[i])
        m3.store(C, C_IF[i])
        p = parent[i]
        m3.store(m3.mul(m3.transpose(m3.load(C_IF[p])), C) if p >= 0 else C, R_rel[i])


@kernel
def seed_kinematics(parent, base_offset, C_IF, omega, base, base_vel, omega_world):
    """The drawing formula and its rate: base points (N, 3) m, their velocities (N, 3) m/s and
    the limbs' rates omega_world = C_IF ω (N, 3) rad/s, inertial axes."""
    for i in range(parent.shape[0]):
        m3.vstore(m3.matvec(m3.load(C_IF[i]), m3.vload(omega[i])), omega_world[i])
        p = parent[i]
        if p < 0:
            m3.vstore(m3.vload(base_offset[i]), base[i])
            m3.vstore((0.0, 0.0, 0.0), base_vel[i])
            continue
        d = m3.matvec(m3.load(C_IF[p]), m3.vload(base_offset[i]))
        m3.vstore(m3.vadd(m3.vload(base[p]), d), base[i])
        m3.vstore(m3.vadd(m3.cross(m3.vload(omega_world[p]), d), m3.vload(base_vel[p])),
                  base_vel[i])


@kernel
def seed_moments(parent, mass, com_offset, stiffness, damping, spring_C_rel, gravity,
                 ext_torque, C_IF, R_rel, omega, k_scale, c_scale, tau, moment):
    """Sum of the moments on every limb about its base, N m, body axes, into moment (N, 3).

    tau (N, 3) receives each joint's spring + damper moment on its child,
    ``−k_s K (E − Eᵀ)^∨ − c_s C ω`` (child axes); the parent gets ``−C_AB tau``. Gravity
    ``c × m C_IFᵀ g`` and the external torque ext_torque (N, 3, inertial, about the base)
    are added.
    """
    n = parent.shape[0]
    g = m3.vload(gravity)
    for i in range(n):
        E = m3.mul(m3.transpose(m3.load(spring_C_rel[i])), m3.load(R_rel[i]))
        skew = (E[7] - E[5], E[2] - E[6], E[3] - E[1])             # (E − Eᵀ)^∨
        tau_i = m3.vsub(m3.vscale(-k_scale, m3.matvec(m3.load(stiffness[i]), skew)),
                        m3.vscale(c_scale, m3.matvec(m3.load(damping[i]), m3.vload(omega[i]))))
        m3.vstore(tau_i, tau[i])
        C = m3.load(C_IF[i])
        gravity_moment = m3.cross(m3.vload(com_offset[i]), m3.vscale(mass[i], m3.matvec_t(C, g)))
        m3.vstore(m3.vadd(m3.vadd(tau_i, gravity_moment), m3.matvec_t(C, m3.vload(ext_torque[i]))),
                  moment[i])
    for i in range(n):
        p = parent[i]
        if p >= 0:
            reaction = m3.matvec(m3.load(R_rel[i]), m3.vload(tau[i]))
            m3.vstore(m3.vsub(m3.vload(moment[p]), reaction), moment[p])


@kernel
def _solve_tree_system(parent, mass, com_offset, inertia_base, stiffness, damping, gravity,
                       C_IF, R_rel, omega, moment, k_scale, c_scale, theta_h, aero_damping,
                       drag_h, D, D_inv, U, L, b, omega_dot):
    """The θ-method's rate increments a = omega_dot (N, 3), body axes, in O(N).

    Assembles, per limb, the diagonal block D_i = I_i + θh C_i + θ²h² (K_i + K_g,i
    + Σ_children R_c K_c R_cᵀ), the couplings U_i = A[i, parent] = −θ²h² K_i R_iᵀ and
    L_i = A[parent, i] = −R_i (θ²h² K_i + θh C_i), and b = f − θh 𝒦 ω; eliminates the
    leaves toward the root (D_p −= L_i D_i⁻¹ U_i, b_p −= L_i D_i⁻¹ b_i), then substitutes
    outward (a_i = D_i⁻¹ (b_i − U_i a_p)). Breadth-first order: parents before children.
    drag_h > 0 adds drag_h times the drag's damping of each limb's own rate, aero_damping
    (N, 3, 3) body axes, to D_i (the aerodynamic damping made implicit, docs/design.md §4).
    """
    n = parent.shape[0]
    h1 = theta_h
    h2 = theta_h * theta_h
    g = m3.vload(gravity)
    for i in range(n):
        p = parent[i]
        w = m3.vload(omega[i])
        inertia = m3.load(inertia_base[i])
        # joint-relative rate ρ_i = ω_i − C_ABᵀ ω_A (ground: ω_A = 0)
        R = m3.load(R_rel[i])
        rho = m3.vsub(w, m3.matvec_t(R, m3.vload(omega[p]))) if p >= 0 else w
        # own gravity stiffness, PSD part, body axes
        C = m3.load(C_IF[i])
        Kg = m3.congruence(m3.transpose(C), gravity_stiffness_psd(
            mass[i], m3.matvec(C, m3.vload(com_offset[i])), g))
        Ks = m3.scale(SEED_SPRING_FACTOR * k_scale, m3.load(stiffness[i]))
        Cs = m3.scale(c_scale, m3.load(damping[i]))
        # b_i = ΣM − ω × I ω − θh (Ks ρ + Kg ω)
        gyroscopic = m3.cross(w, m3.matvec(inertia, w))
        m3.vstore(m3.vsub(m3.vsub(m3.vload(moment[i]), gyroscopic),
                          m3.vscale(h1, m3.vadd(m3.matvec(Ks, rho), m3.matvec(Kg, w)))), b[i])
        m3.store(m3.add(m3.add(inertia, m3.scale(h1, Cs)),
                        m3.add(m3.scale(h2, m3.add(Ks, Kg)),
                               m3.scale(drag_h, m3.load(aero_damping[i])))), D[i])
        if p < 0:
            continue
        # couplings with the parent: U = −θ²h² Ks Rᵀ, L = −R (θ²h² Ks + θh Cs)
        m3.store(m3.scale(-h2, m3.mul(Ks, m3.transpose(R))), U[i])
        m3.store(m3.scale(-1.0, m3.mul(R, m3.add(m3.scale(h2, Ks), m3.scale(h1, Cs)))), L[i])
        # the parent's share of this joint's spring: D_p += θ²h² R Ks Rᵀ, b_p += θh R Ks ρ
        RKs = m3.mul(R, Ks)
        m3.vadd_into(m3.vscale(h1, m3.matvec(RKs, rho)), b[p])
        m3.add_into(m3.scale(h2, m3.mul(RKs, m3.transpose(R))), D[p])
    # leaves toward the root
    for i in range(n - 1, -1, -1):
        _inverse3(D[i], D_inv[i])
        p = parent[i]
        if p < 0:
            continue
        LD = m3.mul(m3.load(L[i]), m3.load(D_inv[i]))          # L_i D_i⁻¹
        m3.store(m3.sub(m3.load(D[p]), m3.mul(LD, m3.load(U[i]))), D[p])
        m3.vstore(m3.vsub(m3.vload(b[p]), m3.matvec(LD, m3.vload(b[i]))), b[p])
    # root outward
    for i in range(n):
        p = parent[i]
        x = m3.vload(b[i])
        if p >= 0:
            x = m3.vsub(x, m3.matvec(m3.load(U[i]), m3.vload(omega_dot[p])))
        m3.vstore(m3.matvec(m3.load(D_inv[i]), x), omega_dot[i])


@kernel
def _drag_damping_body(C_IF, lever, jacobian, out):
    """Damping of the drag torque about each base on the limb's own rate, body axes (N, 3, 3):
    τ = ρ × F(v_wind − v_base − ω × ρ) gives ∂τ/∂ω = ρ^× D ρ^× = −(ρ^×)ᵀ D ρ^×; out = C_IFᵀ
    (ρ^×)ᵀ D ρ^× C_IF (positive semidefinite)."""
    for i in range(C_IF.shape[0]):
        rho = m3.vload(lever[i])
        C = m3.load(C_IF[i])
        damping = m3.scale(-1.0, m3.hat_mul(rho, m3.mul_hat(m3.load(jacobian[i]), rho)))
        m3.store(m3.mul(m3.mul(m3.transpose(C), damping), C), out[i])


class SeedModel(NamedTuple):
    """The seed model's constant arrays, breadth-first limb order (`SeedDynamics.model`)."""

    parent: np.ndarray         # (N,) int, parent index, −1 for the root
    base_offset: np.ndarray    # (N, 3) m, parent's base → this base, parent axes
    mass: np.ndarray           # (N,) kg
    com_offset: np.ndarray     # (N, 3) m, base → centre of mass, limb axes
    inertia_base: np.ndarray   # (N, 3, 3) kg m², about the base, limb axes
    inertia_inv: np.ndarray    # (N, 3, 3) its inverse
    stiffness: np.ndarray      # (N, 3, 3) N m/rad, child axes
    damping: np.ndarray        # (N, 3, 3) N m s/rad, child axes
    spring_C_rel: np.ndarray   # (N, 3, 3) springs' rest orientations, child → parent
    gravity: np.ndarray        # (3,) m/s², inertial


class SeedWork(NamedTuple):
    """The seed model's work arrays for N limbs (`SeedWork.zeros(n)`), read by name."""

    C_IF: np.ndarray           # (N, 3, 3) limb → inertial
    R_rel: np.ndarray          # (N, 3, 3) joint rotations C_AB, child → parent
    tau: np.ndarray            # (N, 3) N m, each joint's spring + damper moment on its child
    moment: np.ndarray         # (N, 3) N m, sum of the moments on each limb, body axes
    D: np.ndarray              # (N, 3, 3) the tree system's diagonal blocks
    D_inv: np.ndarray          # (N, 3, 3) their inverses
    U: np.ndarray              # (N, 3, 3) couplings A[i, parent]
    L: np.ndarray              # (N, 3, 3) couplings A[parent, i]
    b: np.ndarray              # (N, 3) the tree system's right-hand side
    base: np.ndarray           # (N, 3) m, base points (drawing formula)
    base_vel: np.ndarray       # (N, 3) m/s
    omega_world: np.ndarray    # (N, 3) rad/s, C_IF ω
    mid: np.ndarray            # (N, 3) m, limb midpoints
    mid_vel: np.ndarray        # (N, 3) m/s
    lever: np.ndarray          # (N, 3) m, base → midpoint
    wind_at_mid: np.ndarray    # (N, 3) m/s
    aero_force: np.ndarray     # (N, 3) N, at the midpoints
    aero_torque: np.ndarray    # (N, 3) N m, about the bases
    drag_jacobian: np.ndarray  # (N, 3, 3) N s/m
    aero_damping: np.ndarray   # (N, 3, 3) N m s, the drag's damping of the limb's own rate
    total_torque: np.ndarray   # (N, 3) N m, external + aerodynamic
    vdot: np.ndarray           # (N, 3) rad/s², the body rates' derivative (or increments a)
    limbs: np.ndarray          # (N,) int64, 0 … N − 1: every limb, for the shared aero stages

    @classmethod
    def zeros(cls, n: int) -> "SeedWork":
        matrices = {"C_IF", "R_rel", "D", "D_inv", "U", "L", "drag_jacobian", "aero_damping"}
        return cls(*(np.arange(n, dtype=np.int64) if name == "limbs"
                     else np.zeros((n, 3, 3) if name in matrices else (n, 3))
                     for name in cls._fields))


class SeedSystem(NamedTuple):
    """What `seed_dynamics` reads (`systems.accelerations`): model, work arrays, air (the
    articulated model's `aero.Air`), the external torque and the scales in force."""

    model: SeedModel
    work: SeedWork
    air: Air
    ext_torque: np.ndarray     # (N, 3) N m, inertial axes, about the bases
    k_scale: float
    c_scale: float


@kernel
def seed_dynamics(system, qa, omega, implicit_h, drag_h):
    """Rate derivatives (N, 3) rad/s², body axes, into and as ``system.work.vdot``.

    implicit_h = 0: Euler's equation per limb (explicit); θh > 0: the θ-method's
    increments a of ``(𝕄 + θh𝒞 + θ²h²𝒦) a = f − θh𝒦 ω`` (module docstring), the drag's
    damping made implicit with the same θh (this model's choice: drag_h, the articulated
    model's backward-Euler step for it, is not used). Stages: pose → (if ``air.enabled``)
    drawing-formula kinematics, wind at the midpoints, drag torques about the bases →
    moments → Euler's equation or the tree system. An external force acts at the base and has
    no moment about it; the drag acts at the midpoint, its moment about the limb's own base is
    applied and its force is not passed on (no force is transmitted between limbs).
    """
    model, w, air = system.model, system.work, system.air
    parent = model.parent
    theta_h = implicit_h
    seed_pose(parent, qa, w.C_IF, w.R_rel)
    torque = system.ext_torque
    drag_theta_h = 0.0
    if air.enabled:
        seed_kinematics(parent, model.base_offset, w.C_IF, omega, w.base, w.base_vel,
                        w.omega_world)
        midpoints(w.limbs, w.C_IF, w.base, w.omega_world, w.base_vel, air.length, air.limb_u,
                  w.mid, w.mid_vel, w.lever)
        plan_samples(air.wind)
        wind_at(w.limbs, w.mid, air.wind, w.wind_at_mid)
        drag_loads(w.limbs, w.wind_at_mid, w.mid_vel, w.lever, air.length, air.radius, air.leaf_area,
                   air.air_density, air.drag_coefficient, air.leaf_drag_coefficient,
                   air.vogel_exponent, theta_h > 0.0, w.aero_force, w.aero_torque,
                   w.drag_jacobian)
        for i in range(parent.shape[0]):
            for r in range(3):
                w.total_torque[i, r] = torque[i, r] + w.aero_torque[i, r]
        torque = w.total_torque
        if theta_h > 0.0:
            _drag_damping_body(w.C_IF, w.lever, w.drag_jacobian, w.aero_damping)
            drag_theta_h = theta_h
    seed_moments(parent, model.mass, model.com_offset, model.stiffness, model.damping,
                 model.spring_C_rel, model.gravity, torque, w.C_IF, w.R_rel, omega,
                 system.k_scale, system.c_scale, w.tau, w.moment)
    if theta_h == 0.0:
        for i in range(parent.shape[0]):
            euler_acceleration(model.inertia_base[i], model.inertia_inv[i], omega[i],
                               w.moment[i], w.vdot[i])
        return w.vdot
    _solve_tree_system(parent, model.mass, model.com_offset, model.inertia_base,
                       model.stiffness, model.damping, model.gravity, w.C_IF, w.R_rel, omega,
                       w.moment, system.k_scale, system.c_scale, theta_h, w.aero_damping,
                       drag_theta_h, w.D, w.D_inv, w.U, w.L, w.b, w.vdot)
    return w.vdot


@kernel
def seed_energies(mass, com_offset, inertia_base, stiffness, spring_C_rel, gravity, rest_base,
                  k_scale, C_IF, R_rel, omega):
    """(kinetic, gravity, spring) energies of the seed model, J (after `seed_pose`)."""
    kinetic = 0.0
    potential = 0.0
    spring = 0.0
    g = m3.vload(gravity)
    for i in range(mass.shape[0]):
        w = m3.vload(omega[i])
        kinetic += 0.5 * m3.dot(w, m3.matvec(m3.load(inertia_base[i]), w))
        com = m3.vadd(m3.vload(rest_base[i]), m3.matvec(m3.load(C_IF[i]), m3.vload(com_offset[i])))
        potential -= mass[i] * m3.dot(g, com)
        theta_i, phi, sin_phi, cos_phi = error_rotation_vector(R_rel[i], spring_C_rel[i])
        quad = m3.dot(theta_i, m3.matvec(m3.load(stiffness[i]), theta_i))
        # 2 (1 − cos φ)/φ², series below 1e-4 rad
        factor = 1.0 - phi * phi / 12.0 if phi < 1e-4 else 2.0 * (1.0 - cos_phi) / (phi * phi)
        spring += k_scale * factor * quad
    return kinetic, potential, spring


# -- prestress -----------------------------------------------------------------------------------

@kernel
def _seed_prestress_moments(parent, mass, com_offset, C_IF, R_rel, gravity, out):
    """The spring moment each joint must exert on its child at rest, N m, child axes (N, 3):
    tau_i = −G_i + Σ_children C_AB,c tau_c (G_i the limb's own weight about its base),
    accumulated inward in O(N)."""
    n = parent.shape[0]
    g = m3.vload(gravity)
    for i in range(n):
        weight = m3.vscale(mass[i], m3.matvec_t(m3.load(C_IF[i]), g))
        m3.vstore(m3.vscale(-1.0, m3.cross(m3.vload(com_offset[i]), weight)), out[i])
    for i in range(n - 1, 0, -1):
        p = parent[i]
        if p >= 0:
            m3.vadd_into(m3.matvec(m3.load(R_rel[i]), m3.vload(out[i])), out[p])


def seed_prestressed_spring_rotations(tree, gravity: np.ndarray, k_scale: float) -> np.ndarray:
    """Spring rest orientations (N, 3, 3), child → parent axes, that make the rest pose the
    static equilibrium of the seed model under `gravity` (m/s²) with stiffness k_scale·K.

    Each limb's own weight about its base is balanced by its spring minus its children's
    spring reactions (O(N), inward). The spring moment −k_s K (E − Eᵀ)^∨ = τ gives
    (E − Eᵀ)^∨ = 2 sin φ a = −(k_s K)⁻¹ τ, solved for the smaller angle φ ≤ π/2.
    Raises TreedynError naming a limb whose spring cannot hold (|2 sin φ| > 2 needed, or no
    stiffness where a moment is needed).
    """
    n = tree.n
    qa = quats_from_matrices(tree.rest_C_IF)
    C_IF, R_rel = np.empty((n, 3, 3)), np.empty((n, 3, 3))
    seed_pose(tree.parent, qa, C_IF, R_rel)
    tau = np.empty((n, 3))
    _seed_prestress_moments(tree.parent, tree.mass, tree.com_offset, C_IF, R_rel,
                            np.asarray(gravity, float), tau)
    theta = np.zeros((n, 3))
    for i in np.flatnonzero(np.linalg.norm(tau, axis=1) > 0.0):
        K = k_scale * tree.stiffness[i]
        why = None
        if np.linalg.det(K) <= 0.0:
            why = "has no stiffness to carry"
        else:
            w = -np.linalg.solve(K, tau[i])
            size = float(np.linalg.norm(w))
            if size > 2.0:
                why = "is too soft to hold up (the seed spring's moment peaks at 90°)"
            else:
                theta[i] = math.asin(0.5 * size) / size * w if size > 0.0 else 0.0
        if why:
            raise TreedynError(
                f"prestress (seed model): the joint of limb '{tree.names[i]}' {why} the "
                f"moments on it ({np.linalg.norm(tau[i]):.3g} N m); stiffen it or set "
                f"simulation.prestress: false")
    return tree.rest_C_rel @ exp_many(-theta)


# -- the stepping object -------------------------------------------------------------------------

class SeedDynamics:
    """The seed model's part of a `Simulation`: its records and its state conversion.

    The simulation keeps its joint state ``sim.q`` (N, 4) and ``sim.v`` (N, 3) and all its
    outputs; `load` converts them to the absolute attitudes ``qa`` and rates ``omega`` the
    model's dynamics read, `store` converts back (the steppers of `integrators` run between).
    Reads from `sim`: ``q, v, spring_C_in_force, gravity, ext_torque, stiffness_scale,
    damping_scale`` and its aerodynamic inputs ``sim.air()`` (``ext_force`` acts at the bases
    and has no moment about them in this model; the drag, its moment about each base alone).
    """

    def __init__(self, tree, inertia_base: np.ndarray):
        n = tree.n
        self.tree = tree
        self.inertia_base = np.ascontiguousarray(inertia_base)
        self.inertia_inv = np.linalg.inv(self.inertia_base)
        self.qa = np.zeros((n, 4))          # absolute quaternions, limb → inertial
        self.omega = np.zeros((n, 3))       # rad/s, absolute body rates
        self.work = SeedWork.zeros(n)

    def model(self, sim) -> SeedModel:
        """The static arrays handed to the kernels (spring rest rotations and gravity from
        `sim`, which prestress and the user may change)."""
        t = self.tree
        return SeedModel(t.parent, t.base_offset, t.mass, t.com_offset, self.inertia_base,
                         self.inertia_inv, t.stiffness, t.damping, sim.spring_C_in_force,
                         np.asarray(sim.gravity, float))

    def system(self, sim, air: Air | None = None) -> SeedSystem:
        """The record the steppers give `systems.accelerations` (air: ``sim.air()``)."""
        return SeedSystem(self.model(sim), self.work, sim.air() if air is None else air,
                          np.ascontiguousarray(sim.ext_torque, dtype=np.float64),
                          float(sim.stiffness_scale), float(sim.damping_in_force))

    def load(self, sim) -> None:
        """Absolute state from the simulation's joint state."""
        joint_to_absolute(self.tree.parent, sim.q, sim.v, self.qa, self.omega)

    def store(self, sim) -> None:
        """The simulation's joint state from the absolute state."""
        absolute_to_joint(self.tree.parent, self.qa, self.omega, sim.q, sim.v)

    def accelerations(self, sim, theta_h: float = 0.0) -> np.ndarray:
        """(N, 3) rad/s², body axes: dω/dt of the current state (theta_h = 0), or the
        θ-method's increments a for θh = theta_h."""
        self.load(sim)
        return seed_dynamics(self.system(sim), self.qa, self.omega, float(theta_h), 0.0).copy()

    def moments(self, sim) -> np.ndarray:
        """(N, 3) N m, body axes: the sum of the moments on each limb about its base."""
        self.accelerations(sim)
        return self.work.moment.copy()

    def root_moment(self, sim) -> np.ndarray:
        """(3,) N m, inertial axes: the moment the root joint (seed spring + damper) exerts on
        the root limb."""
        self.accelerations(sim)
        return self.work.C_IF[0] @ self.work.tau[0]

    def energies(self, sim) -> tuple[float, float, float]:
        """(kinetic, gravity potential, spring potential) of the seed model, J (module
        docstring: what it conserves)."""
        self.load(sim)
        t, w = self.tree, self.work
        seed_pose(t.parent, self.qa, w.C_IF, w.R_rel)
        return seed_energies(t.mass, t.com_offset, self.inertia_base, t.stiffness,
                             sim.spring_C_in_force, np.asarray(sim.gravity, float), t.rest_base,
                             sim.stiffness_scale, w.C_IF, w.R_rel, self.omega)
