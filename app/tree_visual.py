"""The tree in the vispy scene: limbs as segments (or tubes), foliage as triangles.

Drawing follows docs/performance.md §5 (Mesa llvmpipe): GL line segments in a few width classes
(a GL line has one width), all in one visual (`LimbLinesVisual`: one vertex buffer,
one draw call per class; each vispy visual costs ~0.3–0.5 ms of Python a frame).
Foliage is one visual of flat triangles (see FOLIAGE_AREA).
Every buffer is allocated when a tree is set and filled in place each frame;
the per-frame path allocates nothing proportional to the tree.
"""

from __future__ import annotations

import math

import numpy as np
from vispy import gloo, scene
from vispy.visuals import Visual

WIDTH_CLASSES = 5
MIN_WIDTH_PX = 1.0
MAX_WIDTH_PX = 40.0
# Colours (RGBA, 0..1): bark at the trunk, fresh green at the twigs, foliage.
BARK = np.array([0.40, 0.26, 0.13, 1.0])
TWIG = np.array([0.42, 0.58, 0.20, 1.0])
FOLIAGE = np.array([0.25, 0.50, 0.17])
# Bark shade dominates: only the thinnest limbs turn green (t ** GREEN_EXPONENT).
GREEN_EXPONENT = 2.0
# Foliage: each leafy limb (leaf area A, m²) gets a clump of flat triangles whose total area
# is FOLIAGE_AREA·A, centred within FOLIAGE_SPREAD·sqrt(A) of a point LEAF_AT along the limb.
# Triangles rather than marker sprites: software OpenGL fills a sprite's whole square through
# a costly shader (3 fps on young_oak at 880×720), a triangle only its own pixels.
FOLIAGE_AREA = 0.6
FOLIAGE_SPREAD = 0.45
LEAF_AT = 0.8
MAX_TRIANGLES_PER_LIMB = 30
MAX_FOLIAGE_TRIANGLES = 16000
FOLIAGE_SEED = 20240607
TUBE_SIDES = 8

LINES = "lines"
TUBES = "tubes"


def limb_colors(radius: np.ndarray) -> np.ndarray:
    """(N, 4) RGBA per limb, bark brown for the thickest to green for the thinnest."""
    r_min, r_max = float(radius.min()), float(radius.max())
    if r_max <= r_min * (1 + 1e-9):
        t = np.zeros_like(radius)
    else:
        t = np.log(r_max / radius) / np.log(r_max / r_min)
    t = t[:, None] ** GREEN_EXPONENT
    return (1.0 - t) * BARK + t * TWIG


def width_classes(radius: np.ndarray,
                  count: int = WIDTH_CLASSES) -> tuple[np.ndarray, np.ndarray]:
    """(class of each limb (N,), representative radius of each class (count,) m).

    Classes are equal steps of log radius; a class is drawn at the geometric
    mean of its thinnest and thickest member's radius (0 for an empty class), so
    no limb is drawn more than sqrt(step) too thick or too thin.
    """
    r_min, r_max = float(radius.min()), float(radius.max())
    if r_max <= r_min * (1 + 1e-9):
        klass = np.zeros(len(radius), dtype=np.int64)
    else:
        edges = np.geomspace(r_min, r_max, count + 1)[1:-1]
        klass = np.searchsorted(edges, radius, side="right").astype(np.int64)
    thickest = np.zeros(count)
    thinnest = np.full(count, np.inf)
    np.maximum.at(thickest, klass, radius)
    np.minimum.at(thinnest, klass, radius)
    representative = np.where(thickest > 0, np.sqrt(thickest * np.where(
        np.isfinite(thinnest), thinnest, 0.0)), 0.0)
    return klass, representative


_VERTEX = """
attribute vec3 a_position;
attribute vec4 a_color;
varying vec4 v_color;
void main() {
    v_color = a_color;
    gl_Position = $transform(vec4(a_position, 1.0));
}
"""

_FRAGMENT = """
varying vec4 v_color;
void main() {
    gl_FragColor = v_color;
}
"""


