"""Procedural trees: a `tree.generator` mapping (docs/design.md §6) → an explicit limb list.

The tree
--------
A straight vertical trunk of ``trunk.segments`` equal limbs (total length
``trunk.length``). Then ``levels`` generations of branches, level 1 first; a
branch is a chain of ``segments`` equal limbs. ``children``, ``segments``,
``length_ratio`` and ``droop_deg`` are numbers, or lists with one entry per
level; a list shorter than ``levels`` repeats its last entry (longer lists are
cut).

* Decurrent (``whorls: 0``, docs/design.md §6.3): the trunk ends in
  ``children[0]`` level-1 branches; every branch of level l < levels ends in
  ``children[l]`` branches of level l + 1. A branch is ``length_ratio`` times
  as long as its parent branch (the trunk for level 1).
* Excurrent (``whorls: W > 0``, conifers): the trunk is a leader that goes on
  to the top. A whorl of ``children[0]`` level-1 branches sits at each of the
  W highest joints between trunk limbs (so ``whorls < trunk.segments``), and
  the top trunk limb is the leader shoot. A whorl branch is
  ``whorl_length_ratio`` times the trunk length above its whorl (a conical
  crown); deeper levels branch at branch ends as above.

Every branching happens at the tip of a limb (``attach`` is always 1.0).

Angles: a branch's first limb leaves its parent's axis at
``branch_angle_deg``. Its rest frame relative to the parent limb's rest frame
is a rotation about the parent's axis by the azimuth φ followed by a tilt by
the branch angle θ about the new y axis: ``C_rel = Rz(φ) Ry(θ)``. The k-th
branch of a branching has φ = k·``azimuth_step_deg`` (phyllotaxis); in a whorl
φ = k·360°/n + w·``azimuth_step_deg`` (evenly around the trunk, whorl w turned
by the step). Later limbs of a branch go on straight (rest rotation 0) except
for jitter and droop.

Droop (``droop_deg`` δ of the branch's level, from branching level
``droop_level`` on): every limb of such a branch, its first included, is
turned by δ toward straight down (toward straight up when δ < 0) about the
horizontal axis normal to it, never past the vertical. Successive limbs of a
branch accumulate the bend, which makes arching and hanging (weeping)
branches; a level that droops under one that rises gives a spruce's sagging
branches with upturned ends.

Jitter (``jitter`` j, every draw uniform in ±1 from
``numpy.random.default_rng(seed)``, in a fixed order, so the same seed gives
the same tree on any machine): per branch, its length × (1 + j·U), its branch
angle × (1 + j·U) and its droop × (1 + j·U); per branching (or whorl), every
azimuth + j·180°·U; per later limb of a branch, a kink of j·θ·|U| toward a
random azimuth. The trunk is never jittered. Radii carry no jitter of their
own.

Leaves: every terminal limb carries ``leaf_area``, shared equally with the
``leaf_limbs`` − 1 limbs above it on its unbranched chain (a willow's hanging
shoot, leafy along its length; never past a branching), so the tree's total
is the same whatever ``leaf_limbs``.

Radii (pipe model): a limb's r^e (e = ``radius_exponent``) is proportional to
the total length of the terminal limbs it carries, and the root has
``trunk.radius``. So at every branching r_parent^e = Σ r_child^e (da Vinci)
holds to round-off, a limb that does not branch keeps its radius (a decurrent
trunk is a cylinder; an excurrent one tapers at each whorl), and a long
terminal twig is thicker than a short one.

Stem (``stem_form`` q): the trunk limbs instead take the radii of a tapered stem,
r(z) = ``trunk.radius``·((L − z)/L)^q, and joint stiffnesses integrated along it
(`stem_joint_stiffness`), optionally with a juvenile core (``juvenile_radius``,
``juvenile_modulus_ratio``) and a fork (``fork_height``, ``fork_leaders``): above the fork the
trunk limbs stand for that many leaders swaying together, drawn as one.

Names: ``trunk0`` … ``trunk{S-1}`` from the ground up. The level-1 branches
are ``b0``, ``b1``, … (with whorls: numbered from the lowest whorl up,
``children[0]`` per whorl); the k-th branch at the end of branch ``b2`` is
``b2.k``, the k-th at the end of ``b2.0`` is ``b2.0.k``, and so on. A branch's
name is its first limb; its later limbs are ``<branch>.s1``, ``<branch>.s2``, ….

Order: trunk limbs, then the branches level by level (in the order of their
branchings), each branch's limbs consecutive: parents precede children.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import PresetError
from ..numerics import so3

ErrorFactory = Callable[[str, str], Exception]

_KEY = "tree.generator"
# A count above 2**_MAX_COUNT_BITS is only reported as a power of ten: the exact
# integer would take too long to build and to print.
_MAX_COUNT_BITS = 4096


def _default_error(key_path: str, message: str) -> Exception:
    return PresetError(f"{key_path}: {message}")


class _TooMany(Exception):
    """Raised by the counter when the count has more than _MAX_COUNT_BITS bits."""

    def __init__(self, log10: float):
        super().__init__(log10)
        self.log10 = log10


def _per_level_head(gen: dict, key: str, error: ErrorFactory) -> list[int]:
    """The explicit per-level entries of ``children``/``segments`` (an int is a list of one)."""
    value = gen[key]
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise error(f"{_KEY}.{key}", "must be an int or a non-empty list of ints")
        return [int(v) for v in value]
    return [int(value)]


def _per_level(gen: dict, key: str, error: ErrorFactory) -> list[int]:
    """``children``/``segments`` for levels 1..levels (a short list repeats its last entry)."""
    head = _per_level_head(gen, key, error)
    return [head[min(i, len(head) - 1)] for i in range(int(gen["levels"]))]


def _per_level_float(gen: dict, key: str, default: float) -> list[float]:
    """``length_ratio``/``droop_deg`` for levels 1..levels (a number is every level's; a short
    list repeats its last entry)."""
    value = gen.get(key, default)
    head = [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)]
    return [head[min(i, len(head) - 1)] for i in range(int(gen["levels"]))]


def _check_whorls(gen: dict, error: ErrorFactory) -> int:
    whorls = int(gen.get("whorls", 0))
    segments = int(gen["trunk"]["segments"])
    spacing = int(gen.get("whorl_spacing", 1))
    if whorls * spacing >= segments:
        raise error(f"{_KEY}.whorls", f"must be less than trunk.segments / whorl_spacing = "
                    f"{segments}/{spacing} (a whorl sits at every whorl_spacing-th joint "
                    f"between trunk limbs from the top down), got {whorls}")
    return whorls


def _count(gen: dict, error: ErrorFactory) -> int:
    """Exact limb count; raises _TooMany beyond 2**_MAX_COUNT_BITS."""
    whorls = _check_whorls(gen, error)
    trunk = int(gen["trunk"]["segments"])
    levels = int(gen["levels"])
    children = _per_level_head(gen, "children", error)
    segments = _per_level_head(gen, "segments", error)
    head = min(levels, max(len(children), len(segments)))
    per_crown = 0  # limbs above one branching of the trunk (or one whorl)
    branches = 1   # branches of the current level per trunk branching
    for level in range(head):
        branches *= children[min(level, len(children) - 1)]
        per_crown += branches * segments[min(level, len(segments) - 1)]
        if branches.bit_length() > _MAX_COUNT_BITS:
            raise _TooMany(math.log10(branches))
    tail = levels - head  # the remaining levels repeat the last entries
    if tail > 0:
        c, s = children[-1], segments[-1]
        if c == 1:
            per_crown += branches * s * tail
        else:
            if tail * math.log2(c) > _MAX_COUNT_BITS:
                raise _TooMany(math.log10(branches) + tail * math.log10(c))
            per_crown += branches * s * c * (c ** tail - 1) // (c - 1)
    return trunk + max(whorls, 1) * per_crown


def count_limbs(gen: dict, error: ErrorFactory | None = None) -> int:
    """Number of limbs `generate` makes for ``gen``, from the counts alone (nothing is built).

    ``trunk.segments + max(whorls, 1) · Σ_l s_l · Π_{m ≤ l} c_m`` over levels l = 1..levels.
    Raises ``error("tree.generator.max_limbs", …)`` for an astronomical count (over 2^4096)
    and ``error("tree.generator.whorls", …)`` when whorls ≥ trunk.segments.
    """
    error = error or _default_error
    try:
        return _count(gen, error)
    except _TooMany as too_many:
        raise error(f"{_KEY}.max_limbs", f"the generator would make about "
                    f"10^{too_many.log10:.0f} limbs, more than max_limbs = "
                    f"{int(gen['max_limbs']):,}") from None


def _rotations(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rodrigues, batched: (n, 3, 3) matrices of rotations by ``angle`` (n,) rad about the
    unit ``axis`` (n, 3), expressed in the frame the axes are given in."""
    c, s = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    x, y, z = axis[:, 0], axis[:, 1], axis[:, 2]
    zero = np.zeros_like(x)
    cross = np.stack([np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1),
                      np.stack([-y, x, zero], -1)], -2)
    return c * np.eye(3) + s * cross + (1.0 - c) * axis[:, :, None] * axis[:, None, :]


