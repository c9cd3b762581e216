"""What a limb and its foliage look like: tapered tubes, foliage clumps per species form,
colours. One source for the app's renderer and the glTF exporter (numpy only).

A limb is a tube from its base to its tip, round, with radius `radius` at the base and
`tip_radius` at the tip (its thickest child's radius, so the bark runs on without a step).
Foliage is a clump of flat triangles per leafy limb whose total area is FOLIAGE_AREA times
the limb's leaf area; the species form says where along the limb the clump sits and how it
is shaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

# Colours (RGBA, 0..1): bark at the trunk (a tree's own, or this), fresh green at the twigs.
BARK = np.array([0.40, 0.26, 0.13, 1.0])
TWIG = np.array([0.42, 0.58, 0.20, 1.0])
# Bark shade dominates: only the thinnest limbs turn green (t ** GREEN_EXPONENT).
GREEN_EXPONENT = 2.0
TUBE_SIDES = 8
# A limb without children ends at this fraction of its base radius.
TWIG_TAPER = 0.6
# Foliage: each leafy limb (leaf area A, m²) gets a clump of flat triangles whose total area
# is FOLIAGE_AREA·A. Drawn triangles stand for many leaves, seen through gaps: 0.6 of the
# leaf area keeps the crown's see-through look of the app's first screenshots.
FOLIAGE_AREA = 0.6
# A tree of few leafy limbs gets up to MAX_TRIANGLES_PER_LIMB small triangles on each (fine
# foliage, not a few big cards), to about FOLIAGE_TRIANGLES in all; a tree of more leafy limbs
# one each, to MAX_FOLIAGE_TRIANGLES. (Drawing costs per triangle on a software rasteriser.)
MAX_TRIANGLES_PER_LIMB = 100
FOLIAGE_TRIANGLES = 8000
MAX_FOLIAGE_TRIANGLES = 16000
FOLIAGE_SEED = 20240607


@dataclass(frozen=True)
class FoliageForm:
    """How one species form carries its leaves.

    Attributes
    ----------
    name : str
    colour : (3,) RGB 0..1
    along : (2,) fractions of the limb's length between which the clumps' centres sit
    spread : clump radius over sqrt(leaf area)
    squash : (3,) scale of the clump along inertial x, y, z at rest (z up): < 1 flattens
    hang : 0 for leaves in random planes; > 0 for hanging strips (curtains): upright,
        pointing down, this many times as long as wide
    bark : (3,) RGB 0..1 of the thickest limbs
    """

    name: str
    colour: tuple[float, float, float]
    along: tuple[float, float]
    spread: float
    squash: tuple[float, float, float]
    hang: float = 0.0
    bark: tuple[float, float, float] = tuple(float(c) for c in BARK[:3])


FORMS = {
    # Broadleaf: a rounded clump near the twig's end, a little flatter than round.
    "broadleaf": FoliageForm("broadleaf", (0.25, 0.50, 0.17), (0.8, 0.8), 0.45, (1.0, 1.0, 0.7)),
    # Conifer: dark, flat horizontal sprays of needles along the whole shoot.
    "conifer": FoliageForm("conifer", (0.13, 0.34, 0.18), (0.15, 1.0), 0.40, (1.0, 1.0, 0.35)),
    # Weeping: light green curtains, narrow strips hanging from along the pendulous shoots.
    "weeping": FoliageForm("weeping", (0.45, 0.60, 0.22), (0.0, 1.0), 0.25, (0.5, 0.5, 0.6),
                           hang=8.0),
}
WEEPING_DROOP_DEG = 15.0  # a generator whose branches droop at least this much weeps


def rgb(hex_colour: str) -> tuple[float, float, float]:
    """'#rrggbb' → (r, g, b), 0..1."""
    return tuple(int(hex_colour[k:k + 2], 16) / 255.0 for k in (1, 3, 5))


def foliage_form(data: dict) -> FoliageForm:
    """The species form of a validated preset's data, in the tree's colours: a generated tree
    with whorls is a conifer, one whose branches (of some level) droop by WEEPING_DROOP_DEG or
    more weeps; else broadleaf. The generator's ``foliage_colour`` and ``bark_colour`` (the
    species table's, or the preset's own) replace the form's."""
    generator = (data.get("tree") or {}).get("generator")
    if data.get("tree", {}).get("limbs") or not generator:
        return FORMS["broadleaf"]
    form = FORMS["broadleaf"]
    droop = generator.get("droop_deg", 0.0)  # a number, or one per level
    if generator.get("whorls", 0) > 0:
        form = FORMS["conifer"]
    elif max(droop if isinstance(droop, list) else [droop]) >= WEEPING_DROOP_DEG:
        form = FORMS["weeping"]
    colours = {key: rgb(generator[name]) for key, name in
               (("colour", "foliage_colour"), ("bark", "bark_colour")) if generator.get(name)}
    return replace(form, **colours)