class _ColouredVerticesVisual(Visual):
    """Vertices (float32 xyz) with an RGBA colour each, in vertex buffers refilled in place
    (no per-frame allocation, unlike vispy's Mesh and Line, which rebuild their arrays on
    every change). Subclasses set the colours and say how the vertices are drawn."""

    def __init__(self, draw_mode: str):
        super().__init__(vcode=_VERTEX, fcode=_FRAGMENT)
        self._positions = gloo.VertexBuffer(np.zeros((3, 3), dtype=np.float32))
        self._colors = gloo.VertexBuffer(np.zeros((3, 4), dtype=np.float32))
        self.shared_program["a_position"] = self._positions
        self.shared_program["a_color"] = self._colors
        self._draw_mode = draw_mode
        self._bounds = np.zeros((2, 3))

    def _set_vertices(self, positions: np.ndarray, colors: np.ndarray) -> None:
        self._colors.set_data(colors)
        self._bounds = np.array([positions.min(axis=0), positions.max(axis=0)])
        self.set_positions(positions)

    def set_positions(self, positions: np.ndarray) -> None:
        """Move the vertices; the bounds (for camera ranging only) stay those of the first
        set: a tree sways about its rest pose."""
        self._positions.set_data(positions)
        self.update()

    def _compute_bounds(self, axis, view):
        return self._bounds[0, axis], self._bounds[1, axis]

    def _prepare_transforms(self, view):
        view.view_program.vert["transform"] = view.get_transform()

    def _prepare_draw(self, view):
        return True


class LimbLinesVisual(_ColouredVerticesVisual):
    """Limbs as GL line segments, drawn by width class (consecutive vertex ranges), one draw
    call and line width per class.

    Replaces one vispy `Line` per class: the same segments, colours and GL state
    ('translucent', as `Line`), with one upload and one visual's overhead per frame.
    """

    def __init__(self):
        super().__init__("lines")
        self._classes: list[gloo.IndexBuffer | None] = []
        self.widths = np.zeros(0)  # px, of each class
        self.set_gl_state("translucent")

    def set_segments(self, vertices: np.ndarray, colors: np.ndarray,
                     class_start: np.ndarray, class_stop: np.ndarray) -> None:
        """(2S, 3) float32 vertices and (2S, 4) float32 RGBA, segment k from vertex 2k to
        2k + 1; segments [class_start[c], class_stop[c]) form width class c."""
        self._classes = [gloo.IndexBuffer(np.arange(2 * a, 2 * b, dtype=np.uint32))
                         if b > a else None for a, b in zip(class_start, class_stop)]
        self.widths = np.ones(len(self._classes))
        self._set_vertices(vertices, colors)

    def draw(self):
        if not self.visible or not self._classes:
            return
        self._configure_gl_state()
        scale = self.transforms.pixel_scale
        for indices, width in zip(self._classes, self.widths):
            if indices is not None:
                gloo.set_line_width(max(width * scale, 1.0))
                self._program.draw(self._draw_mode, indices)
        gloo.set_line_width(1.0)


LimbLines = scene.visuals.create_visual_node(LimbLinesVisual)


class FoliageVisual(_ColouredVerticesVisual):
    """Flat-coloured triangles."""

    def __init__(self):
        super().__init__("triangles")
        self.set_gl_state("opaque", depth_test=True, cull_face=False)

    def set_triangles(self, positions: np.ndarray, colors: np.ndarray) -> None:
        """(3T, 3) float32 vertices, (3T, 4) float32 RGBA; T ≥ 1."""
        self._set_vertices(positions, colors)


Foliage = scene.visuals.create_visual_node(FoliageVisual)


