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

For the implicit step (docs/design.md §4) stage kernels of their own compute, before the
recursion, each joint's ``D0`` block — the armature ``a_c C + a_k K`` (the joint's
damper and spring) and ``θ²h²`` times the positive-semidefinite part of gravity's
stiffness of the subtree, which makes the articulated inertia passed to the parent a
full 6×6 matrix, and the loads' stiffness (`implicit_joint_blocks`); the drag's
added inertia is a function of its own (`drag_added_inertia`) that pass 1 adds to each
limb's inertia (`limb_inertias`); `articulated_accelerations` is then Table 7.1's passes
2 and 3 with ``D = Sᵀ IA S + D0``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..numerics import mat3 as m3
from ..numerics.kernel import kernel
from ..numerics.so3 import quat_matrix
from .joints import gravity_stiffness_psd, load_stiffness_magnitude


class ArticulatedModel(NamedTuple):
    """The articulated model's constant arrays, breadth-first limb order
    (`Simulation.articulated_model`)."""

    parent: np.ndarray         # (N,) int, parent index, −1 for the root
    base_offset: np.ndarray    # (N, 3) m, parent's base → this base, parent axes
    mass: np.ndarray           # (N,) kg
    com_offset: np.ndarray     # (N, 3) m, base → centre of mass, limb axes
    inertia_base: np.ndarray   # (N, 3, 3) kg m², about the base, limb axes
    stiffness: np.ndarray      # (N, 3, 3) N m/rad, child axes
    damping: np.ndarray        # (N, 3, 3) N m s/rad, child axes
    spring_q: np.ndarray       # (N, 4) springs' rest orientations, child → parent
    gravity: np.ndarray        # (3,) m/s², inertial


class Workspace(NamedTuple):
    """Preallocated work arrays of the articulated dynamics for N limbs (nothing is allocated
    per step), read by name in the kernels; `Workspace.zeros(n)` makes them.

    Symmetric 3×3 blocks are stored as their upper triangles (6,) (`mat3.load_sym`): a third
    less memory traffic in the recursion, which streams them.
    """

    C_IF: np.ndarray           # (N, 3, 3) limb → inertial
    base: np.ndarray           # (N, 3) m, inertial
    omega: np.ndarray          # (N, 3) rad/s, inertial axes
    base_vel: np.ndarray       # (N, 3) m/s, velocity of each base point
    omega_rel: np.ndarray      # (N, 3) rad/s, C_IF v
    theta: np.ndarray          # (N, 3) rad, spring error rotation vectors
    tau: np.ndarray            # (N, 3) N m, joint torques, child axes
    IA_A: np.ndarray           # (N, 6) articulated inertia, angular block (symmetric)
    IA_B: np.ndarray           # (N, 3, 3) coupling block
    IA_C: np.ndarray           # (N, 6) linear block (symmetric)
    pA_w: np.ndarray           # (N, 3) bias moment about the base
    pA_f: np.ndarray           # (N, 3) bias force
    c_w: np.ndarray            # (N, 3) velocity-product accelerations
    c_f: np.ndarray            # (N, 3)
    D0: np.ndarray             # (N, 6) joint-space terms added to D = Sᵀ IA S: the implicit
                               #   step's armature and stiffness blocks (symmetric)
    Q: np.ndarray              # (N, 3) N m, joint torques, inertial axes, with the implicit
                               #   step's stiffness corrections
    D_inv: np.ndarray          # (N, 6) joint-space inverse inertias D⁻¹ (symmetric)
    u: np.ndarray              # (N, 3) N m, u = Q − Sᵀ pA
    acc_w: np.ndarray          # (N, 3)
    acc_f: np.ndarray          # (N, 3)
    sub_m: np.ndarray          # (N,) kg, subtree mass
    sub_h: np.ndarray          # (N, 3) kg m, subtree first moment about the origin
    sub_fw: np.ndarray         # (N,) N, subtree Σ |F| of the applied loads
    sub_fh: np.ndarray         # (N, 3) N m, Σ |F| r (r: point of application)
    sub_f: np.ndarray          # (N, 3) N, Σ F
    mid: np.ndarray            # (N, 3) m, limb midpoints
    mid_vel: np.ndarray        # (N, 3) m/s, their velocities
    lever: np.ndarray          # (N, 3) m, base → midpoint
    wind_at_mid: np.ndarray    # (N, 3) m/s
    aero_force: np.ndarray     # (N, 3) N, at the midpoints
    aero_torque: np.ndarray    # (N, 3) N m, about the bases
    drag_jacobian: np.ndarray  # (N, 3, 3) N s/m, ∂F/∂v_rel
    total_force: np.ndarray    # (N, 3) N, external + aerodynamic
    total_torque: np.ndarray   # (N, 3) N m
    vdot: np.ndarray           # (N, 3) rad/s², joint accelerations, child axes
    point_mass: np.ndarray     # (N,) kg, the implicit step's added mass at a point of each limb
                               #   (a spring-damper pulling that point: `systems.pull_load`)
    point_lever: np.ndarray    # (N, 3) m, base → that point, inertial axes
    point_rate_share: np.ndarray  # (N,) the damper's share of point_mass (about its rate
                               #   reference; the spring's, the rest, about the position one)

    @classmethod
    def zeros(cls, n: int) -> "Workspace":
        """The work arrays of N limbs, zeroed (shapes as commented above)."""
        trailing = {"C_IF": (3, 3), "IA_B": (3, 3), "drag_jacobian": (3, 3), "IA_A": (6,),
                    "IA_C": (6,), "D0": (6,), "D_inv": (6,), "sub_m": (), "sub_fw": (),
                    "point_mass": (), "point_rate_share": ()}
        return cls(*(np.zeros((n,) + trailing.get(name, (3,))) for name in cls._fields))


