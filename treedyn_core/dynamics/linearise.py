"""The tree linearised about a static equilibrium: M, K, C in joint coordinates (docs/design.md §7).

Coordinates are the simulator's: joint i's rotation (child → parent axes) is
perturbed as ``R_i → R_i exp(ε_i^×)``, ε_i in the child's axes, and its rate is
the joint rate ``v_i`` (child axes). About a static equilibrium
``M ε̈ + C ε̇ + K ε = 0`` with

- ``M``: the joint-space mass matrix, by the composite-rigid-body algorithm
  (RBDA §6.2) about each joint's base point;
- ``K = K_spring + K_gravity``: the exact Hessian of the potential in these
  coordinates. ``K_spring`` is block-diagonal, the second variation of
  ``½ θᵀ(sK)θ`` (s the stiffness scale), derived in closed form below (at
  θ ≠ 0 it is not ``sK``); ``K_gravity`` is the Hessian of
  ``V_g = −Σ m g·r_com``, nonzero for ancestor/descendant pairs only;
- ``C``: block-diagonal, the damping scale times each joint's damper (it acts
  on the relative rate ``v``).

Only blocks of ancestor/descendant joint pairs are nonzero in M and K
("branch-induced sparsity", RBDA §6.5), and each such block factors as
``U_jᵀ W_i`` through 6-vectors (joint j's motion subspace at the inertial
origin, and the composite body of i's subtree): `lowrank_matrices` keeps M and
K as `tree_lowrank.LowRankTreeMatrix`, O(N) numbers whatever the tree's depth,
with O(N) products, solves and negative-eigenvalue counts (Sylvester's law of
inertia): the linear algebra of the Newton statics, of `modes` and of `pull`.
`BlockTreeMatrix` holds the same matrices block by block in the pair pattern,
Σ (depth + 1) blocks (N²/2 on a long chain): assembled sparse matrices for small
trees, and an independent formulation for the tests.

Every array here is in the tree's breadth-first order; a joint's three
coordinates are the consecutive entries ``3i, 3i+1, 3i+2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

from ..errors import TreedynError
from ..model.tree import pose_by_levels
from ..numerics import mat3 as m3
from ..numerics import so3
from ..numerics.kernel import kernel
from ..numerics.tree_lowrank import LowRankTreeMatrix
from .articulated import subtree_gravity_moments
from .joints import joint_torques

# -- the pattern of ancestor/descendant pairs ----------------------------------------------------


def pair_pattern(parent: np.ndarray, depth: np.ndarray):
    """Ancestor/descendant joint pairs of a breadth-first tree.

    Returns ``(pair_start (N + 1,), pair_node (P,), pair_anc (P,))``: the pairs of joint i
    are ``pair_start[i] + k`` for k = 0 … depth[i], pairing i with its k-th ancestor
    ``pair_anc`` (k = 0: i itself). P = Σ (depth + 1).
    """
    n = parent.shape[0]
    pair_start = np.zeros(n + 1, dtype=np.int64)
    pair_start[1:] = np.cumsum(depth + 1)
    pair_node = np.repeat(np.arange(n, dtype=np.int64), depth + 1)
    pair_anc = np.empty(pair_start[-1], dtype=np.int64)
    _fill_ancestors(parent, pair_start, pair_anc)
    return pair_start, pair_node, pair_anc


@kernel
def _fill_ancestors(parent, pair_start, pair_anc):
    for i in range(parent.shape[0]):
        a = i
        for p in range(pair_start[i], pair_start[i + 1]):
            pair_anc[p] = a
            a = parent[a]


class BlockTreeMatrix:
    """A symmetric (3N, 3N) matrix whose only nonzero 3×3 blocks join a joint and an ancestor,
    kept block by block (assembled sparse matrices; see the module's docstring).

    ``blocks[p]`` (P, 3, 3) is the block of rows ``pair_anc[p]``, columns ``pair_node[p]``;
    the transposed block is implied. Diagonal blocks (k = 0) must be symmetric.
    """

    def __init__(self, pattern, blocks: np.ndarray):
        self.pattern = pattern
        self.blocks = blocks

    def plus_diagonal(self, diagonal: np.ndarray) -> "BlockTreeMatrix":
        """This matrix plus a block-diagonal one (N, 3, 3)."""
        blocks = self.blocks.copy()
        blocks[self.pattern[0][:-1]] += diagonal
        return BlockTreeMatrix(self.pattern, blocks)

    def to_sparse(self) -> scipy.sparse.csc_matrix:
        """The full symmetric matrix, scipy.sparse CSC."""
        _, node, anc = self.pattern
        rows = 3 * anc[:, None, None] + np.arange(3)[None, :, None]
        cols = 3 * node[:, None, None] + np.arange(3)[None, None, :]
        rows, cols = np.broadcast_arrays(rows, cols)
        off = node != anc
        r = np.concatenate([rows.ravel(), cols[off].ravel()])
        c = np.concatenate([cols.ravel(), rows[off].ravel()])
        data = np.concatenate([self.blocks.ravel(), self.blocks[off].ravel()])
        n = 3 * (self.pattern[0].shape[0] - 1)
        return scipy.sparse.csc_matrix((data, (r, c)), shape=(n, n))

    def to_dense(self) -> np.ndarray:
        """The full symmetric matrix as a dense (3N, 3N) array (small trees)."""
        return self.to_sparse().toarray()


# -- kinematics and composite bodies -------------------------------------------------------------


@kernel
def composite_bodies(parent, mass, com_offset, inertia_com, C_IF, base, sub_m, sub_h, sub_J):
    """Inward pass: each joint's subtree as one rigid body about the joint (its base point).

    sub_m (N,) kg; sub_h (N, 3) kg m, Σ m (r_com − base); sub_J (N, 3, 3) kg m², rotational
    inertia about the base; inertial axes. Shifting a child's body by s = base_child −
    base_parent: h' = h + m s, J' = J + 2(h·s) 1 − h sᵀ − s hᵀ + m (|s|² 1 − s sᵀ).
    """
    n = parent.shape[0]
    for i in range(n):
        C = m3.load(C_IF[i])
        rho = m3.matvec(C, m3.vload(com_offset[i]))
        m = mass[i]
        sub_m[i] = m
        m3.vstore(m3.vscale(m, rho), sub_h[i])
        # J = C I_com Cᵀ + m (|ρ|² 1 − ρ ρᵀ)
        m3.store(m3.add(m3.congruence(C, m3.load(inertia_com[i])),
                        m3.scale(m, m3.sub(m3.diagonal(m3.dot(rho, rho)), m3.outer(rho, rho)))),
                 sub_J[i])
    for i in range(n - 1, 0, -1):
        p = parent[i]
        s = m3.vsub(m3.vload(base[i]), m3.vload(base[p]))
        h = m3.vload(sub_h[i])
        m = sub_m[i]
        h_s = m3.outer(h, s)
        shift = m3.add(m3.add(h_s, m3.transpose(h_s)), m3.scale(m, m3.outer(s, s)))
        m3.add_into(m3.add(m3.sub(m3.load(sub_J[i]), shift),
                           m3.diagonal(2.0 * m3.dot(h, s) + m * m3.dot(s, s))), sub_J[p])
        sub_m[p] += m
        m3.vadd_into(m3.vadd(h, m3.vscale(m, s)), sub_h[p])


@kernel(inline="always")
def _to_joint_axes(X, C_j, C_i, diagonal, out):
    """out = C_jᵀ X C_i (a block from inertial to the joints' axes), symmetrised on the
    diagonal (where round-off would otherwise leave it a few ulps from symmetric)."""
    B = m3.mul(m3.transpose(m3.load(C_j)), m3.mul(X, m3.load(C_i)))
    if diagonal:
        B = m3.scale(0.5, m3.add(B, m3.transpose(B)))
    m3.store(B, out)


@kernel
def _mass_blocks(pair_node, pair_anc, C_IF, base, sub_h, sub_J, out):
    """CRBA (RBDA §6.2) about the joints: M[j, i] = C_jᵀ (J_i − d^× h_i^×) C_i, j an ancestor of
    i (or i), d = base_i − base_j, J_i, h_i the composite body of i's subtree about base_i."""
    for p in range(pair_node.shape[0]):
        i = pair_node[p]
        j = pair_anc[p]
        h = m3.vload(sub_h[i])
        d = m3.vsub(m3.vload(base[i]), m3.vload(base[j]))
        # −d^× h^× = (d·h) 1 − h dᵀ
        X = m3.add(m3.sub(m3.load(sub_J[i]), m3.outer(h, d)), m3.diagonal(m3.dot(d, h)))
        _to_joint_axes(X, C_IF[j], C_IF[i], i == j, out[p])


@kernel
def _gravity_blocks(pair_node, pair_anc, C_IF, sub_h, g, out):
    """Hessian of V_g = −Σ m g·r_com: turning joint j by w_j = C_j ε_j (inertial axes) moves the
    points of i's subtree by w_j × (w_i × (r − base_i)) at second order, so
    K_g[j, i] = C_jᵀ (−g^× h_i^×) C_i = C_jᵀ ((g·h_i) 1 − h_i gᵀ) C_i for j a strict ancestor of
    i, and its symmetric part on the diagonal."""
    for p in range(pair_node.shape[0]):
        i = pair_node[p]
        j = pair_anc[p]
        h = m3.vload(sub_h[i])
        h_g = m3.outer(h, m3.vload(g))
        if i == j:
            h_g = m3.scale(0.5, m3.add(h_g, m3.transpose(h_g)))
        _to_joint_axes(m3.sub(m3.diagonal(m3.dot(g, h)), h_g), C_IF[j], C_IF[i], i == j, out[p])


# -- the spring's exact second variation ---------------------------------------------------------

# |B_2k| / (2k)! for k = 1 … 7: b(φ) = Σ |B_2k| φ^(2k−2) / (2k)!  (Bernoulli numbers).
_B_SERIES = np.array([1 / 6, 1 / 30, 1 / 42, 1 / 30, 5 / 66, 691 / 2730, 7 / 6]) / np.array(
    [2.0, 24.0, 720.0, 40320.0, 3628800.0, 479001600.0, 87178291200.0])
# Below this angle (rad) b and b'/φ come from the series: the closed forms cancel (b' loses
# ~4 digits at 0.5 rad), the series' next term is below 1e-15 relative there.
_SERIES_ANGLE = 0.5


def _b_and_derivative(phi: np.ndarray):
    """b(φ) = 1/φ² − (1 + cos φ)/(2φ sin φ) of J_r⁻¹ = 1 + ½θ^× + b θ^×θ^×, and b'(φ)/φ."""
    b = np.empty_like(phi)
    bp = np.empty_like(phi)
    small = phi < _SERIES_ANGLE
    x = phi[small] ** 2
    b[small] = np.polyval(_B_SERIES[::-1], x)
    # b'/φ = Σ_{k≥2} (2k − 2) c_k φ^(2k−4)
    coef = (2.0 * np.arange(1, 7)) * _B_SERIES[1:]
    bp[small] = np.polyval(coef[::-1], x)
    f = phi[~small]
    half_cot = 1.0 / np.tan(0.5 * f)
    b[~small] = 1.0 / f**2 - half_cot / (2.0 * f)
    bp[~small] = (-2.0 / f**3 + 1.0 / (4.0 * f * np.sin(0.5 * f) ** 2)
                  + half_cot / (2.0 * f**2)) / f
    return b, bp


def spring_hessians(R_rel: np.ndarray, spring_C_rel: np.ndarray, stiffness: np.ndarray,
                    k_scale: float) -> np.ndarray:
    """(N, 3, 3) N m/rad: the exact second variation of each joint's ½ θᵀ(sK)θ, child axes.

    With E = C_springᵀ R exp(ε^×) and θ = log(E)^∨, the gradient at the perturbed point in
    its own right-trivialisation is g(ε) = J_r⁻ᵀ(θ) sKθ (= −τ of `joints.spring_torque`), and
    dθ/dε = J_r⁻¹(θ) at ε = 0. Then dg/dε = H + ½ g^× (H the Hessian in ε, g^× the
    derivative of the trivialisation), so H = sym[(∂_θ(J_r⁻ᵀ(θ) y)|_(y = sKθ) + J_r⁻ᵀ sK) J_r⁻¹]
    with J_r⁻ᵀ(θ) y = y − ½ θ×y + b(φ) θ×(θ×y), whose θ-derivative at fixed y is
    ½ y^× + b (θ yᵀ + (θ·y) 1 − 2 y θᵀ) + (b'(φ)/φ) (θ×(θ×y)) θᵀ. At θ = 0 this is sK.
    """
    E = np.einsum("nji,njk->nik", spring_C_rel, R_rel)
    theta = so3.log_many(E)
    Ks = k_scale * stiffness
    y = np.einsum("nij,nj->ni", Ks, theta)
    phi = np.linalg.norm(theta, axis=1)
    b, bp = _b_and_derivative(phi)
    T = so3.hat_many(theta)
    T2 = T @ T
    eye = np.eye(3)
    Jr_inv = eye + 0.5 * T + b[:, None, None] * T2
    Jr_invT = eye - 0.5 * T + b[:, None, None] * T2
    tty = np.cross(theta, np.cross(theta, y))
    ty = np.einsum("ni,ni->n", theta, y)
    D = (0.5 * so3.hat_many(y)
         + b[:, None, None] * (np.einsum("ni,nj->nij", theta, y) + ty[:, None, None] * eye
                               - 2.0 * np.einsum("ni,nj->nij", y, theta))
         + bp[:, None, None] * np.einsum("ni,nj->nij", tty, theta))
    G = (D + Jr_invT @ Ks) @ Jr_inv
    return 0.5 * (G + np.transpose(G, (0, 2, 1)))


# -- the model about a configuration -------------------------------------------------------------


class Configuration:
    """The tree's static model (arrays of a `Simulation`) at joint rotations R_rel (N, 3, 3),
    child → parent axes, under `gravity` (m/s², default the simulation's)."""

    def __init__(self, sim, R_rel: np.ndarray, gravity: np.ndarray | None = None):
        tree = sim.tree
        self.sim = sim
        self.tree = tree
        self.R_rel = np.ascontiguousarray(R_rel, dtype=float)
        self.gravity = np.asarray(sim.gravity if gravity is None else gravity, dtype=float)
        # limb → inertial orientations (N, 3, 3) and base points (N, 3) m
        self.C_IF, self.base = pose_by_levels(tree.parent, tree.level_start, self.R_rel,
                                              tree.base_offset)

    def generalized_forces(self) -> np.ndarray:
        """(N, 3) N m, child axes: spring torques plus the moments of the subtrees' weights
        about their joints (= −∂V/∂ε); zero at a static equilibrium."""
        t, sim, n = self.tree, self.sim, self.tree.n
        tau = np.empty((n, 3))
        # the springs set (`sim.spring_C_rel`), not those of a stiffness change easing in
        joint_torques(np.arange(n), so3.quats_from_matrices(self.R_rel), np.zeros((n, 3)),
                      so3.quats_from_matrices(sim.spring_C_rel),
                      t.stiffness, t.damping, sim.stiffness_scale, 0.0, 0.0, np.empty((n, 3)), tau)
        G = np.empty((n, 3))
        subtree_gravity_moments(t.parent, t.mass, t.com_offset, self.C_IF, self.base,
                                self.gravity, np.empty(n), np.empty((n, 3)), G)
        return tau + G

    def composite(self):
        """The composite bodies of `composite_bodies`: (sub_m, sub_h, sub_J), inertial axes."""
        t, n = self.tree, self.tree.n
        sub_m, sub_h, sub_J = np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3))
        composite_bodies(t.parent, t.mass, t.com_offset, t.inertia_com, self.C_IF, self.base,
                         sub_m, sub_h, sub_J)
        return sub_m, sub_h, sub_J


