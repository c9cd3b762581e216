"""What the view draws (docs/design.md §9, rendering): shaded, antialiased, perspective tubes,
and the wind compass over the scene. Rendered offscreen by the app's own TreeCanvas under
Xvfb (pytest-xvfb), never skipped."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from treedyn_core.io.limb_mesh import TWIG_TAPER, foliage_form
from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation

SIZE = (900, 700)  # logical px, the canvas's share of the app's default window


@pytest.fixture
def make_canvas(qtbot):
    """make_canvas(mode) → a shown TreeCanvas in render `mode`, closed after the test."""
    from treedyn_app.canvas import TreeCanvas

    canvases = []

    def make(mode: str):
        canvas = TreeCanvas(size=SIZE, render_mode=mode)
        canvases.append(canvas)
        canvas.widget.resize(*SIZE)
        canvas.widget.show()
        qtbot.waitUntil(canvas.window.isValid, timeout=10_000)
        return canvas

    yield make
    for canvas in canvases:
        canvas.close()


def distinct_colours(image: np.ndarray) -> int:
    rgb = image[..., :3].reshape(-1, 3).astype(np.int64)
    return len(np.unique(rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]))


def young_oak_still(canvas) -> np.ndarray:
    sim = Simulation(load_preset("young_oak"))
    canvas.set_tree(sim.tree, form=foliage_form(sim.data))
    canvas.wind_overlay.visible = False  # count the tree's colours, not the dial's
    return canvas.render()


def test_shaded_tubes_have_antialiased_edges(make_canvas):
    """Lit, antialiased tubes: the still shows thousands of distinct colours (shading across
    each tube, intermediate colours along every silhouette); the lines mode's flat colours
    and aliased edges give a few hundred."""
    shaded = distinct_colours(young_oak_still(make_canvas("tubes")))
    lines = distinct_colours(young_oak_still(make_canvas("lines")))
    assert shaded > 3000, shaded
    assert lines < 1000, lines


def two_poles(distance_far: float) -> SimpleNamespace:
    """Two upright limbs, one on the camera's centre of rotation, one `distance_far` m behind
    it (the camera looks along +y at the default azimuth), of equal radius."""
    radius = 0.15
    base = np.array([[-1.0, 0.0, 0.0], [1.0, distance_far, 0.0]])
    tip = base + [0.0, 0.0, 6.0]
    return SimpleNamespace(n=2, parent=np.array([-1, -1]), radius=np.full(2, radius),
                           leaf_area=np.zeros(2), rest_base=base, rest_tip=tip,
                           names=["near", "far"])


def drawn_width(image: np.ndarray, row: int, column: float) -> float:
    """Width (px) of the dark object crossing `row` near `column`: its pixels' coverage,
    each pixel counted by how far its colour is from the background (the row's colour 40 px
    either side) toward the object's core."""
    line = image[row, :, :3].astype(float)
    lo, hi = int(column) - 40, int(column) + 40
    background = 0.5 * (line[lo] + line[hi])
    distance = np.linalg.norm(line[lo:hi] - background, axis=1)
    return float(np.clip(distance / distance.max(), 0.0, 1.0).sum())


def test_tube_width_shrinks_with_distance(make_canvas):
    """The same radius is drawn narrower farther from the eye, in proportion to the
    perspective: each pole's width matches its projected diameter within 1.5 px."""
    canvas = make_canvas("tubes")
    tree = two_poles(distance_far=25.0)
    canvas.set_tree(tree)
    canvas.wind_overlay.visible = False
    image = canvas.render()
    ratio = image.shape[0] / SIZE[1]
    eye = canvas.eye()
    # The eye found from the projection is vispy's camera: at its distance from the centre
    # of rotation (scale_factor spans the view's smaller side at that distance), looking
    # along +y at azimuth 0 and down by the elevation.
    camera = canvas.view.camera
    centre = np.asarray(camera.center, dtype=float)
    distance = camera.scale_factor / (2 * math.tan(math.radians(camera.fov) / 2))
    elevation = math.radians(camera.elevation)
    np.testing.assert_allclose(eye, centre + distance * np.array(
        [0.0, -math.cos(elevation), math.sin(elevation)]), rtol=1e-6, atol=1e-6 * distance)
    widths = []
    for k in range(2):
        middle = 0.5 * (tree.rest_base[k] + tree.rest_tip[k])
        radius = 0.5 * (1 + TWIG_TAPER) * tree.radius[k]  # linear taper, halfway up
        across = np.cross(middle - eye, [0.0, 0.0, 1.0])
        across /= np.linalg.norm(across)
        # The silhouette of a round tube seen from distance d spans 2r·d/sqrt(d² − r²).
        d = np.linalg.norm(middle - eye)
        half = radius * d / math.sqrt(d * d - radius * radius)
        ends = canvas.project(np.array([middle - half * across, middle + half * across]))
        expected = ratio * float(np.linalg.norm(ends[1] - ends[0]))
        column, row = ratio * canvas.project(middle[None])[0]
        width = drawn_width(image, int(round(row)), column)
        assert width == pytest.approx(expected, abs=1.5), (k, width, expected)
        widths.append(width)
    assert widths[1] < 0.7 * widths[0], widths