def twig_weight(radius: np.ndarray) -> np.ndarray:
    """(N,) 0..1 per limb: 0 for the thickest (bark), 1 for the thinnest (twig green)."""
    radius = np.asarray(radius, dtype=float)
    r_min, r_max = float(radius.min()), float(radius.max())
    if r_max <= r_min * (1 + 1e-9):
        return np.zeros_like(radius)
    return (np.log(r_max / radius) / np.log(r_max / r_min)) ** GREEN_EXPONENT


def bark_color(weight: np.ndarray, bark=BARK[:3]) -> np.ndarray:
    """(..., 4) RGBA between `bark` (RGB, weight 0) and TWIG (weight 1)."""
    weight = np.asarray(weight, dtype=float)[..., None]
    return (1.0 - weight) * np.append(bark, 1.0) + weight * TWIG


def limb_colors(radius: np.ndarray, bark=BARK[:3]) -> np.ndarray:
    """(N, 4) RGBA per limb, `bark` (RGB) for the thickest to green for the thinnest."""
    return bark_color(twig_weight(radius), bark)


def tip_radius(parent: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(N,) m: each limb's radius at its tip, its thickest child's radius (never more than
    its own), TWIG_TAPER of its own without children."""
    parent = np.asarray(parent)
    radius = np.asarray(radius, dtype=float)
    thickest_child = np.zeros(len(radius))
    has_parent = parent >= 0
    np.maximum.at(thickest_child, parent[has_parent], radius[has_parent])
    return np.where(thickest_child > 0, np.minimum(thickest_child, radius), TWIG_TAPER * radius)


def tube_faces(sides: int = TUBE_SIDES) -> np.ndarray:
    """(2·sides, 3) vertex indices of one tube's triangles, counter-clockwise seen from
    outside; vertices 0..sides−1 ring the base, sides..2·sides−1 the tip (`tube_vertices`)."""
    k = np.arange(sides)
    a, b = k, (k + 1) % sides
    c, d = a + sides, b + sides
    return np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)]).astype(np.uint32)


def perpendicular(axis: np.ndarray) -> np.ndarray:
    """(N, 3) unit vectors ⟂ axis (N, 3): axis × x̂, or axis × ŷ where the axis is near x̂."""
    axis = np.asarray(axis, dtype=float)
    near_x = axis[:, 0] ** 2 > 0.81 * np.einsum("ij,ij->i", axis, axis)
    e1 = np.where(near_x[:, None],
                  np.stack([-axis[:, 2], np.zeros(len(axis)), axis[:, 0]], 1),
                  np.stack([np.zeros(len(axis)), axis[:, 2], -axis[:, 1]], 1))
    return e1 / np.maximum(np.linalg.norm(e1, axis=1, keepdims=True), 1e-300)


def tube_vertices(base: np.ndarray, axis: np.ndarray, radius: np.ndarray,
                  radius_tip: np.ndarray, sides: int = TUBE_SIDES
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and unit normals, each (N, 2·sides, 3), of N tapered tubes.

    base : (N, 3) m, where each tube starts; axis : (N, 3) m, base → tip;
    radius, radius_tip : (N,) m at the base and the tip. Any frame (the caller's: inertial
    for the app, limb axes for the exporter); the normals lean toward the tip by the taper.
    """
    base = np.asarray(base, dtype=float)
    axis = np.asarray(axis, dtype=float)
    length = np.maximum(np.linalg.norm(axis, axis=1), 1e-300)
    along = axis / length[:, None]
    e1 = perpendicular(axis)
    e2 = np.cross(along, e1)
    angle = 2.0 * math.pi * np.arange(sides) / sides
    radial = (np.cos(angle)[None, :, None] * e1[:, None, :]
              + np.sin(angle)[None, :, None] * e2[:, None, :])  # (N, sides, 3)
    r0 = np.asarray(radius, dtype=float)[:, None, None]
    r1 = np.asarray(radius_tip, dtype=float)[:, None, None]
    vertices = np.concatenate([base[:, None] + r0 * radial,
                               (base + axis)[:, None] + r1 * radial], axis=1)
    # The surface's normal: radial, tilted toward the tip by the slope (r0 − r1)/length.
    slope = ((r0 - r1)[:, :, 0] / length[:, None])[:, :, None]
    normal = radial + slope * along[:, None, :]
    normal /= np.linalg.norm(normal, axis=2, keepdims=True)
    return vertices, np.concatenate([normal, normal], axis=1)


@dataclass
class FoliageClumps:
    """Foliage triangles, each riding on one limb.

    Attributes
    ----------
    limb : (T,) int, the limb carrying each triangle
    along : (T,) fraction of that limb's base → tip where the triangle's clump is centred
    corners : (T, 3, 3) m, the corners relative to that point, inertial axes at rest,
        counter-clockwise about `normal`
    normal : (T, 3) unit normals, inertial axes at rest
    colour : (3,) RGB 0..1 of the form
    """

    limb: np.ndarray
    along: np.ndarray
    corners: np.ndarray
    normal: np.ndarray
    colour: np.ndarray


def foliage_clumps(leaf_area: np.ndarray, form: FoliageForm,
                   max_triangles: int = MAX_FOLIAGE_TRIANGLES,
                   seed: int = FOLIAGE_SEED) -> FoliageClumps:
    """Random triangles (fixed seed: the same tree always gets the same foliage) for the
    leafy limbs (leaf_area (N,) m²), at most `max_triangles` of them.

    Over the budget, an evenly spread subset of the leafy limbs carries the foliage, each
    with proportionally more area, so the crown looks as full at one triangle each.
    """
    leaf_area = np.asarray(leaf_area, dtype=float)
    leafy = np.flatnonzero(leaf_area > 0)
    if len(leafy) > max_triangles:
        leaf_area = leaf_area * (len(leafy) / max_triangles)
        leafy = leafy[np.linspace(0, len(leafy) - 1, max_triangles).astype(int)]
    per_limb = int(np.clip(min(FOLIAGE_TRIANGLES, max_triangles) // max(len(leafy), 1), 1,
                           MAX_TRIANGLES_PER_LIMB))
    t = len(leafy) * per_limb
    rng = np.random.default_rng(seed)
    limb = np.repeat(leafy, per_limb)
    scale = np.sqrt(leaf_area[limb])
    centre = _random_unit(rng, t) * (form.spread * scale
                                     * rng.uniform(0, 1, t) ** (1 / 3))[:, None]
    centre *= np.asarray(form.squash)
    along = rng.uniform(form.along[0], form.along[1], t)
    area = FOLIAGE_AREA * scale ** 2 / per_limb
    if form.hang > 0:
        corners = _hanging_strips(rng, centre, area, form.hang)
        face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        normal = face / np.linalg.norm(face, axis=1, keepdims=True)
        return FoliageClumps(limb, along, corners, normal, np.asarray(form.colour, dtype=float))
    # Equilateral triangles of area FOLIAGE_AREA·A/per_limb in random planes.
    side = np.sqrt(4.0 / math.sqrt(3.0) * area)
    normal = _random_unit(rng, t)
    u = np.cross(normal, _random_unit(rng, t))
    u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
    w = np.cross(normal, u)
    circumradius = (side / math.sqrt(3.0))[:, None]
    corners = np.stack([centre + circumradius * (math.cos(a) * u + math.sin(a) * w)
                        for a in (0.0, 2 * math.pi / 3, 4 * math.pi / 3)], axis=1)
    return FoliageClumps(limb, along, corners, normal, np.asarray(form.colour, dtype=float))


def _hanging_strips(rng: np.random.Generator, top: np.ndarray, area: np.ndarray,
                    aspect: float) -> np.ndarray:
    """(T, 3, 3) m: upright triangles of `area` (T,) m², their top edge (horizontal, random
    azimuth) centred on `top` (T, 3), their point `aspect` times the top edge's width below."""
    width = np.sqrt(2.0 * area / aspect)
    azimuth = rng.uniform(0.0, 2.0 * math.pi, len(top))
    across = np.stack([np.cos(azimuth), np.sin(azimuth), np.zeros(len(top))], axis=1)
    half = 0.5 * width[:, None] * across
    bottom = top - (aspect * width)[:, None] * np.array([0.0, 0.0, 1.0])
    return np.stack([top - half, top + half, bottom], axis=1)


def _random_unit(rng: np.random.Generator, count: int) -> np.ndarray:
    """(count, 3) random unit vectors, uniform on the sphere."""
    v = rng.normal(size=(count, 3))
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