def tree_pattern(tree):
    return pair_pattern(tree.parent, tree.depth)


def _diagonal_pattern(n: int):
    node = np.arange(n, dtype=np.int64)
    return np.arange(n + 1, dtype=np.int64), node, node


def lowrank_matrices(config: Configuration):
    """(M, K_gravity) as `LowRankTreeMatrix`es about the joints' base points, O(N) memory
    (docs/design.md §7).

    With U_j = [C_j; 0] (joint j's rotation as a spatial motion at its base point) and the
    motion shift to base_i, ``[w; v] → [w; v − d^× w]`` (d = base_i − base_j), the blocks of
    `_mass_blocks` and `_gravity_blocks` for j a strict ancestor of i are U_jᵀ X_jiᵀ W_i:
    the force W_i at base_i, moved back to base_j, ``[n + d^× F; F]``, then its moment taken
    along C_j. M: W_i = [J_i C_i; −h_i^× C_i] (moment J_i C_i − d^× h_i^× C_i);
    K_gravity: W_i = [−g^× h_i^× C_i; 0] (`dead_load_stiffness`). The diagonal blocks are
    those of the kernels.
    """
    tree, n = config.tree, config.tree.n
    _, sub_h, sub_J = config.composite()
    C, base = config.C_IF, config.base
    h_hat = so3.hat_many(sub_h)
    W_M = np.concatenate([sub_J @ C, -h_hat @ C], axis=1)
    diagonal = _diagonal_pattern(n)
    D_M = np.empty((n, 3, 3))
    _mass_blocks(diagonal[1], diagonal[2], C, base, sub_h, sub_J, D_M)
    return (LowRankTreeMatrix(tree.parent, _base_offsets(config), D_M, _joint_motions(config),
                              W_M),
            dead_load_stiffness(config, sub_h, config.gravity))