class TreeVisual:
    """Limbs and leaves of one tree under a vispy scene node.

    `set_tree` sizes the buffers; `set_pose` fills them from base and tip
    points (N, 3) m, inertial, breadth-first order; `set_pixels_per_metre`
    keeps line widths proportional to the limbs' radii on screen.
    """

    def __init__(self, parent, mode: str = LINES):
        self._parent = parent
        self._limbs = LimbLines(parent=parent)
        self._leaves = Foliage(parent=parent)
        self._leaves.visible = False
        self._tubes = None
        self._mode = mode
        self._tree = None
        self._px_per_m = 1.0

    # -- set up ---------------------------------------------------------------------------------

    def set_tree(self, tree) -> None:
        """Allocate and colour everything for `tree` (names, parent, radius, leaf_area, ...)."""
        self._tree = tree
        n = tree.n
        radius = np.asarray(tree.radius, dtype=float)
        klass, self._class_radius = width_classes(radius)
        self._klass = klass
        self._radius = radius
        self._order = np.argsort(klass, kind="stable")
        counts = np.bincount(klass, minlength=WIDTH_CLASSES)
        self._class_stop = np.cumsum(counts)
        self._class_start = self._class_stop - counts
        self._gather = np.empty((n, 3))
        self._segments = np.zeros((n, 2, 3), dtype=np.float32)
        self._colors = limb_colors(radius)
        vertex_colors = np.repeat(self._colors[self._order], 2, axis=0).astype(np.float32)
        self._limbs.set_segments(self._segments.reshape(-1, 3), vertex_colors,
                                 self._class_start, self._class_stop)
        self._limbs.visible = self._mode == LINES
        self._set_up_leaves(tree)
        self._tubes_stale = True
        if self._mode == TUBES:
            self._set_up_tubes()
        self.set_pose(tree.rest_base, tree.rest_tip)
        self.set_pixels_per_metre(self._px_per_m)

    def _set_up_leaves(self, tree) -> None:
        """Random triangles (fixed seed) at fixed offsets, inertial axes, from each leafy
        limb's anchor point; shaded lighter where they face up, as under the sky."""
        leaf_area = np.asarray(tree.leaf_area, dtype=float)
        leafy = np.flatnonzero(leaf_area > 0)
        if len(leafy) > MAX_FOLIAGE_TRIANGLES:
            # Over the budget: an evenly spread subset of the leafy limbs, each drawn with
            # proportionally more foliage, so the crown looks as full at one triangle each.
            leaf_area = leaf_area * (len(leafy) / MAX_FOLIAGE_TRIANGLES)
            leafy = leafy[np.linspace(0, len(leafy) - 1, MAX_FOLIAGE_TRIANGLES).astype(int)]
        per_limb = int(np.clip(MAX_FOLIAGE_TRIANGLES // max(len(leafy), 1), 1,
                               MAX_TRIANGLES_PER_LIMB))
        self._leaf_index = leafy
        m = len(leafy)
        self._leaf_base = np.empty((m, 3))
        self._leaf_anchor = np.empty((m, 3))
        self._leaves.visible = m > 0
        if not m:
            return
        rng = np.random.default_rng(FOLIAGE_SEED)
        t = m * per_limb
        scale = np.repeat(np.sqrt(leaf_area[leafy]), per_limb)
        centre = _random_unit(rng, t) * (FOLIAGE_SPREAD * scale
                                         * rng.uniform(0, 1, t) ** (1 / 3))[:, None]
        centre[:, 2] *= 0.7  # clumps a little flatter than round
        # Equilateral triangles of area FOLIAGE_AREA·A/per_limb in random planes.
        side = np.sqrt(4.0 / math.sqrt(3.0) * FOLIAGE_AREA * scale ** 2 / per_limb)
        normal = _random_unit(rng, t)
        u = np.cross(normal, _random_unit(rng, t))
        u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        w = np.cross(normal, u)
        circumradius = (side / math.sqrt(3.0))[:, None]
        corners = [centre + circumradius * (math.cos(a) * u + math.sin(a) * w)
                   for a in (0.0, 2 * math.pi / 3, 4 * math.pi / 3)]
        self._leaf_offset = np.stack(corners, axis=1).reshape(-1, 3)  # (3T, 3)
        self._leaf_vertex_limb = np.repeat(np.arange(m), 3 * per_limb)
        self._leaf_vertices = np.empty((3 * t, 3))
        self._leaf_pos = np.zeros((3 * t, 3), dtype=np.float32)
        light = 0.75 + 0.35 * np.abs(normal[:, 2]) * rng.uniform(0.8, 1.2, t)
        colors = np.ones((t, 4))
        colors[:, :3] = np.clip(FOLIAGE[None, :] * light[:, None], 0.0, 1.0)
        self._leaf_colors = np.repeat(colors, 3, axis=0).astype(np.float32)
        self._leaves_ready = False

    # -- per frame ------------------------------------------------------------------------------

    def set_pose(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Move every limb to base → tip ((N, 3) m, inertial); allocates nothing per limb."""
        if self._tree is None:
            return
        base = np.asarray(base, dtype=np.float64)  # no copy for the simulation's arrays
        tip = np.asarray(tip, dtype=np.float64)
        self._pose = (base, tip)  # references to immutable snapshot arrays, kept for redraws
        np.take(base, self._order, axis=0, out=self._gather, mode="clip")
        self._segments[:, 0, :] = self._gather
        np.take(tip, self._order, axis=0, out=self._gather, mode="clip")
        self._segments[:, 1, :] = self._gather
        if self._mode == LINES:
            self._limbs.set_positions(self._segments.reshape(-1, 3))
        else:
            self._update_tubes(base, tip)
        self._update_leaves(base, tip)

    def _update_leaves(self, base: np.ndarray, tip: np.ndarray) -> None:
        if not len(self._leaf_index):
            return
        anchor = self._leaf_anchor
        np.take(base, self._leaf_index, axis=0, out=self._leaf_base, mode="clip")
        np.take(tip, self._leaf_index, axis=0, out=anchor, mode="clip")
        anchor -= self._leaf_base
        anchor *= LEAF_AT
        anchor += self._leaf_base
        np.take(anchor, self._leaf_vertex_limb, axis=0, out=self._leaf_vertices, mode="clip")
        self._leaf_vertices += self._leaf_offset
        self._leaf_pos[:] = self._leaf_vertices
        if self._leaves_ready:
            self._leaves.set_positions(self._leaf_pos)
        else:
            self._leaves.set_triangles(self._leaf_pos, self._leaf_colors)
            self._leaves_ready = True

    @property
    def pose(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(base, tip) (N, 3) m, inertial, breadth-first: what is drawn now (None: no tree)."""
        return self._pose if self._tree is not None else None

    def drawn_widths(self) -> np.ndarray:
        """(N,) px: each limb's drawn width on screen (at the camera's centre of rotation)."""
        if self._mode == LINES:
            return self._limbs.widths[self._klass]
        return np.clip(2.0 * self._radius * self._px_per_m, MIN_WIDTH_PX, None)

    def set_pixels_per_metre(self, px_per_m: float) -> None:
        """Line widths follow the limbs' radii at this screen scale (px per m)."""
        self._px_per_m = float(px_per_m)
        if self._tree is None:
            return
        widths = np.clip(2.0 * self._class_radius * self._px_per_m, MIN_WIDTH_PX, MAX_WIDTH_PX)
        if not np.array_equal(widths, self._limbs.widths):
            self._limbs.widths = widths
            self._limbs.update()

    # -- render modes -----------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> None:
        """LINES (default, fast in software) or TUBES (instanced cylinders, for a real GPU)."""
        if mode not in (LINES, TUBES):
            raise ValueError(f"unknown render mode {mode!r}")
        self._mode = mode
        if self._tree is None:
            return
        self._limbs.visible = mode == LINES
        if mode == TUBES:
            self._set_up_tubes()
        if self._tubes is not None:
            self._tubes.visible = mode == TUBES
        self.set_pose(*self._pose)

    def _set_up_tubes(self) -> None:
        if not self._tubes_stale and self._tubes is not None:
            return
        from vispy.geometry import create_cylinder

        n = self._tree.n
        self._tube_d = np.empty((n, 3))
        self._tube_e1 = np.empty((n, 3))
        self._tube_e2 = np.empty((n, 3))
        self._tube_alt = np.empty((n, 3))
        self._tube_len = np.empty((n, 1))
        self._tube_norm = np.empty((n, 1))
        self._tube_flip = np.empty((n, 1), dtype=bool)
        self._tube_r = np.asarray(self._tree.radius, dtype=float)[:, None]
        self._tube_pos = np.zeros((n, 3), dtype=np.float32)
        self._tube_cols = [np.zeros((n, 3), dtype=np.float32) for _ in range(3)]
        self._tube_base = np.empty((n, 3))
        transforms = np.repeat(np.eye(3, dtype=np.float32)[None], n, axis=0)
        cylinder = create_cylinder(2, TUBE_SIDES, radius=(1.0, 1.0), length=1.0)
        if self._tubes is not None:
            self._tubes.parent = None
        self._tubes = scene.visuals.InstancedMesh(
            cylinder.get_vertices(), cylinder.get_faces(), instance_positions=self._tube_pos,
            instance_transforms=transforms, instance_colors=self._colors.astype(np.float32),
            color=(1.0, 1.0, 1.0, 1.0),  # the instance colours multiply this base colour
            shading="smooth", parent=self._parent)
        shading = getattr(self._tubes, "shading_filter", None)
        if shading is not None:  # soft light: bark stays brown, the sides a little darker
            shading.ambient_light = (1, 1, 1, 0.65)
            shading.diffuse_light = (1, 1, 1, 0.45)
            shading.specular_light = (1, 1, 1, 0.0)
            shading.light_dir = (-0.4, 1.0, -0.6)
        self._tubes.visible = self._mode == TUBES
        self._tubes_stale = False

    def _update_tubes(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Cylinder i: axis base → tip, radius r_i; columns (e1 r, e2 r, tip − base)."""
        d, e1, e2, alt = self._tube_d, self._tube_e1, self._tube_e2, self._tube_alt
        np.subtract(tip, base, out=d)
        # e1 ⟂ d: d × x̂ = (0, d_z, −d_y), or d × ŷ = (−d_z, 0, d_x) where d is near x̂.
        e1[:, 0] = 0.0
        e1[:, 1] = d[:, 2]
        np.negative(d[:, 1], out=e1[:, 2])
        np.negative(d[:, 2], out=alt[:, 0])
        alt[:, 1] = 0.0
        alt[:, 2] = d[:, 0]
        np.square(d[:, 0], out=self._tube_len[:, 0])
        np.einsum("ij,ij->i", d, d, out=self._tube_norm[:, 0])
        np.greater(self._tube_len, 0.81 * self._tube_norm, out=self._tube_flip)
        np.copyto(e1, alt, where=self._tube_flip)
        np.einsum("ij,ij->i", e1, e1, out=self._tube_norm[:, 0])
        np.sqrt(self._tube_norm, out=self._tube_norm)
        np.maximum(self._tube_norm, 1e-300, out=self._tube_norm)
        e1 /= self._tube_norm
        # e2 = d̂ × e1
        np.einsum("ij,ij->i", d, d, out=self._tube_len[:, 0])
        np.sqrt(self._tube_len, out=self._tube_len)
        np.maximum(self._tube_len, 1e-300, out=self._tube_len)
        e2[:, 0] = d[:, 1] * e1[:, 2] - d[:, 2] * e1[:, 1]
        e2[:, 1] = d[:, 2] * e1[:, 0] - d[:, 0] * e1[:, 2]
        e2[:, 2] = d[:, 0] * e1[:, 1] - d[:, 1] * e1[:, 0]
        e2 /= self._tube_len
        e1 *= self._tube_r
        e2 *= self._tube_r
        self._tube_cols[0][:] = e1
        self._tube_cols[1][:] = e2
        self._tube_cols[2][:] = d
        self._tube_pos[:] = base
        tubes = self._tubes
        vbos = getattr(tubes, "_instance_transforms_vbos", None)
        if vbos is not None and getattr(tubes, "_instance_positions_vbo", None) is not None:
            tubes._instance_positions_vbo.set_data(self._tube_pos)
            for vbo, column in zip(vbos, self._tube_cols):
                vbo.set_data(column)
            tubes.update()
        else:  # a vispy without those buffers: the public (allocating) setters
            tubes.instance_positions = self._tube_pos
            tubes.instance_transforms = np.stack(self._tube_cols, axis=-1)


def _random_unit(rng: np.random.Generator, count: int) -> np.ndarray:
    """(count, 3) random unit vectors, uniform on the sphere."""
    v = rng.normal(size=(count, 3))
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
