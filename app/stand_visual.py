"""The forest stand around a tree that stands in one (``wind.canopy``): the canopy's height
marked in the view, so that a tree in a stand reads as one and not as a tree in the open.

Drawn in the scene, around the tree, in pale see-through colours that stay behind the
simulated tree in the eye: the neighbours at the stand's spacing s (a square grid through the
tree's own stem), each a faint stem and a crown silhouette up to the canopy height h (two
crossed upright shapes, so that they show from every side: a cone's triangle for a conifer,
a lens for a broadleaf), the rim of the canopy at h, and a label "canopy top h m". The
neighbours' crowns are as wide as the tree's own (at most 0.6 s); they are not simulated:
the wind the tree meets is the stand's (log above h, decaying below it,
treedyn_core/model/canopy.py).
"""

from __future__ import annotations

import math

import numpy as np
from vispy import scene

CROWNS = (0.42, 0.52, 0.40, 0.16)   # the neighbours' crowns: pale green, mostly see-through
STEMS = (0.40, 0.37, 0.32, 0.35)    # their stems: faint bark
RIM = (0.20, 0.34, 0.18, 0.55)      # the canopy's rim at h
LABEL = (0.16, 0.30, 0.14, 1.0)
RIM_SEGMENTS = 96
RIM_REACH = 0.75     # the rim's radius and the neighbours' reach, of the ground's half-width
CROWN_BASE = 0.55    # of h: a forest tree's crown fills about its top 45 % (the conifer preset)
MAX_CROWN_OVER_SPACING = 0.6  # a neighbour's crown half-width at most this of the spacing
ORDER = 5  # after the tree (see-through over what is behind it), before the grab spring