@kernel(allocates=False)
def forward_kinematics(limbs, parent, base_offset, q, v, C_IF, base, omega, base_vel, omega_rel):
    """Outward pass: poses and velocities of the limbs ``limbs`` (int array, breadth-first
    order, their parents' already known or among them) from the joint state.

    q (N, 4) joint quaternions (child → parent), v (N, 3) rad/s joint rates in child axes.
    Writes C_IF (N, 3, 3) limb → inertial, base (N, 3) m, omega (N, 3) rad/s
    and base_vel (N, 3) m/s in inertial axes, omega_rel = C_IF v (N, 3).
    """
    for k in range(limbs.shape[0]):
        i = limbs[k]
        R = quat_matrix(q[i])
        p = parent[i]
        if p < 0:
            C = R
            b = m3.vload(base_offset[i])
            b_vel = (0.0, 0.0, 0.0)
            w = (0.0, 0.0, 0.0)
        else:
            C_p = m3.load(C_IF[p])
            C = m3.mul(C_p, R)
            d = m3.matvec(C_p, m3.vload(base_offset[i]))
            w = m3.vload(omega[p])
            b = m3.vadd(m3.vload(base[p]), d)
            b_vel = m3.vadd(m3.vload(base_vel[p]), m3.cross(w, d))
        w_rel = m3.matvec(C, m3.vload(v[i]))
        m3.store(C, C_IF[i])
        m3.vstore(b, base[i])
        m3.vstore(b_vel, base_vel[i])
        m3.vstore(w_rel, omega_rel[i])
        m3.vstore(m3.vadd(w, w_rel), omega[i])


@kernel
def limb_tips(C_IF, base, length, u, tip):
    """Tips (N, 3) m, inertial: base + L C_IF u, after forward_kinematics."""
    for i in range(length.shape[0]):
        m3.vstore(m3.vadd(m3.vload(base[i]),
                          m3.vscale(length[i], m3.matvec(m3.load(C_IF[i]), m3.vload(u[i])))),
                  tip[i])