def dead_load_stiffness(config: Configuration, moment: np.ndarray,
                        load: np.ndarray) -> LowRankTreeMatrix:
    """The stiffness (N m/rad) of loads of fixed direction and size, the exact Hessian of their
    potential in the joint coordinates, as a `LowRankTreeMatrix`: gravity's with ``moment``
    (N, 3) the subtrees' Σ m (r − base) (kg m) and ``load`` g (m/s²), or any dead load with
    weights w along ``load`` and ``moment`` Σ w (r − base)."""
    n = config.tree.n
    zero = np.zeros((n, 3, 3))
    load_hat = so3.hat_many(np.asarray(load, dtype=float)[None])[0]
    W = np.concatenate([-(load_hat @ so3.hat_many(moment)) @ config.C_IF, zero], axis=1)
    diagonal = _diagonal_pattern(n)
    D = np.empty((n, 3, 3))
    _gravity_blocks(diagonal[1], diagonal[2], config.C_IF, moment, load, D)
    return LowRankTreeMatrix(config.tree.parent, _base_offsets(config), D,
                             _joint_motions(config), W)


def _joint_motions(config: Configuration) -> np.ndarray:
    """(N, 6, 3) U_j = [C_j; 0], each joint's rotations as spatial motions at its base."""
    return np.concatenate([config.C_IF, np.zeros_like(config.C_IF)], axis=1)