def _about_z(angle: np.ndarray) -> np.ndarray:
    return _rotations(np.tile([0.0, 0.0, 1.0], (len(angle), 1)), angle)


def _about_y(angle: np.ndarray) -> np.ndarray:
    return _rotations(np.tile([0.0, 1.0, 0.0], (len(angle), 1)), angle)


def _droop(C_IF: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Turn limb rest frames (n, 3, 3), limb → inertial, by ``angle`` (n,) rad toward straight
    down (toward up where negative), about the horizontal axis normal to each limb, never
    past the vertical. Returns the new limb → inertial matrices."""
    if not np.any(angle):
        return C_IF
    t = np.where(angle > 0.0, -1.0, 1.0)  # target direction (0, 0, t)
    d = C_IF[:, :, 2]
    norm = np.hypot(d[:, 0], d[:, 1])  # |d × target|; atan2 is exact near the vertical
    bend = np.minimum(np.abs(angle), np.arctan2(norm, d[:, 2] * t))
    axis = np.stack([d[:, 1] * t, -d[:, 0] * t, np.zeros(len(t))], -1)  # d × target
    vertical = norm < 1e-12  # pointing straight away from the target: any horizontal axis
    axis[vertical] = C_IF[vertical, :, 0]
    axis[~vertical] /= norm[~vertical, None]
    return _rotations(axis, bend) @ C_IF


def _leaf_areas(parent: np.ndarray, terminal: np.ndarray, leaves: float,
                limbs: int) -> np.ndarray:
    """(N,) m²: each terminal limb's `leaves` shared equally by it and up to `limbs` − 1 of its
    ancestors, each the only child of its parent (the unbranched chain of its branch)."""
    children = np.bincount(parent[parent >= 0], minlength=len(parent))
    area = np.zeros(len(parent))
    for tip in np.flatnonzero(terminal):
        chain = [tip]
        while len(chain) < limbs and parent[chain[-1]] >= 0 and children[parent[chain[-1]]] == 1:
            chain.append(parent[chain[-1]])
        area[chain] += leaves / len(chain)
    return area


def stem_radii(length: float, radius: float, q: float, segments: int) -> np.ndarray:
    """Radii (m) of the trunk limbs of a tapered stem r(z) = radius·((H − z)/H)^q, H = length,
    each taken at its limb's mid-height (segments equal limbs from the ground up)."""
    mid = (np.arange(segments) + 0.5) * (length / segments)
    return radius * ((length - mid) / length) ** q


def stem_second_moment(r, core_radius: float = 0.0, core_modulus_ratio: float = 1.0):
    """Second moment (m⁴) of a stem section of radius r (m, scalar or array) in its outer
    wood's modulus: a juvenile core of `core_radius` m with `core_modulus_ratio` × that modulus
    gives π (r⁴ − (1 − ratio) min(core_radius, r)⁴)/4 (`stem_joint_stiffness`)."""
    core = np.minimum(core_radius, r)
    return np.pi * (r ** 4 - (1.0 - core_modulus_ratio) * core ** 4) / 4.0


def stem_joint_stiffness(length: float, radius: float, q: float, segments: int,
                         youngs_modulus: float, shear_modulus: float,
                         core_radius: float = 0.0, core_modulus_ratio: float = 1.0,
                         fork_height: float | None = None, fork_leaders: int = 1) -> np.ndarray:
    """(segments, 3) N m/rad, [bend, bend, twist] in limb axes, of the joints of a tapered stem
    r(z) = radius·((H − z)/H)^q: each joint the spring of the stem between the mid-heights of
    the limbs it joins (the root: from the ground to the first limb's mid-height), with the
    section's flexibility integrated, k = E / ∫ dz / I(z) (8-point Gauss–Legendre), rather than
    the limb's mid-height radius: a stiffness error of order the taper across half a limb.

    A juvenile core (`core_radius` m, its modulus `core_modulus_ratio` × E) is a cylinder of
    that radius along the whole stem, as the first rings from the pith are at every height
    (Zobel & Sprague 1998, Juvenile Wood in Forest Trees): the section's stiffness is
    E·(I(r) − (1 − ratio)·I(min(core_radius, r))), so where the stem is thinner than the core
    (its top) all of it has the core's modulus.

    A fork (`fork_height` m, `fork_leaders` n): above it the stem stands for n identical leaders
    that share its cross-section equally (the pipe model), each of radius r(z)/√n, swaying
    together as in the tree's lowest sway: their second moments add up to I(z)/n, their mass to
    the single stem's. The flexibility integral is split at the fork."""
    h = length / segments
    low = np.maximum((np.arange(segments) - 0.5) * h, 0.0)
    high = (np.arange(segments) + 0.5) * h
    x, w = np.polynomial.legendre.leggauss(8)

    def flexibility(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """∫ dz / I(z) over [a, b] (m⁻³), zero where b ≤ a."""
        span = np.maximum(b - a, 0.0)
        z = 0.5 * (a + b)[:, None] + 0.5 * span[:, None] * x[None, :]
        r = radius * (np.maximum(length - z, 0.0) / length) ** q
        second_moment = stem_second_moment(r, core_radius, core_modulus_ratio)
        return np.where(span > 0.0, 0.5 * span * (w[None, :] / np.where(
            span[:, None] > 0.0, second_moment, 1.0)).sum(axis=1), 0.0)

    if fork_height is None or fork_leaders == 1:
        compliance = flexibility(low, high)
    else:
        fork = np.clip(float(fork_height), low, high)
        compliance = flexibility(low, fork) + fork_leaders * flexibility(fork, high)
    bend = youngs_modulus / compliance
    return np.stack([bend, bend, shear_modulus * 2.0 / compliance], axis=1)


def _masses(gen: dict, is_trunk: np.ndarray, length: np.ndarray, radius: np.ndarray,
            leaf_area: np.ndarray, density: float | None, error: ErrorFactory):
    """Limb masses (N,) kg, or None where the tree model derives them from the density: branch
    wood scaled to ``branch_mass`` by volume, plus ``leaf_mass_per_area`` × leaf area (all
    None without a density)."""
    branch_mass = gen.get("branch_mass")
    leaf_mass = float(gen.get("leaf_mass_per_area", 0.0)) * leaf_area
    if branch_mass is None and not np.any(leaf_mass):
        return [None] * len(length)
    if density is None:  # no material given: the tree model derives every mass
        return [None] * len(length)
    wood = density * np.pi * radius ** 2 * length
    branches = ~is_trunk
    if branch_mass is not None and np.any(branches):
        wood[branches] *= float(branch_mass) / wood[branches].sum()
    explicit = branches if branch_mass is not None else np.zeros(len(length), dtype=bool)
    explicit |= leaf_mass > 0.0
    total = wood + leaf_mass
    return [float(total[i]) if explicit[i] else None for i in range(len(length))]


def generate(gen: dict, error: ErrorFactory | None = None,
             material: dict | None = None) -> list[dict]:
    """Build the explicit limb list (schema.LIMB form, every key present) of a generated tree.

    Parameters
    ----------
    gen : dict
        The complete ``tree.generator`` mapping: every schema.GENERATOR key, ``trunk`` nested.
    error : callable (key_path, message) -> Exception, optional
        Makes the exception raised for a refused generator (default: PresetError
        ``"key_path: message"``).
    material : dict, optional
        The preset's ``material`` (density kg/m³, youngs_modulus Pa, poisson_ratio): needed
        when the generator sets masses (``branch_mass``, ``leaf_mass_per_area``) or a tapered
        stem's joint stiffnesses (``stem_form``) itself.

    Returns
    -------
    list of dict
        One mapping per limb, parents before children, in the generator's order (module
        doc). ``rest_rotation_deg`` is the rotation vector (deg) of the limb's rest frame
        relative to its parent's rest frame (root: relative to the inertial frame, z up):
        C_If = C_Ip · exp(rest_rotation). ``inertia`` and ``damping`` are None (derived
        from the material by the tree model); so are ``mass`` (except for limbs whose mass
        ``branch_mass`` or ``leaf_mass_per_area`` sets) and ``stiffness`` (except the root's
        when ``root_stiffness`` is given).
    """
    error = error or _default_error
    max_limbs = int(gen["max_limbs"])
    n_limbs = count_limbs(gen, error)
    if n_limbs > max_limbs:
        raise error(f"{_KEY}.max_limbs", f"the generator would make {n_limbs:,} limbs, "
                    f"more than max_limbs = {max_limbs:,}")

    rng = np.random.default_rng(int(gen["seed"]))
    jitter = float(gen["jitter"])
    trunk = gen["trunk"]
    trunk_length = float(trunk["length"])
    trunk_segments = int(trunk["segments"])
    whorls = _check_whorls(gen, error)
    children = _per_level(gen, "children", error)
    segments = _per_level(gen, "segments", error)
    branch_angle = math.radians(float(gen["branch_angle_deg"]))
    azimuth_step = math.radians(float(gen["azimuth_step_deg"]))
    length_ratio = _per_level_float(gen, "length_ratio", 0.7)
    whorl_length_ratio = float(gen.get("whorl_length_ratio", 0.3))
    droop = np.radians(_per_level_float(gen, "droop_deg", 0.0))
    droop_level = int(gen.get("droop_level", 1))

    names: list[str] = [f"trunk{k}" for k in range(trunk_segments)]
    parent = np.full(n_limbs, -1)
    length = np.empty(n_limbs)
    C_IF = np.empty((n_limbs, 3, 3))  # rest orientation, limb → inertial
    parent[1:trunk_segments] = np.arange(trunk_segments - 1)
    length[:trunk_segments] = trunk_length / trunk_segments
    C_IF[:trunk_segments] = np.eye(3)

    # The branchings of the next level: the limbs whose tips carry them, the name prefixes
    # of their branches, the parent branch lengths and the whorl numbers (-1: none).
    if whorls == 0:
        tips = np.array([trunk_segments - 1])
        prefixes = [""]
        parent_length = np.array([trunk_length])
        whorl = np.array([-1])
    else:
        spacing = int(gen.get("whorl_spacing", 1))
        tips = trunk_segments - 1 - spacing * np.arange(whorls, 0, -1)
        prefixes = [""] * whorls
        parent_length = trunk_length - (tips + 1) * (trunk_length / trunk_segments)
        whorl = np.arange(whorls)

    n = trunk_segments
    for level, (n_children, n_segments) in enumerate(zip(children, segments), start=1):
        m = len(tips)
        n_branches = m * n_children
        offset = jitter * math.pi * rng.uniform(-1.0, 1.0, m)
        vary = 1.0 + jitter * rng.uniform(-1.0, 1.0, (n_branches, 3))  # length, tilt, droop
        kink = rng.uniform(-1.0, 1.0, (n_branches, n_segments - 1, 2))  # angle, azimuth

        k = np.tile(np.arange(n_children), m)
        of = np.repeat(np.arange(m), n_children)  # the branching each branch grows from
        if whorls and level == 1:
            azimuth = 2.0 * math.pi * k / n_children + whorl[of] * azimuth_step + offset[of]
            branch_length = whorl_length_ratio * parent_length[of] * vary[:, 0]
            branch_names = [f"b{w * n_children + j}" for w, j in zip(whorl[of], k)]
        else:
            azimuth = k * azimuth_step + offset[of]
            branch_length = length_ratio[level - 1] * parent_length[of] * vary[:, 0]
            branch_names = [f"{prefixes[i]}.{j}" if prefixes[i] else f"b{j}"
                            for i, j in zip(of, k)]
        tilt = np.clip(branch_angle * vary[:, 1], 0.0, math.pi)
        bend = (droop[level - 1] if level >= droop_level else 0.0) * vary[:, 2]

        # Limb j of branch b is n + b·n_segments + j: each branch's limbs are consecutive.
        first = n + n_segments * np.arange(n_branches)
        C = _droop(C_IF[tips[of]] @ _about_z(azimuth) @ _about_y(tilt), bend)
        C_IF[first], parent[first] = C, tips[of]
        for j in range(1, n_segments):
            kink_azimuth = math.pi * kink[:, j - 1, 1]
            axis = np.stack([np.cos(kink_azimuth), np.sin(kink_azimuth),
                             np.zeros(n_branches)], -1)
            C = _droop(C @ _rotations(axis, jitter * branch_angle * np.abs(kink[:, j - 1, 0])),
                       bend)
            C_IF[first + j], parent[first + j] = C, first + j - 1
        for j in range(n_segments):
            length[first + j] = branch_length / n_segments
        names.extend(f"{name}.s{j}" if j else name
                     for name in branch_names for j in range(n_segments))

        n += n_branches * n_segments
        tips, prefixes, parent_length = first + n_segments - 1, branch_names, branch_length
    if n != n_limbs:
        raise AssertionError(f"generator made {n} limbs, count_limbs said {n_limbs}")

    terminal = np.ones(n, dtype=bool)
    terminal[parent[parent >= 0]] = False
    # Pipe model: r^e ∝ the length of terminal limbs carried; children come after parents.
    carried = np.where(terminal, length, 0.0)
    for i in range(n - 1, 0, -1):
        carried[parent[i]] += carried[i]
    exponent = float(gen["radius_exponent"])
    radius = float(trunk["radius"]) * (carried / carried[0]) ** (1.0 / exponent)
    if gen.get("stem_form") is not None:  # a tapered stem instead of the pipe model's
        radius[:trunk_segments] = stem_radii(trunk_length, float(trunk["radius"]),
                                             float(gen["stem_form"]), trunk_segments)

    C_parent = np.where(parent[:, None, None] >= 0, C_IF[np.maximum(parent, 0)], np.eye(3))
    relative = np.einsum("nji,njk->nik", C_parent, C_IF)  # C_Ip^T C_If
    rest = np.degrees(so3.log_many(np.ascontiguousarray(relative)))
    rest[np.abs(rest) < 1e-12] = 0.0  # exact zeros for straight joints (no "-0.0" noise)

    leaves = 0.0 if gen.get("leafless", False) else float(gen["leaf_area"])
    leaf_area = _leaf_areas(parent, terminal, leaves, int(gen.get("leaf_limbs", 1)))
    is_trunk = np.arange(n) < trunk_segments
    density = None if material is None else float(material["density"])
    mass = _masses(gen, is_trunk, length, radius, leaf_area, density, error)
    stiffness: list = [None] * n
    if gen.get("stem_form") is not None and material is not None:
        E = float(material["youngs_modulus"])
        G = E / (2.0 * (1.0 + float(material["poisson_ratio"])))
        stem = stem_joint_stiffness(trunk_length, float(trunk["radius"]),
                                    float(gen["stem_form"]), trunk_segments, E, G,
                                    float(gen.get("juvenile_radius") or 0.0),
                                    float(gen.get("juvenile_modulus_ratio", 1.0)),
                                    gen.get("fork_height"), int(gen.get("fork_leaders", 1)))
        stiffness[:trunk_segments] = [[float(k) for k in row] for row in stem]
    if gen.get("root_stiffness") is not None:
        # The root plate in series with the stem's lowest half limb (or replacing the root
        # joint's spring when the stem is not tapered, which has no half-limb model here).
        k_root = float(gen["root_stiffness"])
        if stiffness[0] is None:
            stiffness[0] = k_root
        else:
            stiffness[0] = [1.0 / (1.0 / k + 1.0 / k_root) for k in stiffness[0]]
    parent_names = [names[p] if p >= 0 else None for p in parent.tolist()]
    return [{
        "name": names[i],
        "parent": parent_names[i],
        "length": float(length[i]),
        "radius": float(radius[i]),
        "direction": [0.0, 0.0, 1.0],
        "rest_rotation_deg": [float(v) for v in rest[i]],
        "spring_rest_rotation_deg": None,
        "attach": 1.0,
        "mass": mass[i],
        "inertia": None,
        "com": 0.5,
        "stiffness": stiffness[i],
        "damping": None,
        "leaf_area": float(leaf_area[i]),
    } for i in range(n)]