@kernel(allocates=False)
def subtree_sums(limbs, model, w, gravity_stiffness, load_stiffness):
    """Inward sums over each limb's subtree of the terms `limb_inertias` wrote per limb, the
    inputs of `implicit_joint_blocks`: with gravity_stiffness, its mass ``w.sub_m`` (kg) and
    first moment about the origin ``w.sub_h`` = Σ m r_com (kg m); with load_stiffness, the
    applied forces as Σ|F| ``w.sub_fw`` (N), Σ|F| r ``w.sub_fh`` (N m) and ΣF ``w.sub_f`` (N).
    Over ``limbs`` (int array, breadth-first order) from the last: each one's sums are
    complete once its children's are added (they are among ``limbs``, or were summed before)."""
    for k in range(limbs.shape[0] - 1, -1, -1):
        i = limbs[k]
        p = model.parent[i]
        if p < 0:
            continue
        if gravity_stiffness:
            w.sub_m[p] += w.sub_m[i]
            m3.vadd_into(m3.vload(w.sub_h[i]), w.sub_h[p])
        if load_stiffness:
            w.sub_fw[p] += w.sub_fw[i]
            m3.vadd_into(m3.vload(w.sub_fh[i]), w.sub_fh[p])
            m3.vadd_into(m3.vload(w.sub_f[i]), w.sub_f[p])


class ImplicitTerms(NamedTuple):
    """How the step's stiff terms enter the recursion's linear system
    ``(M + Σ c·C + Σ s·K) x = f(q, v) − Σ K·(r ω_rel) + Σ c·C x_rate + Σ s·K x_position``
    (docs/design.md §4): each stiffness K with a coefficient s (s²) on the diagonal, each
    damping C with c (s), and what the right-hand side is linearised about. The θ-method:
    s = θ²h², c = θh, r = θh (its positions move by θh v before the implicit increment),
    no reference; generalized-α: s = c_q, c = c_v, r = 0, about reference accelerations
    of the rates and the positions. All zero: the explicit forward dynamics."""

    armature_k: float      # s of the joints' springs, stiffness scale included
    armature_c: float      # c of the joints' dampers, damping scale included
    gravity_h2: float      # s of gravity's PSD stiffness
    gravity_rate_h: float  # r of gravity's stiffness
    load_h2: float         # s of the applied loads' geometric stiffness (only with drag_h > 0)
    load_rate_h: float     # r of the loads' stiffness
    drag_h: float          # c of the drag's damping (> 0: the drag is implicit)
    about_reference: bool  # the right-hand side adds Σ c·C x_rate + Σ s·K x_position


@kernel(inline="always")
def _implicit_stiffness(K, h2, rate_h, omega_rel, reference, D, Q):
    """A joint stiffness K (inertial axes) made implicit: returns (D + h2 K,
    Q − K (rate_h omega_rel − h2 reference)), reference = C_IF position_ref (or zero)."""
    return (m3.add(D, m3.scale(h2, K)),
            m3.vsub(Q, m3.matvec(K, m3.vsub(m3.vscale(rate_h, omega_rel),
                                            m3.vscale(h2, reference)))))


