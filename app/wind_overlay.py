"""The wind compass: a dial in a corner of the view, over the scene, showing where the wind
blows as seen from the current view and how fast.

The dial is the ground seen from above, turned so that its top is straight ahead of the
viewer (into the screen) and its right the screen's right: an arrow pointing up is wind
blowing away from the viewer, an arrow pointing right is wind blowing across the view from
left to right. A tick labelled "x" marks the world's +x axis (the direction of 0°), so the
dial turns as the view is orbited. Below it, the speed in m/s and the direction in degrees
("9.0 m/s, 20°"); for a tree in a forest stand, the mean speed u_h at the canopy top, which
is what the tree's crown meets and what ForestGALES' loads are written in ("8.5 m/s, 20°" over
"at canopy top").

It lives in the canvas's pixel coordinates (not the 3-D scene), so it never hides in the
crown or covers the trunk, and `lay_out` sizes it to the view: a larger image export gets a
proportionally larger dial.
"""

from __future__ import annotations

import math

import numpy as np
from vispy import scene

INK = (0.10, 0.30, 0.58, 1.0)
FACE = (1.0, 1.0, 1.0, 0.82)
RIM = (0.35, 0.40, 0.45, 1.0)
# The dial's radius: this fraction of the view's smaller side, at least MIN_RADIUS px.
RADIUS_FRACTION = 0.07
MIN_RADIUS = 26.0  # logical px
# The caption's top, in radii below the dial's centre: vispy's "top" anchor sits about a
# quarter of the font's height below the letters' tops, and at 1.12 the caption touched the rim.
CAPTION_GAP = 1.3
MARGIN_FRACTION = 0.35  # of the radius, between the dial (and its caption) and the edges
ORDER = 20  # drawn after the scene and the grab spring


CAPTION_LINE = 0.45  # a caption line's height, in radii
CANOPY_TOP_WORDS = "at canopy top"


def placement(width: float, height: float, lines: int = 1) -> tuple[np.ndarray, float]:
    """(centre (x, y), radius) in logical px of the dial in a view of width × height logical
    px (y down): bottom right, its caption of `lines` lines below it."""
    radius = max(RADIUS_FRACTION * min(width, height), MIN_RADIUS)
    margin = MARGIN_FRACTION * radius
    caption_height = (CAPTION_GAP - 1.0 + CAPTION_LINE * lines) * radius
    return np.array([width - margin - radius, height - margin - caption_height - radius]), radius


