"""The tree in the vispy scene: limbs as shaded tubes (or lines), foliage as triangles.

Two render modes (docs/performance.md §5, docs/design.md §10):

- TUBES (the default): every limb a lit, tapered, antialiased tube ray-cast on one quad
  (`limb_impostors`), one visual, one draw call;
- LINES (the fast fallback): GL line segments in a few width classes (a GL line has one
  width), all in one visual (`LimbLinesVisual`: one vertex buffer, one draw call per class;
  each vispy visual costs ~0.3–0.5 ms of Python a frame).

Foliage is one visual of flat triangles. Their shapes and colours, and the tubes' radii,
come from `treedyn_core.io.limb_mesh`, as in the exported glTF files.
Every buffer is allocated when a tree is set and filled in place each frame;
the per-frame path allocates nothing proportional to the tree.
"""

from __future__ import annotations

import numpy as np
from vispy import gloo, scene
from vispy.visuals import Visual

from treedyn_core.io.limb_mesh import FORMS, FoliageForm, foliage_clumps, limb_colors, tip_radius

from .limb_impostors import SUN, LimbImpostors

WIDTH_CLASSES = 5
MIN_WIDTH_PX = 1.0
MAX_WIDTH_PX = 40.0

LINES = "lines"
TUBES = "tubes"


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

    def __init__(self, parent, mode: str = TUBES):
        self._parent = parent
        self._limbs = LimbLines(parent=parent)
        self._leaves = Foliage(parent=parent)
        self._leaves.visible = False
        self._tubes = None
        self._mode = mode
        self._tree = None
        self._pose = None
        self._px_per_m = 1.0

    # -- set up ---------------------------------------------------------------------------------

    def set_tree(self, tree, form: FoliageForm = FORMS["broadleaf"]) -> None:
        """Allocate and colour everything for `tree` (names, parent, radius, leaf_area, ...),
        its foliage shaped by its species `form`."""
        self._tree = tree
        self._form = form
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
        self._colors = limb_colors(radius, form.bark)
        vertex_colors = np.repeat(self._colors[self._order], 2, axis=0).astype(np.float32)
        self._limbs.set_segments(self._segments.reshape(-1, 3), vertex_colors,
                                 self._class_start, self._class_stop)
        self._limbs.visible = self._mode == LINES
        self._set_up_leaves(tree)
        self._tubes_stale = True
        self._pose = (tree.rest_base, tree.rest_tip)
        if self._mode == TUBES:
            self._set_up_tubes()
        self.set_pose(tree.rest_base, tree.rest_tip)
        self.set_pixels_per_metre(self._px_per_m)

    def _set_up_leaves(self, tree) -> None:
        """The form's foliage triangles at fixed offsets (inertial axes) from a point along
        each leafy limb; shaded lighter where they face the sun (either side: leaves are thin),
        each a little different, as leaves are."""
        clumps = foliage_clumps(tree.leaf_area, self._form)
        t = len(clumps.limb)
        self._leaves.visible = t > 0
        self._leaf_index = clumps.limb
        if not t:
            return
        # (3T, 3): a full array, as numpy allocates a buffer to broadcast a (3T, 1) column.
        self._leaf_along = np.repeat(np.repeat(clumps.along, 3)[:, None], 3, axis=1)
        self._leaf_offset = clumps.corners.reshape(-1, 3)  # (3T, 3)
        self._leaf_vertex_limb = np.repeat(clumps.limb, 3)
        self._leaf_vertices = np.empty((3 * t, 3))
        self._leaf_step = np.empty((3 * t, 3))
        self._leaf_pos = np.zeros((3 * t, 3), dtype=np.float32)
        rng = np.random.default_rng(len(clumps.limb))
        light = (0.62 + 0.45 * np.abs(clumps.normal @ SUN)) * rng.uniform(0.85, 1.15, t)
        colors = np.ones((t, 4))
        colors[:, :3] = np.clip(clumps.colour[None, :] * light[:, None], 0.0, 1.0)
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
            self._tubes.set_pose(base, tip)
        self._update_leaves(base, tip)

    def _update_leaves(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Vertex = base + along·(tip − base) + offset, of its limb; no per-limb allocation."""
        if not len(self._leaf_index):
            return
        vertices, step = self._leaf_vertices, self._leaf_step
        np.take(tip, self._leaf_vertex_limb, axis=0, out=step, mode="clip")
        np.take(base, self._leaf_vertex_limb, axis=0, out=vertices, mode="clip")
        step -= vertices
        step *= self._leaf_along
        vertices += step
        vertices += self._leaf_offset
        self._leaf_pos[:] = vertices
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
        """TUBES (the default: shaded, tapered tubes) or LINES (the fastest)."""
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
        tree = self._tree
        if self._tubes is None:
            self._tubes = LimbImpostors(parent=self._parent)
        radius = np.asarray(tree.radius, dtype=float)
        base, tip = self._pose if self._pose is not None else (tree.rest_base, tree.rest_tip)
        self._tubes.set_limbs(radius, tip_radius(tree.parent, radius), self._colors,
                              np.asarray(base, dtype=float), np.asarray(tip, dtype=float))
        self._tubes.visible = self._mode == TUBES
        self._tubes_stale = False
