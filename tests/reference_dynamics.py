"""Reference multibody dynamics of a tree of rigid limbs on spherical joints.

Plain Python loops over limbs and dense numpy algebra: clarity over speed. This
module is the independent reference the production articulated-body algorithm
is checked against, so it imports nothing from ``treedyn_core``'s physics; it
is written from docs/design.md §1–§2 alone.

Conventions (docs/design.md §1)
-----------------------
* N limbs numbered so that ``parent[i] < i``; ``parent[0] = -1`` is the only
  root. The root's parent is the ground (``C = 1``, ``ω = 0``).
* ``C[i]`` (3, 3) maps limb-``i`` coordinates to inertial coordinates
  (``v_I = C v_F``); z is up.
* Joint rotation ``R[i] = C[p]ᵀ C[i]`` maps child axes to parent axes (root:
  ``R = C``). Joint rate ``v[i]`` is in CHILD axes:
  ``ω_i(body) = R_iᵀ ω_p(body) + v_i`` and ``dR_i/dt = R_i v_i^×``.
* Generalized velocity: ``v`` stacked, (3N,). Generalized force ``τ_i``: a
  torque on the child about its joint, child axes, with the equal and opposite
  torque on the parent; virtual power ``Σ τ_i·v_i``.
* Equations of motion: ``M(R) v̇ + b(R, v) = τ``. ``b`` holds the
  velocity-product terms, gravity and the external loads (each with a minus).

Geometry lives in `ReferenceTree`; gravity and loads are arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

GRAVITY = np.array([0.0, 0.0, -9.81])


def skew(a):
    """(3, 3) cross-product matrix ``a^×`` with ``a^× b = a × b``."""
    return np.array([[0.0, -a[2], a[1]],
                     [a[2], 0.0, -a[0]],
                     [-a[1], a[0], 0.0]])


def rotation_exp(phi):
    """(3, 3) rotation ``exp(phi^×)`` of a rotation vector ``phi`` (3,), by scipy."""
    return Rotation.from_rotvec(np.asarray(phi, dtype=float)).as_matrix()


def rotation_log(E):
    """Rotation vector ``log(E)^∨`` (3,), ``|θ| ≤ π``, of a rotation matrix ``E``, by scipy."""
    return Rotation.from_matrix(np.asarray(E, dtype=float)).as_rotvec()


@dataclass
class ReferenceTree:
    """Static geometry and mass properties of a tree of limbs.

    Attributes
    ----------
    parent : (N,) int
        Parent index, ``parent[i] < i``; ``-1`` for the root (index 0 only).
    base_offset : (N, 3) m
        Base point of limb ``i`` relative to its parent's base point, PARENT
        axes. Root: its base point (the fixed ball joint) in the inertial frame.
    com : (N, 3) m
        Centre of mass relative to the limb's own base point, own axes.
    mass : (N,) kg
    inertia_com : (N, 3, 3) kg m²
        Rotational inertia about the centre of mass, own axes (SPD).
    """

    parent: np.ndarray
    base_offset: np.ndarray
    com: np.ndarray
    mass: np.ndarray
    inertia_com: np.ndarray

    def __post_init__(self):
        self.parent = np.asarray(self.parent, dtype=np.int64)
        self.base_offset = np.asarray(self.base_offset, dtype=float)
        self.com = np.asarray(self.com, dtype=float)
        self.mass = np.asarray(self.mass, dtype=float)
        self.inertia_com = np.asarray(self.inertia_com, dtype=float)
        n = self.parent.shape[0]
        if n < 1 or self.parent[0] != -1:
            raise ValueError("limb 0 must be the root (parent -1)")
        for i in range(1, n):
            if not 0 <= self.parent[i] < i:
                raise ValueError(f"parent[{i}] = {self.parent[i]} must be in 0..{i - 1}")
        for name, shape in (("base_offset", (n, 3)), ("com", (n, 3)), ("mass", (n,)),
                            ("inertia_com", (n, 3, 3))):
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name}: shape {getattr(self, name).shape}, expected {shape}")
        if np.any(self.mass <= 0.0):
            raise ValueError("masses must be > 0")
        for i in range(n):
            J = self.inertia_com[i]
            if not np.allclose(J, J.T, rtol=0.0, atol=1e-14 * np.abs(J).max()):
                raise ValueError(f"inertia_com[{i}] is not symmetric")
            if np.linalg.eigvalsh(J).min() <= 0.0:
                raise ValueError(f"inertia_com[{i}] is not positive definite")

    @property
    def n(self) -> int:
        """Number of limbs N."""
        return self.parent.shape[0]

    def ancestors(self, i):
        """Limb ``i`` and its ancestors up to the root, in that order."""
        chain = []
        while i >= 0:
            chain.append(i)
            i = int(self.parent[i])
        return chain


def _loads(tree, force, torque):
    zeros = np.zeros((tree.n, 3))
    force = zeros if force is None else np.asarray(force, dtype=float).reshape(tree.n, 3)
    torque = zeros if torque is None else np.asarray(torque, dtype=float).reshape(tree.n, 3)
    return force, torque


def kinematics(tree, R, v):
    """Positions and velocities of every limb (outward recursion).

    Parameters
    ----------
    tree : ReferenceTree
    R : (N, 3, 3) joint rotations, child axes → parent axes (root: → inertial).
    v : (N, 3) or (3N,) rad/s, joint rates in child axes.

    Returns
    -------
    dict with
        ``C`` (N, 3, 3) limb → inertial; ``base`` (N, 3) m, base points,
        inertial; ``com_world`` (N, 3) m; ``omega_body`` (N, 3) rad/s, own
        axes; ``omega_world`` (N, 3) rad/s, inertial; ``v_base`` (N, 3) m/s,
        velocity of the base points; ``v_com`` (N, 3) m/s, velocity of the
        centres of mass, inertial.
    """
    n = tree.n
    R = np.asarray(R, dtype=float)
    v = np.asarray(v, dtype=float).reshape(n, 3)
    C = np.empty((n, 3, 3))
    base = np.empty((n, 3))
    omega_body = np.empty((n, 3))
    omega_world = np.empty((n, 3))
    v_base = np.empty((n, 3))
    com_world = np.empty((n, 3))
    v_com = np.empty((n, 3))
    for i in range(n):
        p = tree.parent[i]
        if p < 0:
            C[i] = R[i]
            base[i] = tree.base_offset[i]
            v_base[i] = 0.0
            omega_body[i] = v[i]
        else:
            C[i] = C[p] @ R[i]
            r = C[p] @ tree.base_offset[i]
            base[i] = base[p] + r
            v_base[i] = v_base[p] + np.cross(omega_world[p], r)
            omega_body[i] = R[i].T @ omega_body[p] + v[i]
        omega_world[i] = C[i] @ omega_body[i]
        rho = C[i] @ tree.com[i]
        com_world[i] = base[i] + rho
        v_com[i] = v_base[i] + np.cross(omega_world[i], rho)
    return {"C": C, "base": base, "com_world": com_world, "omega_body": omega_body,
            "omega_world": omega_world, "v_base": v_base, "v_com": v_com}


def jacobians(tree, R):
    """Jacobians of every limb's angular velocity and COM velocity w.r.t. ``v``.

    Joint ``j`` with rate ``v_j`` (child axes) turns its whole subtree about its
    base point with angular velocity ``C_j v_j`` (inertial), so for every limb
    ``i`` below or at ``j``: ``∂ω_i/∂v_j = C_j`` and
    ``∂v_com_i/∂v_j = -(com_i - base_j)^× C_j``.

    Returns
    -------
    J_omega : (N, 3, 3N) maps stacked ``v`` to ``omega_world`` of each limb.
    J_com : (N, 3, 3N) maps stacked ``v`` to ``v_com`` of each limb.
    """
    n = tree.n
    kin = kinematics(tree, R, np.zeros((n, 3)))
    C, base, com_world = kin["C"], kin["base"], kin["com_world"]
    J_omega = np.zeros((n, 3, 3 * n))
    J_com = np.zeros((n, 3, 3 * n))
    for i in range(n):
        for j in tree.ancestors(i):
            J_omega[i, :, 3 * j:3 * j + 3] = C[j]
            J_com[i, :, 3 * j:3 * j + 3] = -skew(com_world[i] - base[j]) @ C[j]
    return J_omega, J_com


def world_inertias(tree, R):
    """(N, 3, 3) kg m², inertia about each COM in inertial axes, ``C I_com Cᵀ``."""
    C = kinematics(tree, R, np.zeros((tree.n, 3)))["C"]
    return np.einsum("nij,njk,nlk->nil", C, tree.inertia_com, C)


def mass_matrix(tree, R):
    """(3N, 3N) joint-space mass matrix, ``M = Σ_i J_iᵀ diag(I_world_i, m_i 1) J_i``.

    The kinetic energy is ``½ vᵀ M v`` with ``v`` the stacked joint rates.
    """
    n = tree.n
    J_omega, J_com = jacobians(tree, R)
    I_world = world_inertias(tree, R)
    # The sum over limbs as one product of the stacked (3N, 3N) Jacobians.
    I_J = np.einsum("nij,njk->nik", I_world, J_omega).reshape(3 * n, 3 * n)
    m_J = (tree.mass[:, None, None] * J_com).reshape(3 * n, 3 * n)
    return J_omega.reshape(3 * n, 3 * n).T @ I_J + J_com.reshape(3 * n, 3 * n).T @ m_J


def mass_matrix_crba(tree, R):
    """(3N, 3N) joint-space mass matrix by the composite-rigid-body algorithm.

    RBDA §6.2, with every spatial quantity in inertial coordinates about the
    inertial origin O (so no coordinate transforms are needed): a body's
    spatial inertia is ``[[Ī + m c^× c^×ᵀ, m c^×], [m c^×ᵀ, m 1]]`` with ``c``
    its COM, and joint ``j``'s motion subspace is ``S_j = [C_j; base_j^× C_j]``
    (angular velocity; velocity of the body point at O). Used to cross-check
    `mass_matrix`.
    """
    n = tree.n
    kin = kinematics(tree, R, np.zeros((n, 3)))
    C, base, c = kin["C"], kin["base"], kin["com_world"]
    I_world = world_inertias(tree, R)
    Ic = np.zeros((n, 6, 6))
    S = np.zeros((n, 6, 3))
    for i in range(n):
        cx = skew(c[i])
        m = tree.mass[i]
        Ic[i, :3, :3] = I_world[i] + m * cx @ cx.T
        Ic[i, :3, 3:] = m * cx
        Ic[i, 3:, :3] = m * cx.T
        Ic[i, 3:, 3:] = m * np.eye(3)
        S[i, :3] = C[i]
        S[i, 3:] = skew(base[i]) @ C[i]
    for i in range(n - 1, 0, -1):
        Ic[tree.parent[i]] += Ic[i]
    H = np.zeros((3 * n, 3 * n))
    for i in range(n):
        F = Ic[i] @ S[i]
        for j in tree.ancestors(i):
            block = F.T @ S[j]
            H[3 * i:3 * i + 3, 3 * j:3 * j + 3] = block
            H[3 * j:3 * j + 3, 3 * i:3 * i + 3] = block.T
    return H


def inverse_dynamics(tree, R, v, vdot, gravity=GRAVITY, force=None, torque=None):
    """(3N,) joint torques ``τ = M v̇ + b`` by recursive Newton–Euler (RBDA §5.3).

    Written with plain 3-vectors in inertial coordinates: outward pass for the
    angular accelerations ``α`` and the base-point and COM accelerations, each
    body's Newton–Euler force and moment about its COM, inward pass summing
    force and moment about each joint's base point, projected on the joint's
    three rotational DOF in child axes (``τ_i = C_iᵀ N_i``).

    The joint rate is in child axes, so its frame turns with the child:
    ``d(C_i v_i)/dt = C_i v̇_i + ω_i × C_i v_i = C_i v̇_i + ω_p × C_i v_i``.

    Parameters
    ----------
    R : (N, 3, 3) joint rotations, child → parent axes.
    v, vdot : (N, 3) or (3N,) joint rates and their time derivatives, child axes.
    gravity : (3,) m/s², inertial.
    force : (N, 3) N, inertial, applied at each COM; None: zero.
    torque : (N, 3) N m, inertial; None: zero.
    """
    n = tree.n
    v = np.asarray(v, dtype=float).reshape(n, 3)
    vdot = np.asarray(vdot, dtype=float).reshape(n, 3)
    g = np.asarray(gravity, dtype=float)
    force, torque = _loads(tree, force, torque)
    kin = kinematics(tree, R, v)
    C, base, com_world, omega = kin["C"], kin["base"], kin["com_world"], kin["omega_world"]
    I_world = world_inertias(tree, R)

    alpha = np.zeros((n, 3))
    a_base = np.zeros((n, 3))
    a_com = np.zeros((n, 3))
    for i in range(n):
        p = tree.parent[i]
        rate = C[i] @ v[i]
        if p < 0:
            alpha[i] = C[i] @ vdot[i]
            a_base[i] = 0.0
        else:
            alpha[i] = alpha[p] + C[i] @ vdot[i] + np.cross(omega[p], rate)
            r = base[i] - base[p]
            a_base[i] = a_base[p] + np.cross(alpha[p], r) + np.cross(omega[p], np.cross(omega[p], r))
        rho = com_world[i] - base[i]
        a_com[i] = a_base[i] + np.cross(alpha[i], rho) + np.cross(omega[i], np.cross(omega[i], rho))

    # Force and moment about the COM the body needs beyond gravity and the loads.
    f_body = tree.mass[:, None] * (a_com - g) - force
    n_body = np.empty((n, 3))
    for i in range(n):
        n_body[i] = I_world[i] @ alpha[i] + np.cross(omega[i], I_world[i] @ omega[i]) - torque[i]

    # Inward: force and moment (about base_i) that joint i transmits to its subtree.
    f_joint = np.zeros((n, 3))
    n_joint = np.zeros((n, 3))
    tau = np.zeros((n, 3))
    for i in range(n - 1, -1, -1):
        f_joint[i] += f_body[i]
        n_joint[i] += n_body[i] + np.cross(com_world[i] - base[i], f_body[i])
        tau[i] = C[i].T @ n_joint[i]
        p = tree.parent[i]
        if p >= 0:
            f_joint[p] += f_joint[i]
            n_joint[p] += n_joint[i] + np.cross(base[i] - base[p], f_joint[i])
    return tau.reshape(-1)


def bias(tree, R, v, gravity=GRAVITY, force=None, torque=None):
    """(3N,) bias ``b`` of ``M v̇ + b = τ``: RNEA with ``v̇ = 0``.

    Velocity-product terms, minus the generalized gravity force, minus the
    generalized external loads (``force`` at the COMs, ``torque``; both (N, 3),
    inertial).
    """
    return inverse_dynamics(tree, R, v, np.zeros((tree.n, 3)), gravity, force, torque)


def forward_dynamics(tree, R, v, tau, gravity=GRAVITY, force=None, torque=None):
    """(3N,) joint accelerations ``v̇ = M⁻¹ (τ − b)`` (dense solve), child axes."""
    M = mass_matrix(tree, R)
    rhs = np.asarray(tau, dtype=float).reshape(-1) - bias(tree, R, v, gravity, force, torque)
    return np.linalg.solve(M, rhs)


def residual(tree, R, v, vdot, tau, gravity=GRAVITY, force=None, torque=None):
    """(3N,) ``M v̇ + b − τ`` for a candidate ``v̇`` (e.g. from the production ABA)."""
    M = mass_matrix(tree, R)
    b = bias(tree, R, v, gravity, force, torque)
    return M @ np.asarray(vdot, dtype=float).reshape(-1) + b - np.asarray(tau, dtype=float).reshape(-1)


def backward_error(tree, R, v, vdot, tau, gravity=GRAVITY, force=None, torque=None):
    """Normwise backward error of a candidate ``v̇``.

    ``‖M v̇ + b − τ‖∞ / (‖M‖∞ ‖v̇‖∞ + ‖b‖∞ + ‖τ‖∞)``: the relative size of
    the smallest perturbation of the data that makes ``v̇`` exact. A backward
    stable solver gives a few ulps (≈ 1e-15), whatever the conditioning of M.
    """
    M = mass_matrix(tree, R)
    b = bias(tree, R, v, gravity, force, torque)
    vdot = np.asarray(vdot, dtype=float).reshape(-1)
    tau = np.asarray(tau, dtype=float).reshape(-1)
    r = M @ vdot + b - tau
    scale = (np.linalg.norm(M, np.inf) * np.linalg.norm(vdot, np.inf)
             + np.linalg.norm(b, np.inf) + np.linalg.norm(tau, np.inf))
    return np.linalg.norm(r, np.inf) / scale if scale > 0 else np.linalg.norm(r, np.inf)


def energies(tree, R, v, gravity=GRAVITY):
    """Kinetic and gravitational energy (J).

    ``T = Σ ½ m |v_com|² + ½ ω_bodyᵀ I_com ω_body``,
    ``V_gravity = −Σ m g · com_world``.
    """
    kin = kinematics(tree, R, v)
    g = np.asarray(gravity, dtype=float)
    T = 0.0
    V = 0.0
    for i in range(tree.n):
        w = kin["omega_body"][i]
        T += 0.5 * tree.mass[i] * kin["v_com"][i] @ kin["v_com"][i] + 0.5 * w @ tree.inertia_com[i] @ w
        V -= tree.mass[i] * g @ kin["com_world"][i]
    return T, V


def external_power(tree, R, v, force=None, torque=None):
    """Power (W) of the external loads: ``Σ force·v_com + torque·ω_world``."""
    force, torque = _loads(tree, force, torque)
    kin = kinematics(tree, R, v)
    return float(np.sum(force * kin["v_com"]) + np.sum(torque * kin["omega_world"]))


# --- joint springs (docs/design.md §2) ---------------------------------------------------------

def _stiffness_matrix(K):
    K = np.asarray(K, dtype=float)
    if K.ndim == 0:
        return K * np.eye(3)
    if K.shape == (3,):
        return np.diag(K)
    return K


def spring_potential(theta, K):
    """Spring energy ``V = ½ θᵀ K θ`` (J).

    theta : (3,) rad, rotation vector of the error attitude, child axes.
    K : (3, 3), (3,) diagonal or scalar isotropic, N m/rad.
    """
    theta = np.asarray(theta, dtype=float)
    return 0.5 * theta @ _stiffness_matrix(K) @ theta


def spring_torque_fd(R, C_sp, K, eps=1e-4):
    """Generalized spring torque ``τ = −∂V/∂ε``, ``R → R exp(ε^×)``, by finite differences.

    ``E = C_spᵀ R``, ``θ = log(E)^∨`` (scipy `Rotation`), ``V = ½ θᵀ K θ``. The
    perturbation is on the right (child axes), so ``τ`` is the torque on the
    child in child axes, the parent receiving the opposite (docs/design.md §2).

    Central differences with steps ``eps`` and ``eps/2``, Richardson-extrapolated:
    truncation O(eps⁴) ≈ 1e-16, rounding ≈ 1e-16·|K|/eps ≈ 1e-12·|K|. Trust it
    to a relative 1e-7 (conservative), away from ``|θ| = π`` where the log is
    discontinuous.

    Parameters
    ----------
    R : (3, 3) or (N, 3, 3) joint rotation, child → parent axes.
    C_sp : same shape, spring rest joint rotation (child rest → parent axes).
    K : (3, 3), (3,) diagonal or scalar isotropic, N m/rad; batched: one per
        joint, (N, 3, 3), (N, 3) or (N,).
    eps : float, rad.

    Returns
    -------
    (3,) or (N, 3) N m, child axes.
    """
    R = np.asarray(R, dtype=float)
    C_sp = np.asarray(C_sp, dtype=float)
    if R.ndim == 3:
        K = np.asarray(K, dtype=float)
        if K.shape[:1] != R.shape[:1]:
            raise ValueError(f"batched K needs a leading axis of {R.shape[0]}, got {K.shape}")
        return np.array([spring_torque_fd(R[i], C_sp[i], K[i], eps) for i in range(R.shape[0])])
    Km = _stiffness_matrix(K)

    def energy(eps_vec):
        theta = rotation_log(C_sp.T @ R @ rotation_exp(eps_vec))
        return spring_potential(theta, Km)

    def central(h):
        grad = np.empty(3)
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            grad[k] = (energy(e) - energy(-e)) / (2.0 * h)
        return grad

    grad = (4.0 * central(eps / 2.0) - central(eps)) / 3.0
    return -grad
