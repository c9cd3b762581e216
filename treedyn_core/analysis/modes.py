"""Natural frequencies, damping ratios and mode shapes of a tree (docs/design.md §7, `treedyn modes`).

The tree is linearised about its static equilibrium under gravity, wind off
(`linearise`): ``M ε̈ + C ε̇ + K ε = 0`` in the simulator's joint coordinates.

- Mode shapes are the undamped generalized eigenvectors of ``(K, M)``,
  mass-normalised (``φᵀ M φ = 1``). The method is chosen by the tree's size. Small
  trees (3N ≤ `DENSE_DOF_LIMIT`): dense ``scipy.linalg.eigh``. Larger: ARPACK
  ``eigsh`` in shift-invert mode about σ (0 when K is positive definite, else a
  small negative shift), matrix-free: M x and ``(K − σM)⁻¹ x`` by passes over the
  limbs of `tree_lowrank` (the block elimination of the articulated-body
  algorithm), O(N) time and memory per product whatever the tree's depth (a
  20,000-segment chain takes ~0.3 GB), then Rayleigh–Ritz on ARPACK's vectors.
- A negative eigenvalue of K (found by the eigen-solver, or counted by
  Sylvester's law of inertia from that factorisation: eigenvalues below σ) means
  the tree is statically unstable, it would buckle under its own weight:
  TreedynError.
- Frequencies and damping ratios come from the damped eigenvalues λ of the
  system projected on the mode shapes: in modal coordinates
  ``ÿ + Φᵀ C Φ ẏ + Ω² y = 0``, written first-order as ``[Ωy; ẏ]`` (which keeps the
  matrix's norm at ω_max instead of ω_max²). When Φ holds every mode
  (3N ≤ `EXACT_DAMPED_DOF_LIMIT`) this is the exact damped eigenproblem of
  ``[0 I; −M⁻¹K −M⁻¹C]``; otherwise it is the projection on the lowest modes
  (plus `EXTRA_MODES`), which neglects the damping's coupling to the modes left
  out: against the exact damped eigenvalues of `sapling` and `young_oak` (84 and
  858 degrees of freedom), projecting on 15 modes is off by ≤ 1e-4 (relative)
  in the lowest six frequencies and damping ratios (modal damping φᵀCφ/(2ω),
  which drops the coupling among the kept modes too, is off by about as much in
  ζ). Each undamped mode receives the two damped eigenvalues (a conjugate pair,
  or two real ones when overdamped) that live mostly in it (an assignment
  problem); with ``λa λb = ω²`` and ``λa + λb = −2ζω``, frequency = ω/2π and
  damping ratio ζ, which for a conjugate pair are |λ|/2π and ``−Re λ/|λ|``.
- Degenerate modes (an axisymmetric tree's sway in x and y) are turned within
  their eigenspace to separate the motion along x from the rest, so that the
  descriptions and shapes are reproducible.

`modes` touches no global state: the app's mode viewer calls it off the GUI thread.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse.linalg

from ..dynamics.linearise import Configuration, LinearModel, linearise
from ..errors import TreedynError
from ..numerics.kernel import kernel
from ..resources import available_bytes, check_memory
from .sway import MAX_SWAY_SEARCH_MODES, STEM_SWAYS, SwaySearch, find_sway, stem_load, sway_line

# Dense eigen-solvers up to this many degrees of freedom (eigh of 900² takes ~0.2 s).
DENSE_DOF_LIMIT = 900
# Exact damped eigenvalues (all modes in the projection) up to this many; the 2n × 2n
# nonsymmetric eig costs ~1 s at 2n = 900 on two cores.
EXACT_DAMPED_DOF_LIMIT = 450
# At most this many modes of a tree too large for the dense solvers (ARPACK keeps ~2k vectors
# of 3N numbers; more modes than this are no longer "the lowest" a user looks at).
MAX_SPARSE_MODES = 300
# ARPACK stops when its Ritz vectors' residuals are below this (relative to the Ritz values
# of (K − σM)⁻¹M); the Rayleigh–Ritz step after it makes the eigenvalues' error its square.
# (0, machine precision, costs a 4,000-segment chain 10 times the iterations.)
LANCZOS_TOLERANCE = 1e-12
# Modes computed beyond those asked for, in the projected damped problem (and so that
# damping cannot reorder the last ones requested with one not computed).
EXTRA_MODES = 5
# Eigenvalues of (K, M) within this many times round-off (relative to the largest diagonal
# ratio K_ii / M_ii, a bound on the spectrum's scale) of zero count as zero: a neutral mode
# (a free joint), not an instability.
ZERO_EIGENVALUE_ROUNDOFF = 1e-12
# The shift of shift-invert, in units of that zero tolerance: small, negative, and far enough
# from every eigenvalue counted as zero that K − σM factors well.
SHIFT_IN_ZERO_TOLERANCES = 1e3
# Eigenvalues this close (relative, plus the zero tolerance: the round-off of a low eigenvalue
# is ~ε·ω²_max, not ε·ω²) are one degenerate eigenspace.
DEGENERATE_RTOL = 1e-9
# A joint continues the trunk if it is its parent's only child, or the child whose rest
# direction is the closest to its parent's, within this angle.
TRUNK_CONTINUATION_DEG = 20.0
# A mode is a twist when the twist components (about the limb axes) hold more than this
# fraction of its spring strain energy, and a subtree holding more than this fraction of its
# kinetic energy is where it happens.
MAJORITY = 0.5
# A mode is the trunk's when the trunk's joints (a handful among hundreds) hold more than this
# share of its spring strain energy: a tree's fundamental sway strains mostly trunk and limbs.
TRUNK_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class ModeResult:
    """The lowest modes of a tree about its static equilibrium, lowest frequency first.

    Attributes
    ----------
    preset_name : str
    limb_names : list[str], preset order
    frequencies_hz : (count,) Hz, ``|λ|/2π`` of the damped eigenvalues
    damping_ratios : (count,) ``−Re λ/|λ|`` (NaN for a zero-frequency mode)
    periods : (count,) s, 1/frequency (inf for a zero-frequency mode)
    shapes : (count, N, 3) rad per unit modal amplitude: the joint rotation vectors ε
        (child axes; R_i → R_i exp(ε_i^×)) of the mass-normalised undamped mode shapes,
        preset order
    tip_displacements : (count, N, 3) m per unit modal amplitude, inertial axes, preset order
    descriptions : list[str], the dominant motion of each mode ("trunk sway x", "branch b2 sway
        y", "trunk twist", ...)
    omega_squared : (count,) rad²/s², the undamped eigenvalues of (K, M)
    equilibrium : (N, 3, 3) joint rotations at the static equilibrium, child → parent axes,
        preset order
    equilibrium_method : str, how it was found
    sway_frequency_hz : Hz or None, f0: the frequency of the sway mode (`sway`), which may lie
        beyond the `count` modes listed
    sway_mode : int or None, its position (0-based) among the modes in frequency order
    sway_share : its share of the stem's static compliance at the crown's centre (0 to 1)
    sway_certain : bool, no mode beyond those searched can hold a larger share
    modes_searched : int, how many of the lowest modes were computed to find it
    """

    preset_name: str
    limb_names: list
    frequencies_hz: np.ndarray
    damping_ratios: np.ndarray
    periods: np.ndarray
    shapes: np.ndarray
    tip_displacements: np.ndarray
    descriptions: list
    omega_squared: np.ndarray
    equilibrium: np.ndarray
    equilibrium_method: str
    sway_frequency_hz: float | None = None
    sway_mode: int | None = None
    sway_share: float = 0.0
    sway_certain: bool = False
    modes_searched: int = 0

    @property
    def count(self) -> int:
        return len(self.frequencies_hz)


def _as_simulation(source):
    from ..simulation import Simulation

    if isinstance(source, Simulation):
        return source
    if isinstance(source, dict):
        return Simulation.from_data(source)
    if isinstance(source, (str, os.PathLike)):
        from ..model.preset import load_preset

        return Simulation(load_preset(source))
    return Simulation(source)


def modes(sim_or_preset, count: int = 10) -> ModeResult:
    """The `count` lowest modes of a tree: a `Simulation` (its stiffness and damping scales,
    gravity and spring rest rotations in force), a `Preset`, a validated preset dict, or a
    preset's path or shipped name. Raises TreedynError if the tree is statically unstable."""
    sim = _as_simulation(sim_or_preset)
    if count < 1:
        raise TreedynError(f"the number of modes must be ≥ 1, got {count}")
    check_memory(solver_memory(sim.tree, count), f"the {count} lowest modes of a tree of "
                 f"{sim.tree.n:,} limbs", "ask for fewer modes (--count) or use a tree with "
                 "fewer limbs")
    model = linearise(sim)
    n_dof = model.M.n_dof
    count = min(int(count), n_dof)
    name = str(sim.data.get("name", "the tree"))
    config = Configuration(sim, model.equilibrium.R_rel)
    load = stem_load(sim.tree, config, trunk_limbs(sim, config))
    compliance = None if load is None else _compliance(model, load)
    wanted = count
    while True:
        omega2, Phi, zero_tolerance = _undamped_modes(model, wanted, sim, name)
        Phi = _separate_degenerate(omega2, Phi, sim, config, zero_tolerance)
        if load is None:
            search = _described_sway(omega2, Phi, model, sim, config)
        else:
            search = find_sway(omega2, Phi, _modal_damping(omega2, Phi, model.C), load,
                               compliance, zero_tolerance)
        more = _more_modes(len(omega2), n_dof, sim.tree)
        if search.certain or (load is not None and compliance is None) or more is None:
            break
        wanted = more
    searched = len(omega2)
    if n_dof > EXACT_DAMPED_DOF_LIMIT:
        # The dense solver returns every mode; keep those asked for and the sway's.
        keep = min(searched, max(count, (search.index or 0) + 1) + EXTRA_MODES)
        omega2, Phi = omega2[:keep], Phi[:, :keep]
    omega, zeta = _damped_frequencies(omega2, Phi, model.C)
    order = np.lexsort((np.arange(len(omega)), omega))
    sway = None if search.index is None else int(np.flatnonzero(order == search.index)[0])
    f0 = None if sway is None else float(omega[search.index] / (2.0 * np.pi))
    order = order[:count]
    omega, zeta, omega2, Phi = omega[order], zeta[order], omega2[order], Phi[:, order]
    Phi = _fix_signs(Phi, sim, config)

    n = sim.tree.n
    shapes = Phi.T.reshape(count, n, 3)
    tips, _ = _displacements(shapes, sim, config)
    descriptions = _describe(shapes, model, sim, config)
    tree = sim.tree
    frequencies = omega / (2.0 * np.pi)
    periods = np.full(count, np.inf)
    periods[frequencies > 0.0] = 1.0 / frequencies[frequencies > 0.0]
    return ModeResult(
        preset_name=name,
        limb_names=[tree.names[i] for i in np.argsort(tree.preset_index)],
        frequencies_hz=frequencies, damping_ratios=zeta, periods=periods,
        shapes=tree.to_preset_order(shapes, axis=1),
        tip_displacements=tree.to_preset_order(tips, axis=1),
        descriptions=descriptions, omega_squared=omega2,
        equilibrium=tree.to_preset_order(model.equilibrium.R_rel),
        equilibrium_method=model.equilibrium.method,
        sway_frequency_hz=f0, sway_mode=sway, sway_share=search.share,
        sway_certain=bool(search.certain), modes_searched=searched)


def _described_sway(omega2, Phi, model, sim, config) -> SwaySearch:
    """The sway of a tree whose stem divides below the crown's centre (`sway`): the lowest
    mode described as a trunk or crown sway; certain once found."""
    descriptions = _describe(Phi.T.reshape(len(omega2), sim.tree.n, 3), model, sim, config)
    for k, text in enumerate(descriptions):
        if text.startswith(STEM_SWAYS):
            return SwaySearch(k, float("nan"), float("nan"), True)
    return SwaySearch(None, float("nan"), float("nan"), False)


def _modal_damping(omega2, Phi, C_blocks):
    """(m,) the modal damping ratios φᵀCφ/(2ω) (NaN at zero frequency): within ~1e-4 of the
    damped eigenvalues' (module docstring) and cheap for hundreds of modes."""
    n = C_blocks.shape[0]
    m = Phi.shape[1]
    CPhi = np.einsum("nij,njk->nik", C_blocks, Phi.reshape(n, 3, m)).reshape(3 * n, m)
    omega = np.sqrt(np.maximum(omega2, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(omega > 0.0, np.einsum("ik,ik->k", Phi, CPhi) / (2.0 * omega), np.nan)


def _compliance(model: LinearModel, load: np.ndarray) -> float | None:
    """m²/N: trace(loadᵀ K⁻¹ load), the stem's static compliance at the crown's centre summed
    over x and y (`sway`); None when K is not positive definite (a neutral or unstable mode:
    the sum over the modes is then not the compliance)."""
    factor = model.K.factor()
    if not factor.ok or factor.negative > 0:
        return None
    value = float(np.einsum("ij,ij->", load, factor.solve(load)))
    return value if math.isfinite(value) and value > 0.0 else None


def _more_modes(computed: int, n_dof: int, tree) -> int | None:
    """How many modes to compute next when the sway is not yet certain among `computed`:
    twice as many, within `MAX_SWAY_SEARCH_MODES` and the memory available; None when the
    search stops (every mode computed, or the limit reached)."""
    if computed >= min(n_dof, MAX_SWAY_SEARCH_MODES):
        return None
    wanted = min(2 * computed, MAX_SWAY_SEARCH_MODES, n_dof)
    if 3 * tree.n > DENSE_DOF_LIMIT and solver_memory(tree, wanted) > available_bytes():
        return None
    return wanted


# -- the undamped eigenproblem ---------------------------------------------------------------------

# Numbers kept per limb while the modes are computed: M, K_gravity, K and K − σM in the
# low-rank form (D 9, U 18, W 18 each), the factor (P⁻¹ 9, B 18, Φ̄ 36 while it is built), and
# the statics', the linearisation's and the descriptions' per-limb arrays (~200; measured:
# 4.3 kB per limb in all, ARPACK's vectors included, on a 174,770-limb tree).
_NUMBERS_PER_LIMB = 4 * 45 + 63 + 200
# ARPACK's Lanczos basis: max(2m + 1, 20) vectors of 3N numbers for m modes (scipy's default),
# plus the modes and their products with M.
_LANCZOS_MINIMUM = 20


def solver_memory(tree, count: int) -> float:
    """Bytes the eigen-solver of a tree needs for `count` modes: the dense (3N)² matrices (a
    few of them) up to `DENSE_DOF_LIMIT` degrees of freedom, else O(N): the low-rank matrices
    (`tree_lowrank`) and ARPACK's vectors."""
    n_dof = 3 * tree.n
    matrices = _NUMBERS_PER_LIMB * tree.n * 8.0
    if n_dof <= DENSE_DOF_LIMIT:
        return matrices + 4 * n_dof * n_dof * 8
    m = min(count, MAX_SPARSE_MODES) + EXTRA_MODES
    return matrices + (max(2 * m + 1, _LANCZOS_MINIMUM) + 3 * m) * n_dof * 8.0


def _zero_tolerance(model: LinearModel) -> float:
    K_diag = np.einsum("nii->ni", model.K.diagonal_blocks())
    M_diag = np.einsum("nii->ni", model.M.diagonal_blocks())
    return ZERO_EIGENVALUE_ROUNDOFF * max(float(np.max(np.abs(K_diag) / M_diag)), 1e-300)


def _undamped_modes(model: LinearModel, count: int, sim, name: str):
    """(ω² (m,), Φ (3N, m), zero tolerance rad²/s²) of the m ≥ count lowest modes, ascending,
    φᵀMφ = 1 (every mode, m = 3N, from the dense solver).

    The zero tolerance (eigenvalues within it of zero are neutral modes, and within it of each
    other degenerate) is the dense solver's round-off, ε·ω²_max (`_zero_tolerance`). Above
    `DENSE_DOF_LIMIT`, when K factors with no negative pivot (positive definite, by
    Sylvester's law) no eigenvalue is zero or negative: the shift is 0 and the tolerance 0.
    That matters on long chains, whose ε·ω²_max (the twist of a 1 mm limb) reaches the lowest
    sway frequencies, while the Rayleigh–Ritz eigenvalues are good to ~1e-13 (relative)."""
    n_dof = model.M.n_dof
    tol = _zero_tolerance(model)
    below_shift, sigma = 0, 0.0
    if n_dof <= DENSE_DOF_LIMIT:
        omega2, Phi = scipy.linalg.eigh(model.K.to_dense(), model.M.to_dense(), driver="gvd")
    else:
        if count > MAX_SPARSE_MODES:
            raise TreedynError(f"at most {MAX_SPARSE_MODES} modes of a tree of {n_dof} degrees "
                               f"of freedom, got a count of {count}")
        m = min(n_dof - 1, count + EXTRA_MODES)
        factor = model.K.factor()
        if factor.ok and factor.negative == 0:
            tol = 0.0
        else:
            sigma = -SHIFT_IN_ZERO_TOLERANCES * tol
            for _ in range(8):
                factor = model.K.combined(model.M, -sigma).factor()
                if factor.ok:
                    break
                sigma *= 1.7
            else:
                raise TreedynError(f"'{name}': the stiffness matrix could not be factored")
        below_shift = factor.negative
        shape = (n_dof, n_dof)
        operator = scipy.sparse.linalg.LinearOperator(shape, matvec=factor.solve, dtype=float)
        K_op = scipy.sparse.linalg.LinearOperator(shape, matvec=model.K.matvec, dtype=float)
        M_op = scipy.sparse.linalg.LinearOperator(shape, matvec=model.M.matvec, dtype=float)
        v0 = np.cos(np.arange(n_dof) * 0.7) + 1.5  # deterministic start
        try:
            _, Phi = scipy.sparse.linalg.eigsh(K_op, k=m, M=M_op, sigma=sigma, which="LM",
                                               OPinv=operator, v0=v0, tol=LANCZOS_TOLERANCE)
        except scipy.sparse.linalg.ArpackNoConvergence:
            raise TreedynError(f"'{name}': the eigen-solver did not converge on the "
                               f"{m} lowest modes") from None
        omega2, Phi = _rayleigh_ritz(model, Phi)
    if below_shift > 0 or omega2[0] < -tol:
        _raise_unstable(name, omega2, Phi, below_shift, sigma, model, sim)
    return np.maximum(omega2, 0.0), Phi, tol


def _rayleigh_ritz(model: LinearModel, Phi: np.ndarray):
    """(ω² (m,), Φ (3N, m)): the eigenpairs of (K, M) projected on the span of ARPACK's
    vectors, ascending, φᵀMφ = 1 to round-off. ARPACK's own eigenvalues of a long chain are
    off by ~1e-8 (relative) where its vectors are good to ~1e-10: the Rayleigh quotients are
    accurate to the square of the vectors' error."""
    K_r = Phi.T @ model.K.matvec(Phi)
    M_r = Phi.T @ model.M.matvec(Phi)
    omega2, Y = scipy.linalg.eigh(0.5 * (K_r + K_r.T), 0.5 * (M_r + M_r.T))
    return omega2, Phi @ Y


def _raise_unstable(name, omega2, Phi, below_shift, sigma, model, sim):
    config = Configuration(sim, model.equilibrium.R_rel)
    if omega2[0] < 0.0:
        shape = Phi[:, :1].T.reshape(1, sim.tree.n, 3)
        what = (f"mode 1: ω² = {omega2[0]:.4g} rad²/s², "
                f"{_describe(shape, model, sim, config)[0]}")
    else:
        what = f"{below_shift} of them below {sigma:.3g} rad²/s²"
    raise TreedynError(
        f"'{name}' is statically unstable under its own weight: the stiffness matrix has a "
        f"negative eigenvalue ({what}); it would buckle (stiffen it or lower gravity)")


def _separate_degenerate(omega2, Phi, sim, config, zero_tolerance):
    """Turn each degenerate eigenspace so that its first mode moves the most along x (mass-
    weighted tip displacement), the next the most along x of what is left, and so on."""
    Phi = Phi.copy()
    start = 0
    n = sim.tree.n
    while start < len(omega2):
        stop = start + 1
        while (stop < len(omega2)
               and omega2[stop] - omega2[stop - 1]
               <= DEGENERATE_RTOL * abs(omega2[stop]) + zero_tolerance):
            stop += 1
        if stop - start > 1:
            block = Phi[:, start:stop]
            tips, _ = _displacements(block.T.reshape(-1, n, 3), sim, config)
            x = tips[:, :, 0] * np.sqrt(sim.tree.mass)[None, :]
            _, U = np.linalg.eigh(x @ x.T)
            Phi[:, start:stop] = block @ U[:, ::-1]
        start = stop
    return Phi


def _fix_signs(Phi, sim, config):
    """Each mode's sign chosen so that its largest tip displacement component is positive."""
    tips, _ = _displacements(Phi.T.reshape(Phi.shape[1], sim.tree.n, 3), sim, config)
    flat = tips.reshape(Phi.shape[1], -1)
    biggest = flat[np.arange(flat.shape[0]), np.argmax(np.abs(flat), axis=1)]
    return Phi * np.where(biggest < 0.0, -1.0, 1.0)[None, :]


# -- damped frequencies ----------------------------------------------------------------------------


def _damped_frequencies(omega2, Phi, C_blocks):
    """(ω (m,) rad/s, ζ (m,)) per undamped mode from the damped eigenvalues of the system
    projected on the modes Φ (see the module docstring)."""
    m = len(omega2)
    Omega = np.sqrt(omega2)
    n = C_blocks.shape[0]
    CPhi = np.einsum("nij,njk->nik", C_blocks, Phi.reshape(n, 3, m)).reshape(3 * n, m)
    Cr = Phi.T @ CPhi
    Cr = 0.5 * (Cr + Cr.T)
    if not np.any(Cr):
        return Omega.copy(), np.where(Omega > 0.0, 0.0, np.nan)
    A = np.zeros((2 * m, 2 * m))
    A[:m, m:] = np.diag(Omega)
    A[m:, :m] = -np.diag(Omega)
    A[m:, m:] = -Cr
    lam, Z = scipy.linalg.eig(A)
    weight = np.abs(Z[:m]) ** 2 + np.abs(Z[m:]) ** 2          # (mode, eigenvalue)
    weight /= weight.sum(axis=0, keepdims=True)
    cost = -np.repeat(weight, 2, axis=0)                        # two slots per mode
    slot, eigen = scipy.optimize.linear_sum_assignment(cost)
    pair = np.empty((m, 2), dtype=complex)
    pair.reshape(-1)[slot] = lam[eigen]
    product = np.abs(pair[:, 0] * pair[:, 1])
    omega = np.sqrt(product)
    with np.errstate(divide="ignore", invalid="ignore"):
        zeta = np.where(omega > 0.0, -(pair[:, 0] + pair[:, 1]).real / (2.0 * omega), np.nan)
    return omega, zeta


# -- displacements and descriptions ----------------------------------------------------------------


def _displacements(shapes, sim, config):
    """Linearised motion of every limb for joint rotations `shapes` (k, N, 3), child axes:
    (tip displacements (k, N, 3) m, (W, B)) with W the limbs' rotation vectors (inertial) and
    a point r of limb l displaced by W_l × r − B_l."""
    tree = sim.tree
    W = np.einsum("nij,knj->kni", config.C_IF, shapes)   # joint rotations, inertial axes
    B = np.cross(W, config.base[None])
    _add_ancestors(tree.parent, W)
    _add_ancestors(tree.parent, B)
    tip = config.base + tree.length[:, None] * np.einsum("nij,nj->ni", config.C_IF, tree.u)
    return np.cross(W, tip[None]) - B, (W, B)


@kernel
def _add_ancestors(parent, X):
    """In place X[:, i] ← Σ X[:, j] over i and its ancestors j (X (k, N, 3), breadth-first):
    one pass over the limbs, whatever the tree's depth."""
    for i in range(1, parent.shape[0]):
        p = parent[i]
        for k in range(X.shape[0]):
            for r in range(3):
                X[k, i, r] += X[k, p, r]


def trunk_limbs(sim, config) -> np.ndarray:
    """Boolean (N,): the root and the limbs that continue it (`TRUNK_CONTINUATION_DEG`)."""
    tree = sim.tree
    direction = np.einsum("nij,nj->ni", config.C_IF, tree.u)
    trunk = np.zeros(tree.n, dtype=bool)
    i = 0
    cos_limit = math.cos(math.radians(TRUNK_CONTINUATION_DEG))
    while True:
        trunk[i] = True
        children = list(tree.children(i))
        if not children:
            break
        if len(children) == 1:
            i = children[0]
            continue
        alignment = direction[children] @ direction[i]
        best = int(np.argmax(alignment))
        if alignment[best] < cos_limit:
            break
        i = children[best]
    return trunk


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _describe(shapes, model: LinearModel, sim, config) -> list[str]:
    """A short description of each mode's dominant motion (see `modes`).

    Where: "trunk" if the trunk's joints hold more than `TRUNK_SHARE` of the spring strain
    energy; otherwise the smallest subtree holding most of the kinetic energy: "branch NAME"
    (NAME the branch's first limb: the chain of only children up to a branching), or "crown"
    when that is a trunk limb's subtree. What: "twist" if the twist components hold
    most of the strain energy, else "sway" and the axis (x, y, z) along which the region's
    mass-weighted tip motion is largest. A repeated description gets an ordinal, "(2nd)".
    """
    tree = sim.tree
    tips, (W, B) = _displacements(shapes, sim, config)
    com = config.base + np.einsum("nij,nj->ni", config.C_IF, tree.com_offset)
    v_com = np.cross(W, com[None]) - B
    I_world = config.C_IF @ tree.inertia_com @ np.transpose(config.C_IF, (0, 2, 1))
    kinetic = 0.5 * (tree.mass[None] * np.einsum("kni,kni->kn", v_com, v_com)
                     + np.einsum("kni,nij,knj->kn", W, I_world, W))
    Ks = model.K_spring
    strain = 0.5 * np.einsum("kni,nij,knj->kn", shapes, Ks, shapes)
    twist_amp = np.einsum("kni,ni->kn", shapes, tree.u)
    twist = 0.5 * twist_amp**2 * np.einsum("ni,nij,nj->n", tree.u, Ks, tree.u)[None]
    trunk = trunk_limbs(sim, config)
    seen: dict[str, int] = {}
    out = []
    for k in range(shapes.shape[0]):
        strain_total = max(strain[k].sum(), 1e-300)
        motion = "twist" if twist[k].sum() > MAJORITY * strain_total else "sway"
        fraction = kinetic[k] / max(kinetic[k].sum(), 1e-300)
        subtree = fraction.copy()
        for i in range(tree.n - 1, 0, -1):
            subtree[tree.parent[i]] += subtree[i]
        region = 0
        while True:
            inside = [c for c in tree.children(region) if subtree[c] > MAJORITY]
            if not inside:
                break
            region = inside[0]
        if strain[k][trunk].sum() > TRUNK_SHARE * strain_total:
            where, limbs = "trunk", np.arange(tree.n)
        else:
            # Up to the branch's first limb: through limbs that are their parent's only child.
            while (not trunk[region] and not trunk[tree.parent[region]]
                   and tree.child_count[tree.parent[region]] == 1):
                region = int(tree.parent[region])
            where = "crown" if trunk[region] else f"branch {tree.names[region]}"
            limbs = np.array(list(tree.subtree(region)))
        text = f"{where} {motion}"
        if motion == "sway":
            spread = (tree.mass[limbs, None] * tips[k, limbs] ** 2).sum(axis=0)
            text += " " + "xyz"[int(np.argmax(spread))]
        seen[text] = seen.get(text, 0) + 1
        out.append(text if seen[text] == 1 else f"{text} ({_ordinal(seen[text])})")
    return out


# -- the command's output --------------------------------------------------------------------------


def _number(x: float):
    return float(x) if math.isfinite(x) else None


def format_table(result: ModeResult) -> str:
    """The table `treedyn modes` prints: one line per mode, units in the header."""
    n = len(result.limb_names)
    lines = [f"{result.preset_name}: {result.count} lowest modes ({n} limbs, {3 * n} degrees of "
             f"freedom); static equilibrium under gravity: {result.equilibrium_method}",
             f"{'mode':>4}  {'frequency (Hz)':>14}  {'period (s)':>10}  {'damping ratio':>13}  "
             f"motion"]
    for k in range(result.count):
        f, T, z = result.frequencies_hz[k], result.periods[k], result.damping_ratios[k]
        lines.append(f"{k + 1:>4}  {f:>14.5g}  {T:>10.5g}  {z:>13.4g}  "
                     f"{result.descriptions[k]}")
    lines.append(sway_line(result))
    return "\n".join(lines)


def format_json(result: ModeResult) -> str:
    """`treedyn modes --json`: frequencies, damping ratios and mode shapes (preset order)."""
    data = {
        "preset": result.preset_name,
        "modes": [{
            "frequency_hz": _number(result.frequencies_hz[k]),
            "period_s": _number(result.periods[k]),
            "damping_ratio": _number(result.damping_ratios[k]),
            "description": result.descriptions[k],
            "joint_rotation": result.shapes[k].tolist(),
            "tip_displacement": result.tip_displacements[k].tolist(),
        } for k in range(result.count)],
        "limb_names": list(result.limb_names),
        "sway_frequency_hz": result.sway_frequency_hz,
        "sway_mode": None if result.sway_mode is None else result.sway_mode + 1,
        "sway_share": _number(result.sway_share),
    }
    return json.dumps(data)


def modes_command_output(preset, count: int, as_json: bool) -> str:
    """Exactly what `treedyn modes PRESET [--count K] [--json]` prints. Raises TreedynError
    (one line) for a statically unstable tree or a statics that does not converge."""
    result = modes(preset, count)
    return format_json(result) if as_json else format_table(result)
