"""The 3-D view: a plain class owning a vispy `SceneCanvas` (not a QWidget subclass).

It holds the turntable camera (z up), the ground grid, the wind arrow and the
tree visual, and offers verbs — `set_tree`, `set_pose`, `set_wind`,
`set_message`, `frame_tree` — in the manner of vispy's ``CanvasWrapper``. The
main window puts ``canvas.native`` in its layout and calls the verbs.
"""

from __future__ import annotations

import math

import numpy as np
import vispy
from vispy import scene

from .tree_visual import LINES, TUBES, TreeVisual

SKY = "#e4ebf1"
GROUND = (0.83, 0.85, 0.78, 1.0)
GRID = (0.55, 0.58, 0.52, 1.0)
WIND = (0.13, 0.40, 0.72, 1.0)
MESSAGE = (0.15, 0.15, 0.15, 1.0)
FOV = 40.0  # deg
ELEVATION = 10.0  # deg: a walker's view, slightly above the ground
AZIMUTH = 0.0  # deg: looking along +y, so the default wind (toward +x) blows left → right
MARGIN = 1.2  # the framed tree fills 1/MARGIN of the view
# The wind arrow: length R·(ARROW_BASE + ARROW_PER_SPEED·U) with R the crown's horizontal
# radius, so that at 30 m/s it still fits in the framed view upwind of the crown; its width
# grows with the speed too.
ARROW_BASE = 0.1
ARROW_PER_SPEED = 0.35 / 30.0
ARROW_AT = 1.02  # the arrow's head, in crown radii upwind of the tree's centre

_vispy_configured = False
tubes_available = False


def configure_vispy() -> None:
    """Select vispy's Qt backend once; with PyOpenGL, the 'gl+' GL backend that instanced
    meshes (the tubes render mode) need."""
    global _vispy_configured, tubes_available
    if _vispy_configured:
        return
    try:
        import OpenGL.GL  # noqa: F401
        gl = "gl+"
    except Exception:
        gl = None
    try:
        vispy.use(app="pyqt6", gl=gl)
    except RuntimeError:  # vispy already set up by the host program: take it as it is
        pass
    from vispy.gloo import gl as gloo_gl
    backend = getattr(gloo_gl, "current_backend", None)
    tubes_available = getattr(backend, "__name__", "").endswith("glplus")
    _vispy_configured = True


def nice_step(span: float, count: int = 10) -> float:
    """A round grid spacing (1, 2 or 5 × 10^k m) giving about `count` cells over `span` m."""
    raw = max(span, 1e-6) / count
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


