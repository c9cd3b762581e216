"""The 3-D view: a plain class owning a vispy `SceneCanvas` (not a QWidget subclass).

It holds the turntable camera (z up), the ground grid, the wind compass (an overlay in a
corner, `wind_overlay`), the grab spring and the tree visual, and offers verbs — `set_tree`, `set_pose`,
`set_wind`, `set_spring`, `set_message`, `frame_tree`, `render_image` — and
queries — `project`, `unproject`, `pick_limb` — in the manner of vispy's
``CanvasWrapper``. The main window puts ``canvas.widget`` in its layout, calls
the verbs and wires the mouse; the canvas draws in a native OpenGL window
(``canvas.window``, see `gl_window`), which receives the mouse and keys.

Mouse: left-drag on a limb grabs it (the main window's business); left-drag
elsewhere, middle-drag or Ctrl + left-drag orbit; right-drag or the wheel zoom;
Shift + left-drag pans.
"""

from __future__ import annotations

import gc
import math

import numpy as np
import vispy
import vispy.app
from PyQt6.QtCore import Qt
from PyQt6.QtGui import QWindow
from PyQt6.QtWidgets import QWidget
from vispy import gloo, scene
from vispy.util import keys

from treedyn_core.io.limb_mesh import FORMS, FoliageForm

from .grab import pick_segment
from .limb_impostors import eye_and_pixel
from .stand_visual import StandVisual
from .tree_visual import TUBES, TreeVisual
from .wind_overlay import WindOverlay

SKY = "#e4ebf1"
GROUND = (0.83, 0.85, 0.78, 1.0)
GRID = (0.55, 0.58, 0.52, 1.0)
MESSAGE = (0.15, 0.15, 0.15, 1.0)
MESSAGE_BAND = (0.894, 0.922, 0.945, 0.85)  # SKY, mostly opaque
MESSAGE_BAND_HEIGHT = 30.0  # logical px, around the 13 pt line
SPRING = (0.80, 0.10, 0.10, 1.0)
SPRING_WIDTH = 2.0  # px
FOV = 40.0  # deg
ELEVATION = 10.0  # deg: a walker's view, slightly above the ground
AZIMUTH = 0.0  # deg: looking along +y, so the default wind (toward +x) blows left → right
# A tree that leans mostly along the line of sight (two_limbs' limb B, tilted 30° toward −y)
# is seen from this azimuth instead, half-way round: its lean and the wind both show.
LEAN_AZIMUTH = 45.0
LEAN_FRACTION = 0.08  # of the height (two_limbs 0.105, old_oak 0.103 across): less is no lean
MAX_LEAN = 0.5  # of the height: more is a scene spread out, not a tree leaning (keep azimuth 0)
MARGIN = 1.2  # the framed tree fills 1/MARGIN of the view
# The camera sees from distance/sqrt(DEPTH_RANGE) to distance·sqrt(DEPTH_RANGE) (vispy's
# default 1e6 spends the depth buffer's precision near the eye: in an offscreen render's
# 16-bit depth buffer, limbs a few cm apart at 30 m fought, and the tubes' joints flickered).
DEPTH_RANGE = 1e3

_vispy_configured = False


def configure_vispy() -> None:
    """Select vispy's Qt backend once, drawing in native GL windows (`gl_window`); with
    PyOpenGL, vispy's 'gl+' GL backend (PyOpenGL's, as the headless EGL renderer uses)."""
    global _vispy_configured
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
    application = vispy.app.use_app()
    if application.backend_name.lower() == "pyqt6":  # not headless EGL (`render_video`)
        from . import gl_window
        gl_window.install(application)
    _vispy_configured = True


class TreeCamera(scene.TurntableCamera):
    """vispy's turntable camera that also orbits with the middle button and with Ctrl + left
    (left-drag on a limb grabs it, so orbiting needs a way that works over the tree).
    `moved_by_user` says whether the mouse has moved it since it was last framed;
    `on_view_changed` (if set) is called whenever it moves."""

    moved_by_user = False
    on_view_changed = None

    def view_changed(self):
        super().view_changed()
        if self.on_view_changed is not None:
            self.on_view_changed()

    def viewbox_mouse_event(self, event):
        if self.interactive and not event.handled and (
                event.type == "mouse_wheel"
                or (event.type == "mouse_move" and event.press_event is not None)):
            self.moved_by_user = True
        if (event.type == "mouse_move" and self.interactive and not event.handled
                and event.press_event is not None
                and (3 in event.buttons or (1 in event.buttons and keys.CONTROL
                                            in event.mouse_event.modifiers))):
            self._update_rotation(event)
            return
        super().viewbox_mouse_event(event)