@kernel(allocates=False)
def implicit_joint_blocks(limbs, model, w, terms, rate_ref, position_ref):
    """The implicit blocks of the joints of ``limbs`` (int array) (inertial axes) into ``w.D0`` (N, 6) and its torque
    ``w.tau`` (child axes) with their corrections into ``w.Q`` (N, 3) N m, inertial axes;
    terms: `ImplicitTerms`; rate_ref, position_ref (N, 3) rad/s², child axes, the references of
    the dampings and of the stiffnesses (read if ``terms.about_reference``).

    D0 = armature_k·K + armature_c·C (the joint's spring and damper); gravity_h2 > 0 adds
    gravity_h2 times the PSD part of the subtree's gravity stiffness to D0 and its
    correction to Q; with drag (drag_h > 0) the same with load_h2 for the applied loads'
    geometric stiffness (about the subtree's force-weighted centre;
    `joints.load_stiffness_magnitude`): a large drag on a light limb is a stiff "weathervane"
    spring. About references, Q gains armature_k·K position_ref + armature_c·C rate_ref and
    the stiffnesses' h2·K position_ref. After `subtree_sums`.
    """
    g = m3.vload(model.gravity)
    for k in range(limbs.shape[0]):
        i = limbs[k]
        C = m3.load(w.C_IF[i])
        b = m3.vload(w.base[i])
        w_rel = m3.vload(w.omega_rel[i])
        spring = m3.scale(terms.armature_k, m3.load(model.stiffness[i]))
        damper = m3.scale(terms.armature_c, m3.load(model.damping[i]))
        D = m3.congruence(C, m3.add(spring, damper))
        tau = m3.vload(w.tau[i])
        reference = (0.0, 0.0, 0.0)
        if terms.about_reference:
            x = m3.vload(position_ref[i])
            tau = m3.vadd(tau, m3.vadd(m3.matvec(spring, x),
                                       m3.matvec(damper, m3.vload(rate_ref[i]))))
            reference = m3.matvec(C, x)
        Q = m3.matvec(C, tau)
        if terms.gravity_h2 > 0.0:
            # the subtree's first moment about the joint, m ρ = Σ m r − m b
            moment = m3.vsub(m3.vload(w.sub_h[i]), m3.vscale(w.sub_m[i], b))
            D, Q = _implicit_stiffness(gravity_stiffness_psd(1.0, moment, g), terms.gravity_h2,
                                       terms.gravity_rate_h, w_rel, reference, D, Q)
        if terms.drag_h > 0.0 and w.sub_fw[i] > 0.0:
            # the loads' resultant F at their |F|-weighted centre ρ: (F/Σ|F|)·(Σ|F| ρ)
            moment = m3.vsub(m3.vload(w.sub_fh[i]), m3.vscale(w.sub_fw[i], b))
            F = m3.vscale(1.0 / w.sub_fw[i], m3.vload(w.sub_f[i]))
            D, Q = _implicit_stiffness(load_stiffness_magnitude(F, moment), terms.load_h2,
                                       terms.load_rate_h, w_rel, reference, D, Q)
        m3.store_sym(D, w.D0[i])
        m3.vstore(Q, w.Q[i])


@kernel(inline="always")
def drag_added_inertia(rho, Dj, g, drag_h):
    """h times one limb's drag damping Lᵀ D L (D = Dj N s/m, the drag's velocity Jacobian,
    L = [−ρ^×, 1], ρ = rho base → midpoint, m) as a spatial inertia about the base, added to
    the limb's own: blocks (−h ρ^× D ρ^×, h ρ^× D, h D), and its bias h [ρ × D g; D g]
    (gravity enters as the ground acceleration −g, which would give the added inertia a
    weight: this cancels it). Aerodynamic damping is so implicit (backward Euler, h = drag_h).
    Returns (A, B, C, p_w, p_f) as mat3 tuples."""
    rho_D = m3.hat_mul(rho, Dj)                                      # ρ^× D
    Dg = m3.matvec(Dj, g)
    return (m3.scale(-drag_h, m3.mul_hat(rho_D, rho)), m3.scale(drag_h, rho_D),
            m3.scale(drag_h, Dj), m3.vscale(drag_h, m3.cross(rho, Dg)), m3.vscale(drag_h, Dg))


@kernel(inline="always")
def _point_acceleration(model, w, i, point, share, rate_ref, position_ref):
    """The acceleration (m/s², inertial) that the recursion gives the point ``point`` of limb i
    (a_f + a_w × ρ: the base point's classical acceleration plus α × ρ) for the joint
    accelerations share·rate_ref + (1 − share)·position_ref (N, 3) rad/s², child axes:
    Σ over i and its ancestors k of c_f,k + (c_w,k + C_k x_k) × (point − b_k), the outward
    pass unrolled along one chain (``w.c_*`` of i and its ancestors already written)."""
    total = (0.0, 0.0, 0.0)
    k = i
    while k >= 0:
        x = m3.vadd(m3.vscale(share, m3.vload(rate_ref[k])),
                    m3.vscale(1.0 - share, m3.vload(position_ref[k])))
        spin = m3.vadd(m3.vload(w.c_w[k]), m3.matvec(m3.load(w.C_IF[k]), x))
        total = m3.vadd(total, m3.vadd(m3.vload(w.c_f[k]),
                                       m3.cross(spin, m3.vsub(point, m3.vload(w.base[k])))))
        k = model.parent[k]
    return total


