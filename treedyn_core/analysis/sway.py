"""The sway frequency f0 a stem-mounted sensor reads (`treedyn modes`: ``sway_frequency_hz``).

Field studies (Moore & Maguire 2004, Trees 18; Jackson et al. 2019, J. R. Soc. Interface 16)
report f0 as the dominant spectral peak of the stem's motion, from an inclinometer or
accelerometer on the stem, the tree swayed by wind or let go from a pull. Here f0 is read
from the stem's receptance at the crown's centre:

- the crown's centre is the height of the centre of mass of the limbs off the stem (of the
  whole tree when it has none); a horizontal force acts on the stem at that height and the
  stem's horizontal displacement is read at the same point (along x and y, summed);
- the receptance H(ω), the trace of ``F (K − ω²M + iωC)⁻¹ Fᵀ`` (F (2, 3N) the generalized
  forces of unit forces along x and y, in the joint coordinates of `modes`), is the modal sum
  ``Σ_k |F φ_k|² / (ω_k² − ω² + 2iζ_k ω_k ω)`` (``φ_k`` mass-normalised, ζ_k its modal
  damping ratio, at least `MIN_PEAK_DAMPING`), plus the modes not computed as a static
  remainder: the compliance ``trace(F K⁻¹ Fᵀ)`` (one static solve) less the computed modes'
  shares ``|F φ_k|² / ω_k²``;
- f0 is the frequency of the mode that contributes most to the highest peak of |H|.

A single scaffold limb swaying alone barely moves the stem and holds almost none of its
compliance; where limbs of nearly the stem's frequency split the stem's sway among several
modes, their contributions merge into one peak, as in a sensor's spectrum; a twist moves the
stem's axis not at all. No threshold is involved.

Enough modes: a mode not computed holds at most the remainder of the compliance, so its own
peak is at most remainder/(2ζ), ζ at least the lowest computed (stiffness-proportional
damping grows with frequency). When that, plus |H| at the highest mode computed, is below
the peak found, and the peak lies `PEAK_MARGIN` below that mode, the sway is certain
(`SwaySearch.certain`); otherwise `modes` computes twice as many modes, up to
`MAX_SWAY_SEARCH_MODES`.

A decurrent crown whose stem divides below the crown's centre (the `old_oak`, `giant` and
`weeping_willow` presets) has no stem there: its f0 is the frequency of the lowest mode
`modes` describes as a trunk or crown sway (a bending mode in which the stem's joints hold
more than a third of the spring strain energy, or whose motion is mostly the crown's as a
whole), searched among as many modes. Species trees carry their stem to the top.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# How `modes` describes a sway of the whole tree (`modes._describe`): the sway of a decurrent
# crown (module docstring).
STEM_SWAYS = ("trunk sway", "crown sway")
# `modes` computes up to this many modes (plus `modes.EXTRA_MODES`) to find the sway (a 30 m
# open-grown red oak's lies above 10–30 single-limb modes, and its peak is certain within
# 75–155 modes); it bounds the time (ARPACK's work grows with the square of the modes asked
# for: 155 modes of a 530-limb 30 m oak, 4–7 s).
MAX_SWAY_SEARCH_MODES = 150
# The receptance is evaluated at this many frequencies (geometric, from half the lowest mode's
# to the highest computed: steps of 0.1 % over a factor of 20) and at every mode's own.
RECEPTANCE_POINTS = 3000
# Each mode's damping ratio in the receptance is at least this, so that an undamped tree's
# peaks stay finite (their heights then rank the modes by share).
MIN_PEAK_DAMPING = 0.01
# The peak counts as found when it lies this factor below the highest mode computed.
PEAK_MARGIN = 1.2


@dataclass(frozen=True)
class SwaySearch:
    """The sway mode among the modes computed.

    index : int | None, the mode's position among those passed (None if no mode moves the stem)
    share : fraction of the stem's compliance at the crown's centre the mode holds (0 to 1;
        NaN for a decurrent crown, whose sway is the lowest described as one)
    remainder : fraction the modes not computed hold (their shares' sum), NaN if unknown
    certain : bool, no mode left out can raise a higher peak (module docstring)
    """

    index: int | None
    share: float
    remainder: float
    certain: bool


def crown_centre(tree, config, trunk) -> tuple[int, np.ndarray] | None:
    """(stem limb, point (3,) m, inertial axes): where the sway's load acts and is read, the
    stem at the height of the crown's centre of mass (module docstring); None when the stem
    ends below it (a decurrent crown). `config` is the pose (`linearise.Configuration`),
    `trunk` (N,) bool the stem's limbs (`modes.trunk_limbs`)."""
    com = config.base + np.einsum("nij,nj->ni", config.C_IF, tree.com_offset)
    crown = ~trunk if np.any(~trunk) else np.ones(tree.n, dtype=bool)
    height = float(np.average(com[crown, 2], weights=tree.mass[crown]))
    stem = np.flatnonzero(trunk)
    axis = np.einsum("nij,nj->ni", config.C_IF[stem], tree.u[stem])
    tip = config.base[stem] + tree.length[stem, None] * axis
    for k, limb in enumerate(stem):
        low, high = config.base[limb, 2], tip[k, 2]
        if high > low and low <= height <= high:
            along = (height - low) / (high - low)
            return int(limb), config.base[limb] + along * (tip[k] - config.base[limb])
    return None


def stem_load(tree, config, trunk) -> np.ndarray | None:
    """(3N, 2): the generalized forces (N·m per unit force, joint coordinates of `modes`:
    breadth-first limbs, child axes) of a unit horizontal force along x and along y on the
    stem at the crown's centre, None when the stem ends below it. A joint j below the point
    takes C_IF[j]ᵀ((p − base_j) × e)."""
    centre = crown_centre(tree, config, trunk)
    if centre is None:
        return None
    limb, point = centre
    Q = np.zeros((tree.n, 3, 2))
    j = limb
    while j >= 0:
        arm = point - config.base[j]
        for column, e in enumerate(np.eye(3)[:2]):
            Q[j, :, column] = config.C_IF[j].T @ np.cross(arm, e)
        j = int(tree.parent[j]) if j > 0 else -1
    return Q.reshape(3 * tree.n, 2)


def find_sway(omega2: np.ndarray, Phi: np.ndarray, zeta: np.ndarray, load: np.ndarray,
              compliance: float | None, zero_tolerance: float) -> SwaySearch:
    """The sway mode (module docstring) among the lowest modes ω² (m,) rad²/s², Φ (3N, m)
    mass-normalised, of damping ratios ζ (m,); `load` from `stem_load`; `compliance` the trace
    of loadᵀK⁻¹load (m²/N), None when K is not positive definite (then nothing bounds the
    modes left out). Modes of zero frequency (within `zero_tolerance`) are neutral."""
    swaying = omega2 > zero_tolerance
    if not np.any(swaying):
        return SwaySearch(None, 0.0, float("nan"), False)
    omega2, Phi, zeta = omega2[swaying], Phi[:, swaying], zeta[swaying]
    p = ((load.T @ Phi) ** 2).sum(axis=0)                       # m²/N·rad²/s², per mode
    known = compliance is not None and compliance > 0.0
    scale = compliance if known else max(float((p / omega2).sum()), 1e-300)
    if not np.any(p > 0.0):
        return SwaySearch(None, 0.0, float("nan"), False)
    remainder = max(0.0, 1.0 - float((p / omega2).sum()) / scale) if known else float("nan")
    omega = np.sqrt(omega2)
    z = np.maximum(np.nan_to_num(zeta, nan=MIN_PEAK_DAMPING), MIN_PEAK_DAMPING)
    grid = np.union1d(np.geomspace(0.5 * omega[0], omega[-1], RECEPTANCE_POINTS), omega)
    terms = p[None, :] / (omega2[None, :] - grid[:, None] ** 2
                          + 2j * z[None, :] * omega[None, :] * grid[:, None]) / scale
    receptance = np.abs(terms.sum(axis=1) + (0.0 if not known else remainder))
    peak = int(np.argmax(receptance))
    mode = int(np.argmax(np.abs(terms[peak])))
    index = int(np.flatnonzero(swaying)[mode])
    share = float(p[mode] / omega2[mode] / scale)
    # A mode not computed holds at most the remainder of the compliance, so its own peak is at
    # most remainder / (2 ζ) (ζ at least the lowest computed: wood damps faster motion more).
    certain = bool(known and grid[peak] < omega[-1] / PEAK_MARGIN
                   and remainder / (2.0 * z.min()) + receptance[-1] < receptance[peak])
    return SwaySearch(index, share, remainder, certain)


def sway_frequency_hz(result) -> float | None:
    """f0 in Hz of a `modes.ModeResult` (module docstring), or None when no mode moves the
    stem (a linkage without a stem's horizontal motion)."""
    return result.sway_frequency_hz


def sway_line(result) -> str:
    """The text line of `treedyn modes` that states f0 and its definition."""
    f0 = result.sway_frequency_hz
    if f0 is None:
        return (f"sway frequency: none among the {result.modes_searched} lowest modes (no mode "
                f"moves the stem horizontally, or no trunk or crown sway)")
    where = (f"mode {result.sway_mode + 1}" if result.sway_mode < result.count
             else f"mode {result.sway_mode + 1}, beyond those listed")
    if not math.isfinite(result.sway_share):
        return (f"sway frequency f0 = {f0:.4g} Hz ({where}: the lowest trunk or crown sway of "
                f"a crown whose stem divides below its centre)")
    hedge = "" if result.sway_certain else (f"; the highest peak among the "
                                            f"{result.modes_searched} lowest modes")
    return (f"sway frequency f0 = {f0:.4g} Hz ({where}: the highest peak of the stem's "
            f"receptance at the crown's centre, what a stem-mounted sensor reads{hedge})")