def nice_step(span: float, count: int = 10) -> float:
    """A round grid spacing (1, 2 or 5 × 10^k m) giving about `count` cells over `span` m."""
    raw = max(span, 1e-6) / count
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def _finish_gl(event=None) -> None:
    """Wait for the GL frame to be drawn, without holding the GIL (see TreeCanvas)."""
    gloo.gl.glFinish()


class TreeCanvas:
    """Owns the SceneCanvas and everything drawn in it."""

    def __init__(self, size: tuple[int, int] = (900, 700), render_mode: str = TUBES):
        configure_vispy()
        # autoswap=False: Qt's OpenGL window presents the frame itself, and the glFinish after
        # each draw goes through ctypes, which releases the GIL while llvmpipe rasterises;
        # vispy's own swapBuffers would hold it and starve the simulation thread (measured:
        # 0.54–0.72× → 0.76–0.98× real time on 10,000 limbs, same frame rate).
        self.canvas = scene.SceneCanvas(keys=None, bgcolor=SKY, size=size, show=False,
                                        autoswap=False)
        self.canvas.events.draw.connect(_finish_gl, position="last")
        self.view = self.canvas.central_widget.add_view()
        self.view.camera = TreeCamera(up="+z", fov=FOV, elevation=ELEVATION, azimuth=AZIMUTH)
        self.view.camera.depth_value = DEPTH_RANGE
        self._ground = scene.visuals.Mesh(color=GROUND, parent=self.view.scene)
        # The ground is drawn first without depth testing (which also leaves the depth buffer
        # untouched): the grid and the tree always show on it, where an offscreen render's
        # coarse depth buffer would otherwise let it hide them. (Not depth_mask=False: the
        # mask would persist into the next frame's clear and leave a stale depth buffer.)
        self._ground.order = -10
        self._ground.set_gl_state("opaque", depth_test=False)
        self._grid = scene.visuals.Line(connect="segments", method="gl", color=GRID, width=1,
                                        parent=self.view.scene)
        self.tree = TreeVisual(self.view.scene, mode=render_mode)
        self.stand = StandVisual(self.view.scene)  # the canopy of a stand, when in one
        self._stand: tuple[float, float] | None = None
        self._ground_half = 1.0
        self._crown_half_width = 1.0
        self._conifer = False
        self._stem = np.zeros(2)  # (x, y) m of the tree's stem base
        # The grab spring: drawn over everything (no depth test) so that it never hides.
        self._spring = scene.visuals.Line(pos=np.zeros((2, 3), dtype=np.float32),
                                          connect="segments", method="gl", color=SPRING,
                                          width=SPRING_WIDTH, parent=self.view.scene)
        self._spring.set_gl_state("translucent", depth_test=False)
        self._spring.order = 10
        self._spring.visible = False
        self._spring_ends = scene.visuals.Markers(parent=self.view.scene)
        self._spring_ends.set_gl_state("translucent", depth_test=False)
        self._spring_ends.order = 11
        self._spring_ends.visible = False
        self._spring_pos = np.zeros((2, 3), dtype=np.float32)
        # A band of sky behind the message: a crown reaching the top of the view would
        # otherwise show through its letters (dark grey on dark green).
        self._message_band = scene.visuals.Rectangle(center=(0, 0), width=1, height=1,
                                                     color=MESSAGE_BAND,
                                                     parent=self.canvas.scene)
        self._message_band.set_gl_state("translucent", depth_test=False)
        self._message_band.visible = False
        self._message = scene.visuals.Text("", color=MESSAGE, font_size=13, anchor_x="center",
                                           anchor_y="center", parent=self.canvas.scene)
        self._message.visible = False  # an empty Text still costs ~0.3 ms a frame to draw
        self.wind_overlay = WindOverlay(self.canvas.scene)
        self.view.camera.on_view_changed = self._turn_compass  # it turns with the view
        self._centre = np.zeros(3)
        self._height = 1.0
        self._crown_radius = 1.0
        self._azimuth = AZIMUTH
        self._wind = (0.0, 0.0, False)
        self.canvas.events.resize.connect(self._on_resize)
        self._on_resize()
        # The native GL window in the widget tree. A click in it takes the keyboard focus from
        # whichever widget had it (a spin box would otherwise swallow the Space shortcut), as
        # vispy's QOpenGLWidget did; the container passes its focus on to the window.
        self.widget = None  # none on a headless backend (EGL: `render_video`)
        if isinstance(self.canvas.native, QWindow):
            self.widget = QWidget.createWindowContainer(self.canvas.native)
            self.widget.setFocusPolicy(Qt.FocusPolicy.WheelFocus)
            self.canvas.events.mouse_press.connect(self._take_focus, position="first")

    def _take_focus(self, event=None) -> None:
        self.widget.setFocus(Qt.FocusReason.MouseFocusReason)

    @property
    def window(self):
        """The `QWindow` the canvas draws in, which receives the mouse and the keys."""
        return self.canvas.native

    # -- verbs ----------------------------------------------------------------------------------

    def set_tree(self, tree, reframe: bool = True, form: FoliageForm = FORMS["broadleaf"]) -> None:
        """Show a new tree at rest (its foliage of species `form`), with a ground grid to its
        size, and frame it."""
        points = np.concatenate([tree.rest_base, tree.rest_tip])
        low, high = points.min(axis=0), points.max(axis=0)
        root = np.asarray(tree.rest_base[0], dtype=float)
        self._stem = root[:2].copy()
        self._height = max(float(high[2] - min(low[2], root[2])), 1e-3)
        self._centre = np.array([(low[0] + high[0]) / 2, (low[1] + high[1]) / 2, root[2]])
        # The crown's half-width as it is (the neighbours' in a stand), and as framed.
        self._crown_half_width = float(np.max(np.hypot(points[:, 0] - self._centre[0],
                                                       points[:, 1] - self._centre[1])))
        self._crown_radius = max(self._crown_half_width, 0.15 * self._height)
        self._conifer = form.name == "conifer"
        # The lean: the limbs' length-weighted mean horizontal offset of their tips, m.
        length = np.linalg.norm(tree.rest_tip - tree.rest_base, axis=1)
        lean = (length[:, None] * (tree.rest_tip[:, :2] - root[:2])).sum(axis=0) / max(
            float(length.sum()), 1e-12)
        leaning = LEAN_FRACTION * self._height < np.hypot(*lean) < MAX_LEAN * self._height
        self._azimuth = LEAN_AZIMUTH if leaning and abs(lean[1]) > abs(lean[0]) else AZIMUTH
        self._set_up_ground()
        self._draw_stand()
        self.tree.set_tree(tree, form)
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

    def set_wind(self, speed: float, direction_deg: float, at_canopy_top: bool = False) -> None:
        """Show wind of `speed` m/s blowing toward `direction_deg` (deg, 0 = +x) on the
        compass; `at_canopy_top`: the speed is a stand's u_h, at its canopy top."""
        self._wind = (float(speed), float(direction_deg), bool(at_canopy_top))
        self.wind_overlay.set_wind(speed, direction_deg, at_canopy_top)
        self.canvas.update()

    def set_stand(self, stand: tuple[float, float] | None) -> None:
        """Mark the forest stand the tree stands in: (canopy height m, stem spacing m), drawn
        around the tree at its ground (`StandVisual`); None: open ground, nothing drawn."""
        self._stand = None if stand is None else (float(stand[0]), float(stand[1]))
        self._draw_stand()
        self.canvas.update()

    def _draw_stand(self) -> None:
        # Around the tree's stem, at its ground.
        stem = np.array([self._stem[0], self._stem[1], self._centre[2]])
        self.stand.set_stand(self._stand, stem, self._crown_half_width, self._ground_half,
                             self._conifer)

    def eye(self) -> np.ndarray:
        """(3,) m: the camera's position in the scene."""
        transform = self._grid.get_transform("visual", "render")
        return eye_and_pixel(transform, self._grid.get_transform("visual", "framebuffer"),
                             np.asarray(self.view.camera.center, dtype=float))[0]

    def _turn_compass(self) -> None:
        self.wind_overlay.set_view(np.asarray(self.view.camera.center, dtype=float)
                                   - self.eye())

    def set_spring(self, start: np.ndarray | None, end: np.ndarray | None = None) -> None:
        """Draw the grab spring from `start` to `end` ((3,) m, inertial); None hides it."""
        if start is None:
            self._spring.visible = self._spring_ends.visible = False
        else:
            self._spring_pos[0], self._spring_pos[1] = start, end
            self._spring.set_data(pos=self._spring_pos)
            # A dot where the limb is held, a ring at the cursor's end.
            self._spring_ends.set_data(pos=self._spring_pos, size=[7.0, 9.0],
                                       face_color=[SPRING, (1.0, 1.0, 1.0, 0.0)],
                                       edge_color=SPRING, edge_width=1.5)
            self._spring.visible = self._spring_ends.visible = True
        self.canvas.update()

    @property
    def message(self) -> str:
        """The text shown over the view ('' when none)."""
        return self._message.text

    def set_message(self, text: str | None) -> None:
        """A line of text across the top of the view (None: none)."""
        self._message.text = text or ""
        self._message.visible = self._message_band.visible = bool(text)
        self.canvas.update()

    def set_render_mode(self, mode: str) -> None:
        """TUBES (shaded tubes, the default) or LINES (the fast fallback)."""
        self.tree.set_mode(mode)
        self.canvas.update()

    def frame_tree(self) -> None:
        """Turntable camera looking at the whole tree and its ground."""
        camera = self.view.camera
        width, height = self.canvas.size
        camera.center = tuple(self._centre + np.array([0.0, 0.0, 0.5 * self._framed_height()]))
        camera.scale_factor = self._framing_scale(max(width, 1) / max(height, 1))
        camera.elevation = ELEVATION
        camera.azimuth = self._azimuth
        camera.moved_by_user = False
        self.tree.set_pixels_per_metre(self.pixels_per_metre())
        self.canvas.update()

    @staticmethod
    def _scale_showing(horizontal: float, vertical: float, aspect: float) -> float:
        """The camera's scale_factor (it spans the view's smaller side, vispy's
        PerspectiveCamera) that shows `horizontal` × `vertical` m in a view of `aspect`."""
        if aspect >= 1:
            return max(vertical, horizontal / aspect)
        return max(horizontal, vertical * aspect)

    def _framing_scale(self, aspect: float) -> float:
        """scale_factor that frames the whole tree in a view of `aspect` (width / height)."""
        return self._scale_showing(2.0 * self._crown_radius * 1.3 * MARGIN,
                                   self._framed_height() * MARGIN, aspect)

    def _framed_height(self) -> float:
        """m: the tree's height, or the canopy's when the tree stands in a taller stand."""
        return max(self._height, self._stand[0] if self._stand is not None else 0.0)

    def _scale_for_image(self, aspect: float) -> float:
        """scale_factor for an image of `aspect`: the tree framed for it while the camera is
        as framed; else (moved by the user) what the view shows, all of it."""
        camera = self.view.camera
        if not camera.moved_by_user:
            return self._framing_scale(aspect)
        width, height = self.canvas.size
        view_aspect = max(width, 1) / max(height, 1)
        scale = camera.scale_factor
        shown = (scale * view_aspect, scale) if view_aspect >= 1 else (scale, scale / view_aspect)
        return self._scale_showing(*shown, aspect)

    def pixels_per_metre(self) -> float:
        """Screen pixels per metre at the camera's centre of rotation."""
        width, height = self.view.size
        scale = self.view.camera.scale_factor or 1.0
        return min(width, height) / scale

    def render(self) -> np.ndarray:
        """The view as an (H, W, 4) uint8 RGBA image (offscreen; works under Xvfb)."""
        return self.canvas.render()

    def physical_size(self) -> tuple[int, int]:
        """(width, height) of the view in device pixels."""
        scale = self.canvas.pixel_scale
        width, height = self.canvas.size
        return int(round(width * scale)), int(round(height * scale))

    def render_image(self, width: int, height: int) -> np.ndarray:
        """The view rendered offscreen at `width` × `height` device px, (height, width, 4)
        uint8 RGBA: the camera's direction as it is; the whole tree framed for the image's
        aspect ratio while the camera is as framed, else (moved by the user) all the view
        shows, widened or narrowed to that aspect; limbs as thick for their radius as on
        screen.

        vispy 0.17's ``render(size=...)`` does not scale a ViewBox's scene, so the view is
        laid out at the image's size for the render instead (the widget does not move), and
        rendered at one image pixel per device pixel.
        """
        scale = self.canvas.pixel_scale
        widget = self.canvas.central_widget
        saved_size = widget.size
        camera = self.view.camera
        saved_scale = camera.scale_factor
        try:
            camera.scale_factor = self._scale_for_image(width / max(height, 1))
            widget.size = (width / scale, height / scale)
            self._lay_out(width / scale, height / scale)
            self.tree.set_pixels_per_metre(self.pixels_per_metre())
            # The region is the framebuffer's rectangle (origin bottom left) that the image
            # covers: the top `height` rows of a canvas laid out at the image's size.
            region = (0, self.canvas.physical_size[1] - height, width, height)
            image = self.canvas.render(region=region, size=(width, height))
        finally:
            camera.scale_factor = saved_scale
            widget.size = saved_size
            self._lay_out(*self.canvas.size)
            self.tree.set_pixels_per_metre(self.pixels_per_metre())
            self.canvas.update()
        return image

    # -- picking and the plane under the cursor ------------------------------------------------

    def _scene_to_canvas(self):
        return self._grid.get_transform("visual", "canvas")

    def project(self, points: np.ndarray) -> np.ndarray:
        """(M, 2) logical canvas px (x right, y down) of scene points (M, 3) m; NaN for points
        behind the camera."""
        mapped = self._scene_to_canvas().map(np.asarray(points, dtype=float))
        w = mapped[:, 3:4]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = mapped[:, :2] / w
        out[w[:, 0] <= 0] = np.nan
        return out

    def unproject(self, pos, through: np.ndarray) -> np.ndarray:
        """(3,) m: the point under canvas position `pos` (logical px) on the plane facing the
        camera through the scene point `through` (m). (The camera's depth is a function of
        distance along its axis only, so a fixed depth value is that plane.)"""
        transform = self._scene_to_canvas()
        mapped = transform.map(np.asarray(through, dtype=float)[None])[0]
        depth = mapped[2] / mapped[3]
        point = transform.imap(np.array([[pos[0], pos[1], depth, 1.0]]))[0]
        return point[:3] / point[3]

    def pick_limb(self, pos) -> tuple[int, float] | None:
        """(limb index, fraction from base to tip) of the limb drawn nearest canvas position
        `pos` (logical px), or None when none is within reach of the cursor."""
        pose = self.tree.pose
        if pose is None:
            return None
        base, tip = pose
        n = len(base)
        ends = self.project(np.concatenate([base, tip]))
        half_width = 0.5 * self.tree.drawn_widths() / self.canvas.pixel_scale
        found = pick_segment(ends[:n], ends[n:], pos, half_width)
        return None if found is None else found[:2]

    def update(self) -> None:
        self.canvas.update()

    def close(self) -> None:
        self.canvas.close()
        if self.widget is not None:
            self.widget.close()
        # Collect the closed canvas's visuals now, not during another canvas's draw, where
        # freeing their GL objects made the next canvas's text shader fail to compile, or
        # crashed the process (bench_frames; test_render_video's second film in a process).
        gc.collect()

    # -- internals ------------------------------------------------------------------------------

    def _set_up_ground(self) -> None:
        half = 1.3 * max(self._crown_radius, 0.35 * self._height)
        step = nice_step(2 * half, 12)
        half = math.ceil(half / step) * step
        self._ground_half = half
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

    def _lay_out(self, width: float, height: float) -> None:
        """Place the message and the compass for a view of width × height logical px."""
        self._message.pos = (width / 2, 28)  # in the sky: the framing leaves room above
        self._message_band.center = (width / 2, 28)
        self._message_band.width = max(float(width), 1.0)
        self._message_band.height = MESSAGE_BAND_HEIGHT
        self.wind_overlay.lay_out(width, height)

    def _on_resize(self, event=None) -> None:
        self._lay_out(*self.canvas.size)
        if event is not None and not self.view.camera.moved_by_user:
            self.frame_tree()  # a panel opened or the window resized: keep the tree in view