@kernel(allocates=False)
def limb_inertias(limbs, model, w, force, torque, drag_h, about_reference, x_ref,
                  position_ref):
    """Pass 1 of RBDA Table 7.1 (independent per limb) over ``limbs`` (int array, breadth-first
    order; with drag_h > 0 and about_reference an outward pass: their parents' done first):
    each limb's spatial inertia about its
    base ``w.IA_*`` = I_i (plus an added point mass ``w.point_mass`` at ``w.point_lever``, and
    with drag_h > 0 the drag's, both by `drag_added_inertia`), its bias
    force ``w.pA_*`` = v ×* I v − f_ext and its velocity-product acceleration ``w.c_*``; and
    each limb's own terms of `subtree_sums` (its mass and first moment; with drag_h > 0 the
    applied force force (N, 3) N at base + ``w.lever``). force, torque (N, 3): the applied
    loads, N at the base and N m about it, inertial axes. After forward_kinematics.

    With drag_h > 0 and about_reference, the drag's damping is linearised about the motion
    of the joint accelerations x_ref (N, 3) rad/s², child axes: their spatial accelerations
    (outward, into ``w.acc_*``, which pass 3 overwrites) replace gravity's ground
    acceleration in the added inertia's bias, so the drag force is F − drag_h D (a_mid(x) −
    a_mid(x_ref)) (a Newton step; the velocity products cancel). The added point mass so too
    about reference, its damper's share ``w.point_rate_share`` about x_ref and its spring's
    about position_ref (`_point_acceleration`)."""
    parent = model.parent
    g = m3.vload(model.gravity)
    reference = drag_h > 0.0 and about_reference
    for k in range(limbs.shape[0]):
        i = limbs[k]
        C = m3.load(w.C_IF[i])
        om = m3.vload(w.omega[i])
        b = m3.vload(w.base[i])
        p = parent[i]
        d = (0.0, 0.0, 0.0)
        c_w = (0.0, 0.0, 0.0)
        c_f = (0.0, 0.0, 0.0)
        if p >= 0:
            w_p = m3.vload(w.omega[p])
            d = m3.vsub(b, m3.vload(w.base[p]))
            c_w = m3.cross(w_p, m3.vload(w.omega_rel[i]))
            c_f = m3.cross(w_p, m3.cross(w_p, d))
        m3.vstore(c_w, w.c_w[i])
        m3.vstore(c_f, w.c_f[i])
        m = model.mass[i]
        A = m3.congruence(C, m3.load(model.inertia_base[i]))
        mc = m3.vscale(m, m3.matvec(C, m3.vload(model.com_offset[i])))  # first moment, base
        B = m3.hat(mc)
        Cm = m3.diagonal(m)
        p_w = m3.vsub(m3.cross(om, m3.matvec(A, om)), m3.vload(torque[i]))
        p_f = m3.vsub(m3.cross(om, m3.cross(om, mc)), m3.vload(force[i]))
        w.sub_m[i] = m
        m3.vstore(m3.vadd(m3.vscale(m, b), mc), w.sub_h[i])
        if w.point_mass[i] > 0.0:   # an added point mass: L^T (m 1) L, its weight cancelled
            lever = m3.vload(w.point_lever[i])
            ground = g
            if about_reference:
                ground = m3.vsub(g, _point_acceleration(model, w, i, m3.vadd(b, lever),
                                                        w.point_rate_share[i], x_ref,
                                                        position_ref))
            dA, dB, dC, dp_w, dp_f = drag_added_inertia(
                lever, m3.diagonal(w.point_mass[i]), ground, 1.0)
            A, B, Cm = m3.add(A, dA), m3.add(B, dB), m3.add(Cm, dC)
            p_w, p_f = m3.vadd(p_w, dp_w), m3.vadd(p_f, dp_f)
        if drag_h > 0.0:
            rho = m3.vload(w.lever[i])
            ground = g
            if reference:
                # x_ref's spatial acceleration (true, no ground term), as pass 3 forms it
                a_w = m3.vadd(c_w, m3.matvec(C, m3.vload(x_ref[i])))
                a_f = c_f
                if p >= 0:
                    ap_w = m3.vload(w.acc_w[p])
                    a_w = m3.vadd(a_w, ap_w)
                    a_f = m3.vadd(a_f, m3.vadd(m3.vload(w.acc_f[p]), m3.cross(ap_w, d)))
                m3.vstore(a_w, w.acc_w[i])
                m3.vstore(a_f, w.acc_f[i])
                ground = m3.vsub(g, m3.vadd(a_f, m3.cross(a_w, rho)))
            dA, dB, dC, dp_w, dp_f = drag_added_inertia(rho, m3.load(w.drag_jacobian[i]),
                                                        ground, drag_h)
            A, B, Cm = m3.add(A, dA), m3.add(B, dB), m3.add(Cm, dC)
            p_w, p_f = m3.vadd(p_w, dp_w), m3.vadd(p_f, dp_f)
            F = m3.vload(force[i])
            weight = math.sqrt(m3.dot(F, F))
            w.sub_fw[i] = weight
            m3.vstore(m3.vscale(weight, m3.vadd(b, rho)), w.sub_fh[i])
            m3.vstore(F, w.sub_f[i])
        m3.store_sym(A, w.IA_A[i])
        m3.store(B, w.IA_B[i])
        m3.store_sym(Cm, w.IA_C[i])
        m3.vstore(p_w, w.pA_w[i])
        m3.vstore(p_f, w.pA_f[i])