class TreeCanvas:
    """Owns the SceneCanvas and everything drawn in it."""

    def __init__(self, size: tuple[int, int] = (900, 700), render_mode: str = LINES):
        configure_vispy()
        self.canvas = scene.SceneCanvas(keys=None, bgcolor=SKY, size=size, show=False)
        self.view = self.canvas.central_widget.add_view()
        self.view.camera = scene.TurntableCamera(up="+z", fov=FOV, elevation=ELEVATION,
                                                 azimuth=AZIMUTH)
        self._ground = scene.visuals.Mesh(color=GROUND, parent=self.view.scene)
        # The ground is drawn first without depth testing (which also leaves the depth buffer
        # untouched): the grid and the tree always show on it, where an offscreen render's
        # coarse depth buffer would otherwise let it hide them. (Not depth_mask=False: the
        # mask would persist into the next frame's clear and leave a stale depth buffer.)
        self._ground.order = -10
        self._ground.set_gl_state("opaque", depth_test=False)
        self._grid = scene.visuals.Line(connect="segments", method="gl", color=GRID, width=1,
                                        parent=self.view.scene)
        self._arrow = scene.visuals.Line(connect="segments", method="gl", color=WIND, width=4,
                                         parent=self.view.scene)
        self._arrow_label = scene.visuals.Text("", color=WIND, font_size=10, bold=True,
                                               anchor_x="center", anchor_y="bottom",
                                               parent=self.view.scene)
        self._arrow_pos = np.zeros((6, 3), dtype=np.float32)
        self.tree = TreeVisual(self.view.scene, mode=render_mode)
        self._message = scene.visuals.Text("", color=MESSAGE, font_size=13, anchor_x="center",
                                           anchor_y="center", parent=self.canvas.scene)
        self._centre = np.zeros(3)
        self._height = 1.0
        self._crown_radius = 1.0
        self._wind = (0.0, 0.0)
        self.canvas.events.resize.connect(self._on_resize)
        self._on_resize()

    @property
    def native(self):
        """The Qt widget to put in a layout."""
        return self.canvas.native

    # -- verbs ----------------------------------------------------------------------------------

    def set_tree(self, tree, reframe: bool = True) -> None:
        """Show a new tree at rest, with a ground grid to its size, and frame it."""
        points = np.concatenate([tree.rest_base, tree.rest_tip])
        low, high = points.min(axis=0), points.max(axis=0)
        root = np.asarray(tree.rest_base[0], dtype=float)
        self._height = max(float(high[2] - min(low[2], root[2])), 1e-3)
        self._centre = np.array([(low[0] + high[0]) / 2, (low[1] + high[1]) / 2, root[2]])
        self._crown_radius = max(float(np.max(np.hypot(points[:, 0] - self._centre[0],
                                                       points[:, 1] - self._centre[1]))),
                                 0.15 * self._height)
        self._set_up_ground()
        self.tree.set_tree(tree)
        self.set_wind(*self._wind)
        if reframe:
            self.frame_tree()
        else:
            self.tree.set_pixels_per_metre(self.pixels_per_metre())

    def set_pose(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Move the limbs to base → tip ((N, 3) m, inertial) and redraw."""
        self.tree.set_pose(base, tip)
        self.tree.set_pixels_per_metre(self.pixels_per_metre())
        self.canvas.update()

    def set_wind(self, speed: float, direction_deg: float) -> None:
        """Point the arrow where the wind blows (deg, 0 = +x) with a length ∝ speed (m/s)."""
        self._wind = (float(speed), float(direction_deg))
        heading = np.array([math.cos(math.radians(direction_deg)),
                            math.sin(math.radians(direction_deg)), 0.0])
        up = np.array([0.0, 0.0, 1.0])
        reach = self._crown_radius
        length = reach * (ARROW_BASE + ARROW_PER_SPEED * min(speed, 30.0))
        head = self._centre + up * (0.55 * self._height) - heading * (ARROW_AT * reach)
        tail = head - heading * length
        barb = 0.3 * length if speed > 0 else 0.0
        a = self._arrow_pos
        a[0], a[1] = tail, head
        a[2], a[3] = head, head - heading * barb + up * 0.5 * barb
        a[4], a[5] = head, head - heading * barb - up * 0.5 * barb
        self._arrow.visible = speed > 0.0
        self._arrow.set_data(pos=a, width=2.0 + min(speed, 30.0) / 5.0)
        self._arrow_label.text = f"wind {speed:.1f} m/s" if speed > 0 else "no wind"
        self._arrow_label.pos = (0.5 * (head + tail) if speed > 0 else head) \
            + up * (0.07 * self._height)

    def set_message(self, text: str | None) -> None:
        """A line of text across the top of the view (None: none)."""
        self._message.text = text or ""
        self._message.visible = bool(text)
        self.canvas.update()

    def set_render_mode(self, mode: str) -> None:
        if mode == TUBES and not tubes_available:
            raise RuntimeError("the tubes render mode needs PyOpenGL (vispy's 'gl+' backend)")
        self.tree.set_mode(mode)
        self.canvas.update()

    def frame_tree(self) -> None:
        """Turntable camera looking at the whole tree and its ground."""
        camera = self.view.camera
        width, height = self.canvas.size
        aspect = max(width, 1) / max(height, 1)
        vertical = self._height * MARGIN
        horizontal = 2.0 * self._crown_radius * 1.3 * MARGIN
        camera.center = tuple(self._centre + np.array([0.0, 0.0, 0.5 * self._height]))
        # scale_factor spans the view's smaller dimension (vispy PerspectiveCamera).
        if aspect >= 1:
            camera.scale_factor = max(vertical, horizontal / aspect)
        else:
            camera.scale_factor = max(horizontal, vertical * aspect)
        camera.elevation = ELEVATION
        camera.azimuth = AZIMUTH
        self.tree.set_pixels_per_metre(self.pixels_per_metre())
        self.canvas.update()

    def pixels_per_metre(self) -> float:
        """Screen pixels per metre at the camera's centre of rotation."""
        width, height = self.view.size
        scale = self.view.camera.scale_factor or 1.0
        return min(width, height) / scale

    def render(self) -> np.ndarray:
        """The view as an (H, W, 4) uint8 RGBA image (offscreen; works under Xvfb)."""
        return self.canvas.render()

    def update(self) -> None:
        self.canvas.update()

    def close(self) -> None:
        self.canvas.close()

    # -- internals ------------------------------------------------------------------------------

    def _set_up_ground(self) -> None:
        half = 1.3 * max(self._crown_radius, 0.35 * self._height)
        step = nice_step(2 * half, 12)
        half = math.ceil(half / step) * step
        cx, cy, z = self._centre
        ticks = np.arange(-half, half + 0.5 * step, step)
        lines = []
        for t in ticks:
            lines += [(cx + t, cy - half, z), (cx + t, cy + half, z),
                      (cx - half, cy + t, z), (cx + half, cy + t, z)]
        self._grid.set_data(pos=np.array(lines, dtype=np.float32))
        below = z - 0.002 * self._height  # under the grid lines, so they always show
        corners = np.array([(cx - half, cy - half, below), (cx + half, cy - half, below),
                            (cx + half, cy + half, below), (cx - half, cy + half, below)],
                           dtype=np.float32)
        self._ground.set_data(vertices=corners, faces=np.array([[0, 1, 2], [0, 2, 3]]),
                              color=GROUND)

    def _on_resize(self, event=None) -> None:
        width, height = self.canvas.size
        self._message.pos = (width / 2, 28)  # in the sky: the framing leaves room above