def _base_offsets(config: Configuration) -> np.ndarray:
    """(N, 3) m, each joint's base point minus its parent's (the root's: unused)."""
    return config.base - config.base[np.maximum(config.tree.parent, 0)]


def mass_matrix(config: Configuration, pattern=None) -> BlockTreeMatrix:
    """Joint-space mass matrix M (kg m²), ½ vᵀ M v the kinetic energy."""
    pattern = pattern or tree_pattern(config.tree)
    _, sub_h, sub_J = config.composite()
    blocks = np.empty((pattern[1].shape[0], 3, 3))
    _mass_blocks(pattern[1], pattern[2], config.C_IF, config.base, sub_h, sub_J, blocks)
    return BlockTreeMatrix(pattern, blocks)


def gravity_stiffness(config: Configuration, pattern=None) -> BlockTreeMatrix:
    """Gravity's geometric stiffness (N m/rad): the exact Hessian of V_g in the joint
    coordinates (negative where gravity destabilises: an upright tree)."""
    pattern = pattern or tree_pattern(config.tree)
    _, sub_h, _ = config.composite()
    blocks = np.empty((pattern[1].shape[0], 3, 3))
    _gravity_blocks(pattern[1], pattern[2], config.C_IF, sub_h, config.gravity, blocks)
    return BlockTreeMatrix(pattern, blocks)