@kernel
def implicit_accelerations(limbs, model, w, force, torque, armature_k, armature_c,
                           gravity_theta_h, drag_h):
    """Joint accelerations ``w.vdot`` (N, 3) rad/s², child axes, of the θ-method's linear
    system (`ImplicitTerms.theta_method` with θh = gravity_theta_h and the joints'
    armatures given): `linearised_accelerations` over ``limbs``, every limb of the tree
    (int array, breadth-first order). All zero: the plain forward dynamics with joint
    torques ``w.tau``."""
    terms = ImplicitTerms(armature_k, armature_c, gravity_theta_h * gravity_theta_h,
                          gravity_theta_h, drag_h * drag_h, drag_h, drag_h, False)
    linearised_accelerations(limbs, model, w, force, torque, terms, w.vdot, w.vdot)


@kernel(allocates=False)
def linearised_accelerations(limbs, model, w, force, torque, terms, rate_ref, position_ref):
    """Joint accelerations ``w.vdot`` (N, 3) rad/s², child axes, of the implicit step's
    linear system (`ImplicitTerms` terms; if ``terms.about_reference``, the dampings about
    rate_ref and the stiffnesses about position_ref, (N, 3) rad/s², child axes, neither
    ``w.vdot``), for a whole tree's ``limbs`` (int array, breadth-first order): Table 7.1's
    pass 1 (`limb_inertias`, with the drag's added inertia), the stages that add the
    integrator's implicit joint terms (`subtree_sums`, `implicit_joint_blocks`), then the
    recursion's passes 2 and 3 (`articulated_inward`, `articulated_outward`). force, torque
    (N, 3): applied loads, N at the base and N m about it, inertial axes. After
    forward_kinematics (and, with drag_h > 0, the drag's stage of `aero`). The step runs the
    same stages over the subtrees of a `partition.Partition` in parallel
    (`systems.articulated_dynamics`).
    """
    limb_inertias(limbs, model, w, force, torque, terms.drag_h, terms.about_reference, rate_ref,
                  position_ref)
    subtree_sums(limbs, model, w, terms.gravity_h2 > 0.0, terms.drag_h > 0.0)
    implicit_joint_blocks(limbs, model, w, terms, rate_ref, position_ref)
    articulated_inward(limbs, model, w)
    articulated_outward(limbs, model, w)