class WindOverlay:
    """The compass, in the bottom-right corner of a canvas (its `scene`, logical px with y
    down). Call `set_wind` when the wind changes, `set_view` when the camera turns,
    `lay_out` when the view's size changes."""

    def __init__(self, canvas_scene):
        self._face = scene.visuals.Ellipse(center=(0, 0), radius=1.0, color=FACE,
                                           border_color=RIM, border_width=1.5,
                                           parent=canvas_scene)
        self._arrow = scene.visuals.Line(pos=np.zeros((6, 2), dtype=np.float32),
                                         connect="segments", method="gl", color=INK,
                                         width=3.0, parent=canvas_scene)
        self._x_tick = scene.visuals.Line(pos=np.zeros((2, 2), dtype=np.float32),
                                          connect="segments", method="gl", color=RIM,
                                          width=1.5, parent=canvas_scene)
        self._x_label = scene.visuals.Text("x", color=RIM, font_size=8, anchor_x="center",
                                           anchor_y="center", parent=canvas_scene)
        self._caption = scene.visuals.Text("", color=INK, font_size=9, bold=True,
                                           anchor_x="center", anchor_y="top",
                                           parent=canvas_scene)
        # A second line under the caption, "at canopy top" in a stand (a Text of its own:
        # vispy anchors a two-line text's top differently from a one-line one's).
        self._where = scene.visuals.Text("", color=INK, font_size=8, anchor_x="center",
                                         anchor_y="top", parent=canvas_scene)
        self._parts = (self._face, self._arrow, self._x_tick, self._x_label, self._caption,
                       self._where)
        for k, part in enumerate(self._parts):
            part.order = ORDER + k
            part.set_gl_state("translucent", depth_test=False)
        self._speed = 0.0
        self._direction_deg = 0.0
        self._at_canopy_top = False
        self._size = (0.0, 0.0)  # the view's, logical px
        self._forward_deg = 90.0  # the world direction straight into the screen (deg from +x)
        self._centre = np.zeros(2)
        self._radius = MIN_RADIUS

    # -- state ------------------------------------------------------------------------------------

    @property
    def centre(self) -> tuple[float, float]:
        """(x, y) logical px of the dial's centre in the canvas (y down)."""
        return float(self._centre[0]), float(self._centre[1])

    @property
    def radius(self) -> float:
        """The dial's radius, logical px."""
        return self._radius

    @property
    def visible(self) -> bool:
        return self._face.visible

    @visible.setter
    def visible(self, shown: bool) -> None:
        for part in self._parts:
            part.visible = shown
        self._arrow.visible = shown and self._speed > 0

    @property
    def caption(self) -> str:
        """The words under the dial, their lines joined by a newline."""
        return "\n".join(t for t in (self._caption.text, self._where.text) if t)

    def arrow_screen_deg(self) -> float:
        """Where the arrow points on screen: deg counter-clockwise from the screen's right."""
        return (self._direction_deg - self._forward_deg + 90.0) % 360.0

    # -- verbs ------------------------------------------------------------------------------------

    def set_wind(self, speed: float, direction_deg: float, at_canopy_top: bool = False) -> None:
        """Wind of `speed` m/s blowing toward `direction_deg` (deg from +x, counter-clockwise
        seen from above); `at_canopy_top`: `speed` is a stand's u_h, said on a second line."""
        self._speed = float(speed)
        self._direction_deg = float(direction_deg)
        # Short enough to stay within the dial's width at its smallest.
        text = (f"{self._speed:.1f} m/s, {self._direction_deg % 360:.0f}°"
                if self._speed > 0 else "no wind")
        self._caption.text = text
        self._where.text = CANOPY_TOP_WORDS if at_canopy_top else ""
        if bool(at_canopy_top) != self._at_canopy_top:
            self._at_canopy_top = bool(at_canopy_top)
            if self._size[0] > 0:
                self.lay_out(*self._size)  # the dial moves up for the caption's second line
        self._draw_dial()

    def set_view(self, forward: np.ndarray) -> None:
        """The camera's looking direction (3,) (scene axes, z up); looking straight down, the
        dial keeps its last turn."""
        if math.hypot(forward[0], forward[1]) > 1e-6:
            self._forward_deg = math.degrees(math.atan2(forward[1], forward[0]))
            self._draw_dial()

    def lay_out(self, width: float, height: float) -> None:
        """Size and place the dial for a view of width × height logical px."""
        self._size = (float(width), float(height))
        self._centre, self._radius = placement(width, height, 2 if self._at_canopy_top else 1)
        self._face.center = tuple(self._centre)
        self._face.radius = self._radius
        # vispy's font size is in points; 0.2 radius ≈ a readable caption at the default size.
        self._caption.font_size = 0.2 * self._radius
        self._caption.pos = (self._centre[0], self._centre[1] + CAPTION_GAP * self._radius)
        self._where.font_size = 0.17 * self._radius
        self._where.pos = (self._centre[0],
                           self._centre[1] + (CAPTION_GAP + CAPTION_LINE) * self._radius)
        self._x_label.font_size = 0.17 * self._radius
        self._draw_dial()

    # -- internals --------------------------------------------------------------------------------

    def _on_screen(self, world_deg: float) -> np.ndarray:
        """(2,) unit vector in canvas px (y down) of a world direction (deg from +x)."""
        angle = math.radians(world_deg - self._forward_deg + 90.0)
        return np.array([math.cos(angle), -math.sin(angle)])

    def _draw_dial(self) -> None:
        r, c = self._radius, self._centre
        x_axis = self._on_screen(0.0)
        self._x_tick.set_data(pos=np.array([c + 0.82 * r * x_axis, c + r * x_axis],
                                           dtype=np.float32))
        self._x_label.pos = tuple(c + 0.66 * r * x_axis)
        heading = self._on_screen(self._direction_deg)
        across = np.array([-heading[1], heading[0]])
        # Longer and thicker with the speed, to the rim at 30 m/s.
        length = r * (0.9 + 0.6 * min(self._speed, 30.0) / 30.0)
        tail, head = c - 0.5 * length * heading, c + 0.5 * length * heading
        barb = 0.3 * r
        points = np.array([tail, head,
                           head, head - barb * heading + 0.5 * barb * across,
                           head, head - barb * heading - 0.5 * barb * across], dtype=np.float32)
        self._arrow.set_data(pos=points, width=max(2.0, r / 14.0) + min(self._speed, 30.0)
                             / 10.0)
        self._arrow.visible = self._speed > 0 and self._face.visible