def stem_positions(centre: np.ndarray, spacing: float, outer: float) -> np.ndarray:
    """(K, 2) m: the neighbours' stems on a square grid of `spacing` m through the tree's own
    stem at `centre` (x, y) m, within `outer` m of it (the tree's own left out)."""
    count = int(outer // spacing)
    offsets = spacing * np.arange(-count, count + 1)
    grid = np.stack(np.meshgrid(offsets, offsets), axis=-1).reshape(-1, 2)
    distance = np.hypot(grid[:, 0], grid[:, 1])
    return centre + grid[(distance > 0.5 * spacing) & (distance <= outer)]


def crown_outline(conifer: bool) -> np.ndarray:
    """(P, 2) the crown's outline in its own plane, as (across, up) fractions of its
    half-width and of its depth from the crown base (0) to the top (1), a triangle fan's
    rim around (0, 0.4)."""
    if conifer:
        return np.array([(-1.0, 0.0), (1.0, 0.0), (0.0, 1.0)])
    angle = np.linspace(0.0, 2.0 * math.pi, 13)[:-1]
    return np.stack([np.sin(angle), 0.5 - 0.5 * np.cos(angle)], axis=1)


def crown_mesh(stems: np.ndarray, ground: float, base: float, top: float, half_width: float,
               conifer: bool) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (V, 3) m, faces (F, 3)) of the neighbours' crowns: at each stem (K, 2) m two
    upright silhouettes crossed at right angles (along x and along y), from `base` to `top`
    m above the ground at z = `ground` m."""
    outline = crown_outline(conifer)
    hub = np.array([0.0, 0.4])
    shape = np.concatenate([hub[None], outline])           # a fan: the hub, then the rim
    p = len(outline)
    fan = np.array([(0, 1 + k, 1 + (k + 1) % p) for k in range(p)])
    if conifer:
        fan = np.array([(1, 2, 3)])
    vertices, faces = [], []
    for stem in stems:
        for axis in (np.array([1.0, 0.0]), np.array([0.0, 1.0])):
            points = np.zeros((len(shape), 3))
            points[:, :2] = stem + half_width * shape[:, :1] * axis
            points[:, 2] = ground + base + (top - base) * shape[:, 1]
            faces.append(fan + sum(len(v) for v in vertices))
            vertices.append(points)
    if not vertices:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.uint32)
    return (np.concatenate(vertices).astype(np.float32),
            np.concatenate(faces).astype(np.uint32))


def stand_of(data: dict) -> tuple[float, float] | None:
    """(canopy height m, stem spacing m) of the stand a validated preset's tree stands in
    (``wind.canopy``; a ``stand: forest`` species tree's own height), or None on open
    ground."""
    canopy = (data.get("wind") or {}).get("canopy") or {}
    if canopy.get("height") is None:
        return None
    return float(canopy["height"]), float(canopy["spacing"])


class StandVisual:
    """The stand's marks in a vispy `parent` scene; hidden on open ground. `set_stand` shows
    a stand (or None: none)."""

    def __init__(self, parent):
        self._stems = scene.visuals.Line(connect="segments", method="gl", color=STEMS,
                                         width=1.0, parent=parent)
        self._crowns = scene.visuals.Mesh(color=CROWNS, parent=parent)
        self._rim = scene.visuals.Line(connect="strip", method="gl", color=RIM, width=1.5,
                                       parent=parent)
        self._label = scene.visuals.Text("", color=LABEL, font_size=9, anchor_x="left",
                                         anchor_y="bottom", parent=parent)
        self._parts = (self._stems, self._crowns, self._rim, self._label)
        for k, part in enumerate(self._parts):
            part.order = ORDER + k
            part.set_gl_state("translucent", depth_test=part is not self._label)
        self.height = None  # the canopy height drawn, m above the ground (None: no stand)
        self.stems = np.zeros((0, 2))  # (K, 2) m, the neighbours' stems drawn
        self.set_stand(None)

    @property
    def visible(self) -> bool:
        return self._rim.visible

    @property
    def label(self) -> str:
        return self._label.text

    def rim_height(self) -> float | None:
        """z of the canopy's rim drawn, m (scene), or None when hidden."""
        return float(self._rim_z) if self.visible else None

    def crown_tops(self) -> float | None:
        """The highest z of the neighbours' crowns drawn, m (scene), or None."""
        vertices = self._crowns.mesh_data.get_vertices()
        return float(vertices[:, 2].max()) if self.visible and vertices is not None \
            and len(vertices) else None

    def set_stand(self, stand: tuple[float, float] | None, centre=(0.0, 0.0, 0.0),
                  crown_half_width: float = 1.0, outer: float = 10.0,
                  conifer: bool = False) -> None:
        """Mark a stand of canopy height `stand[0]` m and stem spacing `stand[1]` m around the
        tree whose stem stands at `centre` (x, y, ground z) m, its crown `crown_half_width` m
        wide each side, out to `RIM_REACH` of `outer` m (the ground's half-width); conifer or
        broadleaf crowns; None hides it."""
        shown = stand is not None
        for part in self._parts:
            part.visible = shown
        if not shown:
            self.height, self.stems, self._rim_z = None, np.zeros((0, 2)), None
            self._label.text = ""
            return
        height, spacing = float(stand[0]), float(stand[1])
        centre = np.asarray(centre, dtype=float)
        reach = RIM_REACH * outer
        z = centre[2] + height
        self._rim_z = z
        angle = np.linspace(0.0, 2.0 * math.pi, RIM_SEGMENTS + 1)
        rim = np.zeros((RIM_SEGMENTS + 1, 3), dtype=np.float32)
        rim[:, 0] = centre[0] + reach * np.cos(angle)
        rim[:, 1] = centre[1] + reach * np.sin(angle)
        rim[:, 2] = z
        self._rim.set_data(pos=rim)
        self.stems = stem_positions(centre[:2], spacing, reach)
        half_width = min(crown_half_width, MAX_CROWN_OVER_SPACING * spacing)
        if len(self.stems):  # (an empty mesh has no bounds: vispy's camera would fail on it)
            vertices, faces = crown_mesh(self.stems, centre[2], CROWN_BASE * height, height,
                                         half_width, conifer)
            self._crowns.set_data(vertices=vertices, faces=faces, color=CROWNS)
            ends = np.zeros((2 * len(self.stems), 3), dtype=np.float32)
            ends[:, :2] = np.repeat(self.stems, 2, axis=0)
            ends[0::2, 2] = centre[2]
            ends[1::2, 2] = centre[2] + CROWN_BASE * height
            self._stems.set_data(pos=ends)
        self._stems.visible = self._crowns.visible = bool(len(self.stems))
        self._label.text = f"canopy top {height:.3g} m"
        self._label.pos = (centre[0] - reach, centre[1], z)
        self.height = height