@kernel(allocates=False)
def articulated_inward(limbs, model, w):
    """RBDA Table 7.1, pass 2, in base-point coordinates, over ``limbs`` (int array,
    breadth-first order) from the last: articulated inertias IA and bias forces pA, each
    limb's added to its parent's (its children's were added before: they are among ``limbs``
    or were passed before). After pass 1 (`limb_inertias`: I_i, pA_i, c_i) and each joint's
    D0 and Q (`implicit_joint_blocks`).

    The 6×6 articulated inertia of limb i is IA = [IA_A, IA_B; IA_Bᵀ, IA_C] (3×3 blocks;
    IA_A, IA_C, D0 and D_inv symmetric, (N, 6) upper triangles, `mat3.load_sym`), its bias
    force pA = [pA_w; pA_f]; the joint's motion subspace is S = [1; 0] (rotations about the
    base), so U = IA S = [IA_A; IA_Bᵀ], D = Sᵀ U + D0 and u = Q − Sᵀ pA.
    """
    parent = model.parent
    for k in range(limbs.shape[0] - 1, -1, -1):
        i = limbs[k]
        A = m3.load_sym(w.IA_A[i])
        D_i = m3.inverse_symmetric(m3.add(m3.load_sym(w.D0[i]), A))   # D⁻¹, D = Sᵀ IA S + D0
        u_i = m3.vsub(m3.vload(w.Q[i]), m3.vload(w.pA_w[i]))
        m3.store_sym(D_i, w.D_inv[i])
        m3.vstore(u_i, w.u[i])
        p = parent[i]
        if p < 0:
            continue
        B = m3.load(w.IA_B[i])
        # Ia = IA − U D⁻¹ Uᵀ with U = [A; Bᵀ]: blocks A − A D⁻¹ A, B − A D⁻¹ B, C − Bᵀ D⁻¹ B.
        C = m3.load_sym(w.IA_C[i])
        AD = m3.mul(A, D_i)
        DB = m3.mul(D_i, B)
        Aa = m3.sub(A, m3.mul_symmetric(AD, A))
        Ba = m3.sub(B, m3.mul(AD, B))
        Ca = m3.sub(C, m3.mul_symmetric(m3.transpose(B), DB))
        # pa = pA + Ia c + U D⁻¹ u = pA + IA c + U D⁻¹ (u − Uᵀ c), Uᵀ c = A c_w + B c_f: the
        # same products as with Ia, but independent of Aa, Ba, Ca (shorter dependency chains)
        cw = m3.vload(w.c_w[i])
        cf = m3.vload(w.c_f[i])
        Uc = m3.vadd(m3.matvec(A, cw), m3.matvec(B, cf))
        x = m3.matvec(D_i, m3.vsub(u_i, Uc))
        pa_w = m3.vadd(m3.vload(w.pA_w[i]), m3.vadd(Uc, m3.matvec(A, x)))
        pa_f = m3.vadd(m3.vload(w.pA_f[i]),
                       m3.vadd(m3.vadd(m3.matvec_t(B, cw), m3.matvec(C, cf)), m3.matvec_t(B, x)))
        # Shift to the parent's base: X = [1, 0; −d^×, 1], IA_p += Xᵀ Ia X, pA_p += Xᵀ pa:
        # A'' = Aa − Ba d^× + d^× Baᵀ − d^× Ca d^×,  B'' = Ba + d^× Ca,  C'' = Ca.
        d = m3.vsub(m3.vload(w.base[i]), m3.vload(w.base[p]))
        dCa = m3.hat_mul(d, Ca)
        Ba_d = m3.mul_hat(Ba, d)             # and d^× Baᵀ = −(Ba d^×)ᵀ
        m3.add_into_sym(m3.sub(m3.sub(Aa, m3.add(Ba_d, m3.transpose(Ba_d))), m3.mul_hat(dCa, d)),
                        w.IA_A[p])
        m3.add_into(m3.add(Ba, dCa), w.IA_B[p])
        m3.add_into_sym(Ca, w.IA_C[p])
        m3.vadd_into(m3.vadd(pa_w, m3.cross(d, pa_f)), w.pA_w[p])
        m3.vadd_into(pa_f, w.pA_f[p])