def stiffness_matrix(config: Configuration, pattern=None) -> BlockTreeMatrix:
    """K = K_gravity + K_spring (block-diagonal exact spring Hessians), N m/rad, in the pair
    pattern."""
    return gravity_stiffness(config, pattern).plus_diagonal(_spring_hessians(config))


def _spring_hessians(config: Configuration) -> np.ndarray:
    sim = config.sim
    return spring_hessians(config.R_rel, sim.spring_C_rel, config.tree.stiffness,
                           sim.stiffness_scale)


def _tangent_stiffness(config: Configuration) -> LowRankTreeMatrix:
    """K about `config` in the low-rank form: the tangent of Newton's method."""
    return lowrank_matrices(config)[1].plus_diagonal(_spring_hessians(config))


@dataclass
class LinearModel:
    """``M ε̈ + C ε̇ + K ε = 0`` about the static equilibrium ``R_rel`` (breadth-first order).

    M, K : LowRankTreeMatrix (3N, 3N), kg m² and N m/rad; K = K_spring + K_gravity.
    K_spring : (N, 3, 3) N m/rad, block-diagonal (the spring's exact second variation).
    K_gravity : LowRankTreeMatrix, N m/rad.
    C : (N, 3, 3) N m s/rad, block-diagonal (damping scale applied).
    equilibrium : Equilibrium
    """

    M: BlockTreeMatrix
    K: BlockTreeMatrix
    K_spring: np.ndarray
    K_gravity: BlockTreeMatrix
    C: np.ndarray
    equilibrium: "Equilibrium"

    def dense(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, K, C) as dense (3N, 3N) arrays (small trees)."""
        n = self.C.shape[0]
        C = np.zeros((3 * n, 3 * n))
        for i in range(n):
            C[3 * i:3 * i + 3, 3 * i:3 * i + 3] = self.C[i]
        return self.M.to_dense(), self.K.to_dense(), C


def linearise(sim, equilibrium: "Equilibrium | None" = None) -> LinearModel:
    """The tree of `sim` linearised about its static equilibrium under gravity (found by
    `static_equilibrium` unless given), wind off."""
    equilibrium = equilibrium or static_equilibrium(sim)
    config = Configuration(sim, equilibrium.R_rel)
    spring = _spring_hessians(config)
    M, K_gravity = lowrank_matrices(config)
    return LinearModel(M=M, K=K_gravity.plus_diagonal(spring),
                       K_spring=spring, K_gravity=K_gravity,
                       C=sim.damping_scale * sim.tree.damping, equilibrium=equilibrium)


# -- static equilibrium ----------------------------------------------------------------------------

# Newton stops when the largest joint correction is below this (rad): far below anything a
# mode depends on, and reached in 1–2 steps past quadratic convergence.
NEWTON_STEP_TOLERANCE = 1e-12
# ... and accepts the result when the residual is this small relative to the force scale
# (the largest subtree weight moment or spring torque at the start).
NEWTON_RESIDUAL_TOLERANCE = 1e-9
NEWTON_MAX_ITERATIONS = 40
# The generalized forces' round-off (`_round_off`): relative to `_weight_moment` (ε times up to
# 10⁴ terms), and in rad for the spring torques (a rotation matrix holds its angle to a few ε;
# times the stiffest joint). The residual is never asked to be smaller: on a vertical trunk
# whose branches weigh next to nothing (--set tree.generator.branch_mass=1e-9) the net gravity
# moment is itself round-off, and a 1 m thick sapling trunk (1e10 N m/rad) balances a light
# wind with spring torques good to 1e-6 N m.
ROUND_OFF = 1e-12
ANGLE_ROUND_OFF = 1e-13
# A Newton correction larger than this (rad, at any joint) counts as a failed step: the
# linearisation is no guide that far, and load stepping takes over.
NEWTON_MAX_STEP = 0.5
# Load stepping on gravity: first increment, and the smallest before giving up.
LOAD_STEP_FIRST = 0.25
LOAD_STEP_MIN = 1.0 / 4096.0
# Newton iterations the load stepping of an applied load may spend (a shipped tree in its
# preset's wind needs 6–10): a wind too strong for any balance is reported in seconds, not
# after thousands of iterations on a 10,000-limb tree.
MEAN_LOAD_BUDGET = 200


@dataclass
class Equilibrium:
    """A static equilibrium: joint rotations R_rel (N, 3, 3), child → parent axes,
    breadth-first order; how it was found ('prestressed rest pose', 'Newton', 'Newton with
    load stepping'); Newton iterations; the final residual (N m, max norm)."""

    R_rel: np.ndarray
    method: str
    iterations: int
    residual: float


def _newton(sim, R: np.ndarray, gravity: np.ndarray, force_scale: float, load=None):
    """Newton's method on the joint rotations from R; (R, iterations) or None on failure.
    load: an applied load besides gravity, with ``generalized_forces(config)`` (N, 3) N m and
    its ``stiffness(config)`` (a `LowRankTreeMatrix`), e.g. `equilibrium.MeanDrag`."""
    for iteration in range(NEWTON_MAX_ITERATIONS + 1):
        config = Configuration(sim, R, gravity)
        Q = _forces(config, load)
        if not np.all(np.isfinite(Q)):
            return None
        if np.abs(Q).max() <= 1e-14 * force_scale:
            return R, iteration
        if iteration == NEWTON_MAX_ITERATIONS:
            break
        K = _tangent_stiffness(config)
        if load is not None:
            K = K.combined(load.stiffness(config), 1.0)
        factor = K.factor()
        if not factor.ok:
            return None
        delta = factor.solve(Q.reshape(-1)).reshape(-1, 3)
        size = np.linalg.norm(delta, axis=1).max()
        if not np.isfinite(size) or size > NEWTON_MAX_STEP:
            return None
        R = R @ so3.exp_many(delta)
        if size <= NEWTON_STEP_TOLERANCE:
            Q = _forces(Configuration(sim, R, gravity), load)
            if np.abs(Q).max() <= NEWTON_RESIDUAL_TOLERANCE * force_scale:
                return R, iteration + 1
            return None
    return None


def static_equilibrium(sim) -> Equilibrium:
    """The tree's static equilibrium under gravity, wind off (docs/design.md §7).

    The rest pose when it already is one (a prestressed tree with the stiffness scale it was
    prestressed with); otherwise Newton's method on the joint rotations from the rest pose
    (residual: the generalized forces; tangent: the exact stiffness matrix K), and if a full
    Newton step fails, load stepping on gravity from the unloaded spring rest pose. Raises
    TreedynError if no equilibrium is found.
    """
    tree = sim.tree
    R0 = np.ascontiguousarray(tree.rest_C_rel)
    Q0 = Configuration(sim, R0).generalized_forces()
    spring0 = Configuration(sim, R0, np.zeros(3)).generalized_forces()
    force_scale = max(np.abs(Q0 - spring0).max(), np.abs(spring0).max(),
                      _round_off(sim) / NEWTON_RESIDUAL_TOLERANCE, 1e-300)
    residual0 = float(np.abs(Q0).max())
    if residual0 <= NEWTON_RESIDUAL_TOLERANCE * force_scale:
        method = "prestressed rest pose" if sim.prestressed else "rest pose"
        return Equilibrium(R0, method, 0, residual0)
    found = _newton(sim, R0, sim.gravity, force_scale)
    if found is not None:
        R, iterations = found
        return Equilibrium(R, "Newton", iterations, _residual(sim, R))
    # Load stepping: from the unloaded spring rest pose (θ = 0 at every joint), gravity on.
    R, iterations = _load_stepping(
        np.ascontiguousarray(sim.spring_C_rel),
        lambda R, target: _newton(sim, R, target * sim.gravity, force_scale),
        lambda reached: (f"no static equilibrium under gravity was found: Newton's method with "
                         f"load stepping stalled at {100 * reached:.1f} % of gravity (the tree "
                         f"is too soft to carry its weight; stiffen it or prestress it)"))
    return Equilibrium(R, "Newton with load stepping", iterations, _residual(sim, R))


def _round_off(sim) -> float:
    """The generalized forces' round-off (N m): ROUND_OFF of Σ m_i |g| |r_i| (every limb's
    weight about the root at its full lever r_i, root to the limb's tip: the size of the terms
    the forces sum) plus ANGLE_ROUND_OFF times the stiffest joint's spring."""
    tree = sim.tree
    lever = np.linalg.norm(tree.rest_tip - tree.rest_base[0], axis=1)
    weight_moment = float(np.linalg.norm(sim.gravity) * np.dot(tree.mass, lever))
    stiffest = sim.stiffness_scale * float(np.abs(tree.stiffness).max(initial=0.0))
    return ROUND_OFF * weight_moment + ANGLE_ROUND_OFF * stiffest


def _load_stepping(R, solve, failure, budget: int | None = None):
    """Load stepping from R: ``solve(R, fraction)`` (Newton at that fraction of the load, from
    R; (R, iterations) or None) on fractions rising to 1, halving the increment after a
    failure; raises TreedynError(failure(fraction reached)) when it gets too small, or when
    more than `budget` Newton iterations (a failed solve counting NEWTON_MAX_ITERATIONS) were
    spent. Returns (R, iterations)."""
    reached, step, iterations, spent = 0.0, LOAD_STEP_FIRST, 0, 0
    while reached < 1.0:
        if budget is not None and spent > budget:
            raise TreedynError(failure(reached))
        target = min(1.0, reached + step)
        found = solve(R, target)
        if found is None:
            spent += NEWTON_MAX_ITERATIONS
            step *= 0.5
            if step < LOAD_STEP_MIN:
                raise TreedynError(failure(reached))
            continue
        spent += found[1]
        R, iterations = found[0], iterations + found[1]
        reached = target
        step = min(2.0 * step, 0.5)
    return R, iterations


def _forces(config: Configuration, load=None) -> np.ndarray:
    """The generalized forces (N, 3) N m of gravity and the springs, plus the load's."""
    Q = config.generalized_forces()
    return Q if load is None else Q + load.generalized_forces(config)


def static_equilibrium_under(sim, R0: np.ndarray, load_at) -> Equilibrium:
    """The static equilibrium under gravity and the load ``load_at(sim, fraction)`` at fraction
    1, by Newton's method from R0 (the equilibrium without it), stepping the load up from
    zero when a full step fails. Raises TreedynError if none is found."""
    load = load_at(sim, 1.0)
    config = Configuration(sim, R0)
    force_scale = max(np.abs(load.generalized_forces(config)).max(),
                      np.abs(config.generalized_forces()).max(),
                      _round_off(sim) / NEWTON_RESIDUAL_TOLERANCE, 1e-300)
    found = _newton(sim, R0, sim.gravity, force_scale, load)
    if found is not None:
        return Equilibrium(found[0], "Newton", found[1], _residual(sim, found[0], load))
    R, iterations = _load_stepping(
        R0, lambda R, target: _newton(sim, R, sim.gravity, force_scale, load_at(sim, target)),
        lambda reached: (f"no static equilibrium under the mean wind was found: Newton's "
                         f"method with load stepping stalled at {100 * reached:.1f} % of the "
                         f"drag (the tree is too soft for this wind; stiffen it or set "
                         f"simulation.start: rest)"), MEAN_LOAD_BUDGET)
    return Equilibrium(R, "Newton with load stepping", iterations, _residual(sim, R, load))


def _residual(sim, R, load=None) -> float:
    return float(np.abs(_forces(Configuration(sim, R), load)).max())