def compass_ink(image: np.ndarray, centre, radius: float, ratio: float) -> np.ndarray:
    """(x, y) px, from the dial's centre, of the wind arrow's ink pixels inside the compass
    dial at `centre`, `radius` (logical px) in an image of `ratio` image px per logical px."""
    from treedyn_app.wind_overlay import INK

    cx, cy = (ratio * c for c in centre)
    r = ratio * radius
    ys, xs = np.mgrid[0:image.shape[0], 0:image.shape[1]]
    inside = (xs - cx) ** 2 + (ys - cy) ** 2 < (0.95 * r) ** 2
    ink = np.linalg.norm(image[..., :3].astype(float) - 255 * np.array(INK[:3]), axis=2) < 60
    return np.stack([xs[inside & ink] - cx, ys[inside & ink] - cy], axis=1)


def principal_axis(points: np.ndarray) -> np.ndarray:
    return np.linalg.eigh(np.cov(points.T))[1][:, -1]


def test_wind_compass_stays_in_its_corner_and_turns_with_the_view(make_canvas, qtbot):
    canvas = make_canvas("tubes")
    sim = Simulation(load_preset("young_oak"))
    canvas.set_tree(sim.tree, form=foliage_form(sim.data))
    canvas.set_wind(12.0, 0.0)  # toward +x: across the default view, left to right
    centre = canvas.wind_overlay.centre
    width, height = SIZE
    assert centre[0] > 0.8 * width and centre[1] > 0.7 * height  # bottom right
    overlay = canvas.wind_overlay
    ratio = canvas.physical_size()[1] / SIZE[1]
    before = compass_ink(canvas.render(), overlay.centre, overlay.radius, ratio)
    assert len(before) > 30
    assert overlay.arrow_screen_deg() == pytest.approx(0.0, abs=1.0)
    assert overlay.caption == "12.0 m/s, 0°"

    # Orbit with the mouse (Ctrl + left-drag) until the view has turned about a quarter turn.
    from PyQt6.QtCore import QPoint, Qt
    from PyQt6.QtTest import QTest

    window, ctrl = canvas.window, Qt.KeyboardModifier.ControlModifier
    azimuth = canvas.view.camera.azimuth
    QTest.mousePress(window, Qt.MouseButton.LeftButton, ctrl, QPoint(300, 300))
    for x in range(310, 900, 10):
        QTest.mouseMove(window, QPoint(x, 300))
        qtbot.wait(5)  # let the move reach the camera
        if abs(canvas.view.camera.azimuth - azimuth) >= 90.0:
            break
    QTest.mouseRelease(window, Qt.MouseButton.LeftButton, ctrl, QPoint(x, 300))
    turned = canvas.view.camera.azimuth - azimuth
    assert abs(turned) > 45.0, turned
    canvas.view.camera.azimuth = azimuth + 90.0 * np.sign(turned)  # exactly a quarter
    qtbot.wait(20)
    assert overlay.centre == centre  # the same corner
    after = compass_ink(canvas.render(), overlay.centre, overlay.radius, ratio)
    # The arrow (its ink's principal axis) turned a quarter turn with the view.
    cosine = abs(float(principal_axis(before) @ principal_axis(after)))
    assert math.degrees(math.acos(min(cosine, 1.0))) == pytest.approx(90.0, abs=12.0)
    assert overlay.arrow_screen_deg() % 180 == pytest.approx(90.0, abs=1.0)


def test_compass_scales_with_an_exported_image(make_canvas):
    from treedyn_app.wind_overlay import placement

    canvas = make_canvas("tubes")
    sim = Simulation(load_preset("sapling"))
    canvas.set_tree(sim.tree, form=foliage_form(sim.data))
    canvas.set_wind(12.0, 0.0)
    scale = canvas.canvas.pixel_scale
    inks = []
    for width, height in ((600, 400), (1800, 1200)):
        image = canvas.render_image(width, height)
        centre, radius = placement(width / scale, height / scale)
        inks.append(len(compass_ink(image, centre, radius, scale)))
    assert inks[1] > 5 * inks[0] > 0  # three times as wide: about nine times the ink