@kernel(allocates=False)
def articulated_outward(limbs, model, w):
    """RBDA Table 7.1, pass 3, over ``limbs`` (int array, breadth-first order, their parents'
    accelerations known or among them): joint accelerations ``w.vdot`` (N, 3), rad/s², child
    axes, and spatial accelerations ``w.acc_*``, after pass 2 (`articulated_inward`)."""
    parent = model.parent
    g = m3.vload(model.gravity)
    for k in range(limbs.shape[0]):
        i = limbs[k]
        p = parent[i]
        a_w = m3.vload(w.c_w[i])
        a_f = m3.vload(w.c_f[i])
        if p < 0:
            a_f = m3.vsub(a_f, g)
        else:
            ap_w = m3.vload(w.acc_w[p])
            d = m3.vsub(m3.vload(w.base[i]), m3.vload(w.base[p]))
            a_w = m3.vadd(a_w, ap_w)
            a_f = m3.vadd(a_f, m3.vadd(m3.vload(w.acc_f[p]), m3.cross(ap_w, d)))
        # joint acceleration D⁻¹ (u − Uᵀ a), U = [A; Bᵀ]
        rhs = m3.vsub(m3.vload(w.u[i]), m3.vadd(m3.matvec_t(m3.load_sym(w.IA_A[i]), a_w),
                                                m3.matvec(m3.load(w.IA_B[i]), a_f)))
        joint = m3.matvec(m3.load_sym(w.D_inv[i]), rhs)
        m3.vstore(m3.vadd(a_w, joint), w.acc_w[i])
        m3.vstore(a_f, w.acc_f[i])
        m3.vstore(m3.matvec_t(m3.load(w.C_IF[i]), joint), w.vdot[i])


@kernel
def mechanical_energy(mass, com_offset, inertia_com, C_IF, base, omega, base_vel, gravity):
    """Kinetic energy T and gravity's potential V_g = −Σ m g·r_com, J (after forward_kinematics)."""
    kinetic = 0.0
    potential = 0.0
    g = m3.vload(gravity)
    for i in range(mass.shape[0]):
        C = m3.load(C_IF[i])
        w = m3.vload(omega[i])
        c = m3.matvec(C, m3.vload(com_offset[i]))               # base → centre of mass
        v_com = m3.vadd(m3.cross(w, c), m3.vload(base_vel[i]))
        w_body = m3.matvec_t(C, w)
        kinetic += 0.5 * (mass[i] * m3.dot(v_com, v_com)
                          + m3.dot(w_body, m3.matvec(m3.load(inertia_com[i]), w_body)))
        potential -= mass[i] * m3.dot(g, m3.vadd(m3.vload(base[i]), c))
    return kinetic, potential


@kernel
def subtree_gravity_moments(parent, mass, com_offset, C_IF, base, gravity, sub_m, sub_h, out):
    """Moment of each subtree's weight about its joint, N m, in the child's axes (N, 3).

    This is the generalized gravity force on each joint; accumulated inward in O(N).
    """
    n = parent.shape[0]
    g = m3.vload(gravity)
    for i in range(n):
        c = m3.matvec(m3.load(C_IF[i]), m3.vload(com_offset[i]))
        sub_m[i] = mass[i]
        m3.vstore(m3.vscale(mass[i], m3.vadd(m3.vload(base[i]), c)), sub_h[i])
    for i in range(n - 1, -1, -1):
        # Σ m (r_com − base)
        rho = m3.vsub(m3.vload(sub_h[i]), m3.vscale(sub_m[i], m3.vload(base[i])))
        m3.vstore(m3.matvec_t(m3.load(C_IF[i]), m3.cross(rho, g)), out[i])
        p = parent[i]
        if p >= 0:
            sub_m[p] += sub_m[i]
            m3.vadd_into(m3.vload(sub_h[i]), sub_h[p])
