"""A scanned tree (`tree.scan`, docs/scans.md): a QSM's cylinders → an explicit limb list.

The conversion is mechanics, in six steps (`scan_limbs`):

1. Repairs (`repair`), each counted in the one line `ScanLimbs.summary`: a cylinder of zero
   length (≤ `MIN_CYLINDER_LENGTH`) or with a length, start or axis that is not a number is
   dropped and its children hang from its parent; an axis that is not a unit vector is
   normalised; of several roots, the one carrying the most wood is the stem and the others
   (with their cylinders) are dropped; a branch that starts off its parent's axis is attached
   at the nearest point of it (counted when further than the two radii; refused beyond
   `FAR_CHILD_DISTANCE`). A degenerate root is refused, and so is what `qsm_read` refuses
   (negative or NaN radii, parents outside the table, cycles, lengths not in metres).
2. Thin branches (`taper_thin_branches`): a laser scan inflates the radii of branches thinner
   than its beam and registration resolve, so a cylinder thinner than ``reliable_radius``
   (2.5 cm: Demol et al. 2022 found 80 % of two ashes' QSM excess wood in branches under 5 cm
   in diameter) takes at most the radius of the pipe model (Shinozaki et al. 1964) from its
   nearest reliable ancestor a down to the species' twig radius r_t (``twig_radius``,
   Morales & MacFarlane 2024's twig database): r² = r_t² + (r_a² − r_t²)·G/G_a, G the
   growth length (the cylinder's length and all it carries). Counted in the summary.
3. Folding: a cylinder thinner than ``min_radius``, or carried by one, is no limb of its own.
   Its wood (and, in leaf, the foliage of the tips it carries) is a point mass on the limb
   that carries it, where its thin branch starts.
4. Branches and limbs: a branch is a chain of cylinders, each continued by its
   ``extension`` (else by the child of the same ``branch``, else by its thickest child that
   starts on its last quarter, `END_FRACTION`).
   Along a branch the cylinders are cut (a cylinder longer than ``limb_length`` into equal
   pieces) and merged into limbs of about ``limb_length``. A limb runs straight from its
   first piece's start to its last piece's end; its length is the pieces' length along the
   branch. A branch that starts part-way along a cylinder is attached there: at its arc
   position along the parent limb (``attach``).
5. Mass: each piece a solid cylinder of ``material.density`` (inertia about the limb's axis
   from its own radius, across it from its length and its place along the limb); folded wood
   and foliage as point masses on the axis.
6. Joints: the beam-piece springs of docs/design.md §6.4 with the flexibility integrated over
   the cylinders' own sections, k = E_Y / ∫ dz/I(z) (bending; twist 2G/∫ dz/I): from the
   parent limb's mid-length to this limb's along one branch, from the base to mid-length at
   a branching and at the stem base, where the root plate of the species' anchorage
   (`anchorage.root_stiffness` from the stem's fresh mass) is in series.

Foliage (in leaf): the tree's fresh foliage mass is its wood mass times the species' fresh
foliage-to-wood ratio (`species.fresh_fractions` at the scan's height and DBH), its leaf area
that over the species' leaf mass per area; the tips (cylinders without children) share it by
the pipe model (Shinozaki et al. 1964, Jpn. J. Ecol. 14: 97–105): each in proportion to its
cross-section.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..numerics import so3
from . import anchorage, species
from .qsm_read import Cylinders, read_cylinders

# A cylinder this short (m) or shorter is degenerate (dropped, its children re-hung).
MIN_CYLINDER_LENGTH = 1e-6
# An axis whose length differs from 1 by more than this is counted as normalised.
AXIS_TOLERANCE = 1e-3
# A branch starting further than this (m) from its parent's axis is refused: no rule makes
# it part of that tree (a segmentation error of the QSM).
FAR_CHILD_DISTANCE = 1.0
BREAST_HEIGHT = 1.3  # m
# Without extension or branch columns, a child continues its parent's branch only if it starts
# beyond this fraction of the parent's length.
END_FRACTION = 0.75

_KEY = "tree.scan"


@dataclass
class Repaired:
    """The cylinder table after the repairs of step 1 (`repair`): ``alive`` marks the
    cylinders kept, ``parent`` re-hung past dropped ones, ``axis`` unit, ``counts`` the
    repairs by kind."""

    cylinders: Cylinders
    alive: np.ndarray
    parent: np.ndarray
    axis: np.ndarray
    root: int
    counts: dict


@dataclass
class ScanLimbs:
    """A converted scan: the limb list (schema.LIMB form, preset order), its summary line, its
    height and DBH (m), and the root plate's stiffness (N m/rad) in series in the root joint
    (None: the stem's base is clamped)."""

    limbs: list[dict]
    summary: str
    height: float
    dbh: float
    root_stiffness: float | None


def _error(path: str, message: str, error=None) -> Exception:
    from ..errors import PresetError

    return error(path, message) if error is not None else PresetError(f"{path}: {message}")


def repair(cylinders: Cylinders) -> Repaired:
    """Step 1 of the module docstring (no cylinder is moved; the far-child rule is applied
    when limbs are attached)."""
    name = cylinders.source
    n = cylinders.n
    axis = cylinders.axis.copy()
    norm = np.linalg.norm(axis, axis=1)
    finite = np.isfinite(cylinders.length) & np.all(np.isfinite(cylinders.start), axis=1) \
        & np.isfinite(norm)
    degenerate = ~finite | ~(cylinders.length > MIN_CYLINDER_LENGTH) | ~(norm > 0.0)
    normalised = ~degenerate & (np.abs(norm - 1.0) > AXIS_TOLERANCE)
    axis[~degenerate] /= norm[~degenerate, None]
    alive = ~degenerate
    parent = cylinders.parent.copy()
    roots = np.flatnonzero(parent < 0)
    if np.any(degenerate[roots]):
        i = int(roots[np.flatnonzero(degenerate[roots])[0]])
        raise _error(name, f"cylinder {i + 1}: a root (parent 0) of zero length or with a "
                           f"value that is not a number; no rule can replace it")
    # Re-hang children past dropped cylinders (pointer jumping: O(N log depth)).
    while True:
        hop = (parent >= 0) & ~alive[np.maximum(parent, 0)]
        if not np.any(hop):
            break
        parent[hop] = parent[parent[hop]]
    order = _topological(parent, alive)
    volume = np.where(alive, cylinders.radius ** 2 * np.where(finite, cylinders.length, 0.0),
                      0.0)
    carried = volume.copy()
    for i in order[::-1]:
        if parent[i] >= 0:
            carried[parent[i]] += carried[i]
    root = int(roots[np.argmax(carried[roots])])
    top = np.arange(n)
    for i in order:   # parents first: each cylinder's root
        if parent[i] >= 0:
            top[i] = top[parent[i]]
    other_roots = alive & (top != root)
    alive &= ~other_roots
    counts = {"zero-length or not-a-number cylinder(s) dropped": int(degenerate.sum()),
              "axis vector(s) normalised": int(normalised.sum()),
              "cylinder(s) of a second root dropped": int(other_roots.sum())}
    return Repaired(cylinders, alive, parent, axis, root, counts)


def taper_thin_branches(radius: np.ndarray, length: np.ndarray, parent: np.ndarray,
                        order: np.ndarray, twig_radius: float,
                        reliable_radius: float) -> np.ndarray:
    """The radii (m) of step 2's thin branches (module docstring): each cylinder of ``order``
    (alive, parents first) thinner than reliable_radius (m) and not a root takes the smaller of
    its radius and the pipe model's from its nearest ancestor at least that thick (else the
    root) to twig_radius (m) at zero growth length. length (N,) m, 0 for dropped cylinders."""
    radii = radius.copy()
    growth = length.astype(np.float64).copy()
    for i in order[::-1]:   # children first: each cylinder's growth length
        if parent[i] >= 0:
            growth[parent[i]] += growth[i]
    anchor = np.full(len(radius), -1)
    tip2 = twig_radius * twig_radius
    for i in order:
        p = parent[i]
        anchor[i] = i if (p < 0 or radius[i] >= reliable_radius) else anchor[p]
        a = anchor[i]
        if a != i and growth[a] > 0.0:
            pipe = math.sqrt(tip2 + (radius[a] ** 2 - tip2) * growth[i] / growth[a])
            radii[i] = min(radius[i], pipe)
    return radii


def _twig_radius(scan: dict) -> float:
    """The twig radius (m) thin branches taper to: given, else the species' (0: none)."""
    if scan.get("twig_radius") is not None:
        return float(scan["twig_radius"])
    name = scan.get("species")
    entry = species.entry(name).get("twig_radius") if name else None
    return float(entry["value"]) if entry else 0.0


def _topological(parent: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Indices of the alive cylinders, parents before children (breadth-first from roots)."""
    n = len(parent)
    valid = alive & ((parent < 0) | alive[np.maximum(parent, 0)])
    children_order = np.argsort(np.where(valid & (parent >= 0), parent, n), kind="stable")
    count = np.bincount(parent[valid & (parent >= 0)], minlength=n)
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    order = list(np.flatnonzero(valid & (parent < 0)))
    head = 0
    while head < len(order):
        i = order[head]
        order.extend(children_order[first[i]:first[i] + count[i]].tolist())
        head += 1
    return np.array(order, dtype=np.int64)


@dataclass
class _Limb:
    branch_head: int        # first cylinder of the branch
    pieces: list            # (cylinder, s0, s1): the part s0…s1 (fractions) of a cylinder
    arc0: float             # arc length along the branch where the limb starts, m
    arc1: float


def scan_limbs(scan: dict, data: dict, base: Path | None = None, error=None) -> ScanLimbs:
    """The limbs of the scan `scan` (a validated ``tree.scan`` mapping) of the preset `data`
    (its material, root_position). `error(key_path, message)` makes the exception for a
    limit (max_limbs) or a geometry no rule mends. File problems name the file."""
    path = Path(scan["file"])
    if base is not None and not path.is_absolute():
        path = base / path
    try:
        info = os.stat(path)
        stamp = (info.st_mtime_ns, info.st_size)
    except OSError:
        stamp = None
    if stamp is None:
        raise _error(f"{_KEY}.file", f"{scan['file']}: no such file", error)
    material = data["material"]
    key = (str(path.resolve()), stamp, _frozen(scan),
           tuple(float(material[k]) for k in ("density", "youngs_modulus", "poisson_ratio")))
    result = _convert_cached(key)
    if isinstance(result, Exception):
        raise result
    if int(scan["max_limbs"]) < len(result.limbs):
        raise _error(f"{_KEY}.max_limbs", f"the scan makes {len(result.limbs):,} limbs, more "
                     f"than max_limbs = {int(scan['max_limbs']):,} (raise it, or "
                     f"tree.scan.min_radius or tree.scan.limb_length)", error)
    return ScanLimbs([dict(limb) for limb in result.limbs], result.summary, result.height,
                     result.dbh, result.root_stiffness)


def _frozen(scan: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in scan.items() if k not in ("file", "max_limbs")))


_reported: set = set()


@functools.lru_cache(maxsize=4)
def _convert_cached(key: tuple):
    path, _stamp, frozen, (density, E, nu) = key
    scan = dict(frozen)
    try:
        cylinders = read_cylinders(path, int(scan.get("model", 0)))
        result = convert(cylinders, scan, {"density": density, "youngs_modulus": E,
                                            "poisson_ratio": nu})
    except Exception as exc:  # cached too: a bad file is refused as fast as a good one loads
        from ..errors import TreedynError

        if isinstance(exc, TreedynError):
            return exc
        raise
    if key not in _reported:
        _reported.add(key)
        print(result.summary, file=sys.stderr)
    return result


def convert(cylinders: Cylinders, scan: dict, material: dict) -> ScanLimbs:
    """Steps 1–6 of the module docstring: the limb list of `cylinders`. `scan` holds the
    ``tree.scan`` keys (min_radius m, limb_length m, species, leafless, leaf_area m²,
    leaf_mass_per_area kg/m², root_stiffness N m/rad); `material` density kg/m³,
    youngs_modulus Pa, poisson_ratio."""
    name = cylinders.source
    fixed = repair(cylinders)
    alive, parent, axis = fixed.alive, fixed.parent, fixed.axis
    r, L, start = cylinders.radius, np.where(alive, cylinders.length, 0.0), cylinders.start
    n = cylinders.n
    order = _topological(parent, alive)
    order = order[alive[order]]
    twig = _twig_radius(scan)
    thinned = ""
    if twig > 0.0:
        read = r
        r = taper_thin_branches(read, L, parent, order, twig, float(scan["reliable_radius"]))
        fewer = r < read
        if np.any(fewer):
            before = float((read[alive] ** 2 * L[alive]).sum())
            after = float((r[alive] ** 2 * L[alive]).sum())
            thinned = (f"; {int(fewer.sum()):,} thin cylinders tapered to {twig * 1e3:.3g} mm "
                       f"twigs (wood −{100.0 * (1.0 - after / before):.0f} %)")

    # Step 3: kept cylinders, and each folded one's nearest kept ancestor.
    min_radius = float(scan.get("min_radius", 0.0))
    kept = np.zeros(n, dtype=bool)
    owner = np.full(n, -1)
    for i in order:
        p = parent[i]
        if p < 0:
            kept[i] = True
        else:
            kept[i] = kept[p] and r[i] >= min_radius
        owner[i] = i if kept[i] else owner[p]
    children = [[] for _ in range(n)]
    for i in order:
        if parent[i] >= 0:
            children[parent[i]].append(i)

    # Step 4: continuations, branches, pieces and limbs.
    extension = cylinders.extension
    continuation = np.full(n, -1)
    for i in np.flatnonzero(kept):
        candidates = [c for c in children[i] if kept[c]]
        if not candidates:
            continue
        choice = -1
        if extension is not None and 0 <= extension[i] < n and extension[i] in candidates:
            choice = int(extension[i])
        elif cylinders.branch is not None:
            same = [c for c in candidates if cylinders.branch[c] == cylinders.branch[i]]
            choice = max(same, key=lambda c: r[c]) if same else -1
        if choice < 0 and (extension is None and cylinders.branch is None):
            # No extension or branch column: the thickest child starting on the last
            # quarter of this cylinder (a child starting lower is a side branch).
            ends = [c for c in candidates
                    if _projection(start[c], start[i], axis[i], L[i])[0] > END_FRACTION]
            choice = max(ends, key=lambda c: r[c]) if ends else -1
        continuation[i] = choice
    is_continuation = np.zeros(n, dtype=bool)
    is_continuation[continuation[continuation >= 0]] = True
    heads = [i for i in order if kept[i] and not is_continuation[i]]

    limb_length = float(scan["limb_length"])
    limbs: list[_Limb] = []
    limb_of_arc = {}          # branch head → (limb starts (arc), limb indices)
    arc_start = np.zeros(n)   # each kept cylinder's arc position along its branch, m
    branch_of = np.full(n, -1)
    for head in heads:
        chain, i = [], head
        while i >= 0:
            chain.append(i)
            i = int(continuation[i])
        pieces, arc = [], 0.0
        for c in chain:
            arc_start[c], branch_of[c] = arc, head
            k = max(1, int(math.ceil(L[c] / limb_length - 1e-9)))
            pieces.extend((c, j / k, (j + 1) / k, L[c] / k) for j in range(k))
            arc += L[c]
        first = len(limbs)
        current, acc, arc0 = [], 0.0, 0.0
        for piece in pieces:
            # Close the limb where that leaves it nearer limb_length (a tie within round-off,
            # 1e-6 of it, merges: the same limbs whatever the file's digits).
            if current and abs(acc - limb_length) + 1e-6 * limb_length \
                    < abs(acc + piece[3] - limb_length):
                limbs.append(_Limb(head, current, arc0, arc0 + acc))
                current, arc0, acc = [], arc0 + acc, 0.0
            current.append(piece)
            acc += piece[3]
        limbs.append(_Limb(head, current, arc0, arc0 + acc))
        limb_of_arc[head] = (np.array([limbs[j].arc0 for j in range(first, len(limbs))]),
                             np.arange(first, len(limbs)))

    def locate(head: int, arc: float) -> tuple[int, float]:
        """(limb, arc within it, m) of the point `arc` m along branch `head`."""
        starts, index = limb_of_arc[head]
        k = max(0, int(np.searchsorted(starts, arc, side="right")) - 1)
        limb = int(index[k])
        return limb, min(max(arc - limbs[limb].arc0, 0.0), limbs[limb].arc1 - limbs[limb].arc0)

    def point(c: int, s: float) -> np.ndarray:
        return start[c] + s * L[c] * axis[c]

    # Attachments: each branch's first limb on its parent cylinder's limb, at the projection
    # of its start on the parent's axis (the far-child rule).
    far = 0
    n_limbs = len(limbs)
    limb_parent = np.full(n_limbs, -1)
    attach = np.ones(n_limbs)
    for j in range(1, n_limbs):
        if limbs[j].arc0 > 0.0:
            limb_parent[j] = j - 1
    for head in heads:
        j = int(limb_of_arc[head][1][0])
        p = parent[head]
        if p < 0:
            continue
        t, gap = _projection(start[head], start[p], axis[p], L[p])
        if gap > FAR_CHILD_DISTANCE:
            raise _error(name, f"cylinder {head + 1} starts "
                              f"{gap:.3g} m from the axis of its parent, cylinder {p + 1}; "
                              f"a branch more than {FAR_CHILD_DISTANCE:g} m off its parent "
                              f"is no part of it (a segmentation error of the QSM?)")
        if gap > r[p] + r[head]:
            far += 1
        pj, within = locate(branch_of[p], arc_start[p] + t * L[p])
        limb_parent[j] = pj
        attach[j] = within / (limbs[pj].arc1 - limbs[pj].arc0)

    # Geometry: each limb a chord from its first piece's start to its last piece's end.
    base_point = np.array([point(lb.pieces[0][0], lb.pieces[0][1]) for lb in limbs])
    tip_point = np.array([point(lb.pieces[-1][0], lb.pieces[-1][2]) for lb in limbs])
    chord = tip_point - base_point
    chord_length = np.linalg.norm(chord, axis=1)
    direction = np.where(chord_length[:, None] > 0.0, chord / np.maximum(chord_length, 1e-300)
                         [:, None], np.array([0.0, 0.0, 1.0]))
    length = np.array([lb.arc1 - lb.arc0 for lb in limbs])

    # Step 5: mass, centre of mass and inertia about it, in limb axes (z along the limb).
    density = float(material["density"])
    # The pieces as flat arrays: cylinder, length (m), limb, offset of its start in the limb (m).
    piece_cylinder = np.array([c for lb in limbs for c, _, _, _ in lb.pieces], dtype=np.int64)
    piece_length = np.array([ell for lb in limbs for _, _, _, ell in lb.pieces])
    piece_limb = np.repeat(np.arange(n_limbs), [len(lb.pieces) for lb in limbs])
    piece_end = np.cumsum(piece_length)
    limb_first = np.searchsorted(piece_limb, np.arange(n_limbs))
    limb_offset = np.concatenate([[0.0], piece_end])[limb_first]
    piece_s = piece_end - piece_length - limb_offset[piece_limb]
    piece_r = r[piece_cylinder]
    piece_mass = density * np.pi * piece_r ** 2 * piece_length
    centre = piece_s + 0.5 * piece_length
    mass = np.bincount(piece_limb, piece_mass, n_limbs)
    first_moment = np.bincount(piece_limb, piece_mass * centre, n_limbs)  # Σ m s (kg m)
    # Σ m s² with each piece's own ℓ²/12 (kg m²), and Σ m r² (axial inertia × 2)
    second_moment = np.bincount(piece_limb, piece_mass * (centre ** 2 + piece_length ** 2 / 12.0),
                                n_limbs)
    radial = np.bincount(piece_limb, piece_mass * piece_r ** 2, n_limbs)
    volume_r2 = np.bincount(piece_limb, piece_r ** 2 * piece_length, n_limbs)  # drawn radius
    wood_kept = float(mass.sum())

    # Folded cylinders: at the start of their thin branch on the carrying limb.
    anchor_limb = np.full(n, -1)
    anchor_s = np.zeros(n)
    for i in order:
        if kept[i]:
            continue
        p = parent[i]
        if kept[p]:
            t, _ = _projection(start[i], start[p], axis[p], L[p])
            anchor_limb[i], anchor_s[i] = locate(branch_of[p], arc_start[p] + t * L[p])
        else:
            anchor_limb[i], anchor_s[i] = anchor_limb[p], anchor_s[p]
    folded = np.flatnonzero(alive & ~kept)
    folded_mass = density * math.pi * r[folded] ** 2 * L[folded]
    np.add.at(mass, anchor_limb[folded], folded_mass)
    np.add.at(first_moment, anchor_limb[folded], folded_mass * anchor_s[folded])
    np.add.at(second_moment, anchor_limb[folded], folded_mass * anchor_s[folded] ** 2)

    # Height, DBH, stem mass (the root's branch).
    root_head = fixed.root
    ground = start[root_head]
    tips_z = np.concatenate([start[alive, 2], (start[alive] + L[alive, None] * axis[alive])[:, 2]])
    height = float(tips_z.max() - ground[2])
    stem = [c for c in order if branch_of[c] == root_head]
    dbh = 2.0 * _radius_at_height(stem, start, axis, L, r, ground[2] + BREAST_HEIGHT)
    stem_mass = density * math.pi * float(sum(r[c] ** 2 * L[c] for c in stem))

    # Foliage: leaf area and mass at the tips' anchors.
    leaf_area = np.zeros(n_limbs)
    total_area = _leaf_area(scan, height, dbh, density * math.pi * float(
        (r[alive] ** 2 * L[alive]).sum()))
    lma = _leaf_mass_per_area(scan)
    if total_area > 0.0:
        has_child = np.zeros(n, dtype=bool)
        has_child[parent[alive & (parent >= 0)]] = True
        tips = np.flatnonzero(alive & ~has_child)
        share = r[tips] ** 2 / float((r[tips] ** 2).sum())
        tip_limb = np.empty(len(tips), dtype=np.int64)
        tip_s = np.empty(len(tips))
        for k, c in enumerate(tips):
            if kept[c]:
                tip_limb[k], tip_s[k] = locate(branch_of[c], arc_start[c] + 0.5 * L[c])
            else:
                tip_limb[k], tip_s[k] = anchor_limb[c], anchor_s[c]
        np.add.at(leaf_area, tip_limb, total_area * share)
        leaf_mass = lma * total_area * share
        np.add.at(mass, tip_limb, leaf_mass)
        np.add.at(first_moment, tip_limb, leaf_mass * tip_s)
        np.add.at(second_moment, tip_limb, leaf_mass * tip_s ** 2)

    com = first_moment / mass
    transverse = second_moment - mass * com ** 2 + radial / 4.0
    axial = radial / 2.0
    drawn_radius = np.sqrt(volume_r2 / length)

    # Step 6: joint springs from the integrated flexibility ∫ dz / I(z) over the half limbs.
    E = float(material["youngs_modulus"])
    G = E / (2.0 * (1.0 + float(material["poisson_ratio"])))
    inverse = 4.0 / (np.pi * piece_r ** 4)
    below = np.clip(0.5 * length[piece_limb] - piece_s, 0.0, piece_length)
    # ∫ dz/I (m⁻³) from each limb's base to its mid-length, and from there to its end
    lower = np.bincount(piece_limb, below * inverse, n_limbs)
    upper = np.bincount(piece_limb, (piece_length - below) * inverse, n_limbs)
    along = np.array([limb_parent[j] >= 0 and limbs[j].arc0 > 0.0 for j in range(n_limbs)])
    flexibility = lower + np.where(along, upper[np.maximum(limb_parent, 0)], 0.0)
    k_bend, k_twist = E / flexibility, 2.0 * G / flexibility
    root_plate = _root_stiffness(scan, stem_mass)
    stiffness = np.stack([k_bend, k_bend, k_twist], axis=1)
    if root_plate is not None:
        stiffness[0] = 1.0 / (1.0 / stiffness[0] + 1.0 / root_plate)

    rest = _rest_rotations(direction, limb_parent)
    names = [_limb_name(lb) for lb in limbs]
    out = [{
        "name": names[j],
        "parent": names[limb_parent[j]] if limb_parent[j] >= 0 else None,
        "length": float(length[j]),
        "radius": float(drawn_radius[j]),
        "direction": [0.0, 0.0, 1.0],
        "rest_rotation_deg": [float(v) for v in rest[j]],
        "spring_rest_rotation_deg": None,
        "attach": float(min(max(attach[j], 0.0), 1.0)),
        "mass": float(mass[j]),
        "inertia": [float(transverse[j]), float(transverse[j]), float(axial[j])],
        "com": float(min(max(com[j] / length[j], 0.0), 1.0)),
        "stiffness": [float(k) for k in stiffness[j]],
        "damping": None,
        "leaf_area": float(leaf_area[j]),
    } for j in range(n_limbs)]

    counts = dict(fixed.counts)
    counts["branch(es) attached to their parent's axis from further than the two radii"] = far
    repairs = "; ".join(f"{v:,} {k}" for k, v in counts.items() if v) or "none needed"
    summary = (f"scan {name}: {int(alive.sum()):,} cylinders → {n_limbs:,} limbs "
               f"({int((alive & ~kept).sum()):,} thinner than min_radius folded in; "
               f"{wood_kept + folded_mass.sum():.4g} kg of wood, {total_area:.4g} m² of "
               f"leaves; height {height:.3g} m, DBH {dbh:.3g} m{thinned}); repairs: {repairs}")
    return ScanLimbs(out, summary, height, dbh, root_plate)


def _projection(point, start, axis, length) -> tuple[float, float]:
    """(t, gap): the fraction t ∈ [0, 1] along a cylinder (start, unit axis, length m) of the
    point of its axis nearest `point`, and their distance (m)."""
    t = float(np.dot(point - start, axis)) / length if length > 0 else 0.0
    t = min(max(t, 0.0), 1.0)
    return t, float(np.linalg.norm(point - (start + t * length * axis)))


def _radius_at_height(stem, start, axis, L, r, z) -> float:
    """The radius (m) of the stem cylinder spanning height z (m), else the nearest one's."""
    best, distance = r[stem[0]], math.inf
    for c in stem:
        z0, z1 = start[c, 2], start[c, 2] + L[c] * axis[c, 2]
        low, high = min(z0, z1), max(z0, z1)
        d = 0.0 if low <= z <= high else min(abs(z - low), abs(z - high))
        if d < distance:
            best, distance = r[c], d
    return float(best)


def _leaf_area(scan: dict, height: float, dbh: float, wood_mass: float) -> float:
    """The tree's one-sided leaf area, m² (module docstring), 0 when leafless."""
    if scan.get("leafless"):
        return 0.0
    if scan.get("leaf_area") is not None:
        return float(scan["leaf_area"])
    name = scan.get("species")
    if name is None:
        return 0.0
    fresh = species.fresh_fractions(name, height, max(dbh, 1e-3))
    foliage_mass = wood_mass * fresh["foliage"] / (fresh["stem"] + fresh["branches"])
    return foliage_mass / float(species.entry(name)["foliage"]["leaf_mass_per_area"])


def _leaf_mass_per_area(scan: dict) -> float:
    if scan.get("leaf_mass_per_area") is not None:
        return float(scan["leaf_mass_per_area"])
    name = scan.get("species")
    return float(species.entry(name)["foliage"]["leaf_mass_per_area"]) if name else 0.0


def _root_stiffness(scan: dict, stem_mass: float) -> float | None:
    """The root plate's stiffness, N m/rad: given, else the species' anchorage, else None (the
    stem's base clamped)."""
    if scan.get("root_stiffness") is not None:
        return float(scan["root_stiffness"])
    name = scan.get("species")
    if name is None:
        return None
    moment = species.entry(name)["anchorage"]["turning_moment_per_stem_mass"]
    return anchorage.root_stiffness(float(moment), stem_mass)


def _rest_rotations(direction: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """(N, 3) deg: each limb's rest rotation relative to its parent's rest frame (root: to the
    inertial frame), the smallest rotation taking the parent's axis (z) to the limb's
    direction (N, 3, inertial); parents before children. One vectorised pass per depth."""
    n = len(direction)
    depth = np.zeros(n, dtype=np.int64)
    for j in range(1, n):
        if parent[j] >= 0:
            depth[j] = depth[parent[j]] + 1
    C_IF = np.empty((n, 3, 3))  # limb → inertial
    rotation = np.zeros((n, 3))
    for d in range(int(depth.max()) + 1):
        level = np.flatnonzero(depth == d)
        C_parent = C_IF[parent[level]] if d else np.broadcast_to(np.eye(3), (len(level), 3, 3))
        local = np.einsum("nji,nj->ni", C_parent, direction[level])  # parent axes
        sideways = np.hypot(local[:, 0], local[:, 1])
        angle = np.arctan2(sideways, local[:, 2])
        w = np.zeros((len(level), 3))
        turned = sideways > 0.0
        w[turned, 0] = -local[turned, 1] / sideways[turned] * angle[turned]
        w[turned, 1] = local[turned, 0] / sideways[turned] * angle[turned]
        w[~turned & (local[:, 2] < 0.0), 0] = np.pi   # straight down: half a turn about x
        rotation[level] = w
        C_IF[level] = C_parent @ so3.exp_many(w)
    degrees = np.degrees(rotation)
    degrees[np.abs(degrees) < 1e-12] = 0.0
    return degrees


def _limb_name(limb: _Limb) -> str:
    """``c12`` for a limb that starts with cylinder 12 of the file (1-based), ``c12.3`` where
    it starts with the third piece of a cut cylinder."""
    c, s0, s1, _ = limb.pieces[0]
    k = round(1.0 / (s1 - s0))
    piece = round(s0 * k)
    return f"c{c + 1}" if piece == 0 else f"c{c + 1}.{piece + 1}"
