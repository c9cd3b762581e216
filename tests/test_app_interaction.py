"""The app, hands on (the README's "Using the app"): grab a branch, live plot, mode viewer, image export.

Driven with pytest-qt under Xvfb (pytest-xvfb starts one). The mouse is driven
with QTest press / move / release on the canvas's native GL window, the real
path through Qt, vispy's event system and the camera. Numbers are compared with
the Simulation the worker steps (read, never driven) or with the core's own
functions, never with what the widgets say about themselves.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time

import numpy as np
import pytest
from PyQt6.QtCore import QPoint, QSettings, Qt
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QFileDialog

from treedyn_app.dialogs import ImageSizeDialog
from treedyn_app.main_window import MainWindow
from treedyn_app.worker import FAILED, PAUSED, RUNNING
from treedyn_core.analysis.modes import modes_command_output
from treedyn_core.model.preset import apply_overrides, load_preset

READY_TIMEOUT_MS = 120_000  # the first window of a session may compile the kernels
CHANGE_TIMEOUT_MS = 2000
# Fast-forward for the waits on simulated time (sapling runs far faster than real time).
TIME_SCALE = 4.0
DRAG_PX = 70


@pytest.fixture
def open_window(qtbot, tmp_path):
    """open_window(preset) → a shown MainWindow whose simulation is running."""
    windows = []
    settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)

    def make(preset):
        window = MainWindow(preset, settings=settings)
        qtbot.addWidget(window)
        windows.append(window)
        window.resize(1100, 760)
        window.show()
        qtbot.waitExposed(window)
        qtbot.waitUntil(lambda: window.worker.latest.state in (RUNNING, FAILED)
                        and window._generation > 0, timeout=READY_TIMEOUT_MS)
        assert window.worker.latest.state == RUNNING
        return window

    yield make
    for window in windows:
        window.shutdown()


def sapling(*assignments: str):
    preset = load_preset("sapling")
    return dataclasses.replace(preset, data=apply_overrides(preset.data, list(assignments)))


def snapshot(window):
    return window.worker.latest.snapshot


def wait_sim_time(qtbot, window, until: float, timeout_ms: int = 15_000) -> None:
    qtbot.waitUntil(lambda: snapshot(window).time >= until, timeout=timeout_ms)


def tree_pixels(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of bark-brown and leaf-green pixels of an RGBA image (as tests/test_app.py)."""
    rgb = image[..., :3].astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > g + 15) & (g > b + 15) & (r < 200), (g > r + 20) & (g > b + 40)


# -- grab a branch -------------------------------------------------------------------------------

def test_dragging_a_limb_pulls_its_tip_and_it_swings_back(qtbot, open_window):
    window = open_window(sapling("wind.speed=0"))
    sim = window.worker.simulation
    limb = sim.crown_top()
    rest = sim.tree.rest_tip[limb].copy()
    canvas = window.canvas
    camera = canvas.view.camera
    view_before = (camera.azimuth, camera.elevation)

    base, tip = canvas.tree.pose
    held = base[limb] + 0.85 * (tip[limb] - base[limb])
    x, y = canvas.project(held[None])[0]
    start = QPoint(round(x), round(y))
    end = start + QPoint(-DRAG_PX, 0)  # to the left: the open sky beside the crown
    # The drag in metres: on the plane facing the camera through the grabbed point.
    drag = (canvas.unproject((end.x(), end.y()), held)
            - canvas.unproject((start.x(), start.y()), held))

    native = canvas.window
    QTest.mousePress(native, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    assert window.grab_tool.active and window.grab_tool.spring.limb == limb
    for k in range(1, 11):
        QTest.mouseMove(native, start + (end - start) * (k / 10))
        qtbot.wait(20)
    assert canvas._spring.visible
    pressed_at = snapshot(window).time
    wait_sim_time(qtbot, window, pressed_at + 2.0)  # let it settle under the pull
    pulled = snapshot(window).tip[limb] - rest
    toward = pulled @ drag / np.linalg.norm(drag)
    print(f"drag {np.linalg.norm(drag) * 100:.1f} cm, tip pulled {toward * 100:.1f} cm toward it "
          f"(k = {window.grab_tool.spring.stiffness:.3g} N/m)")
    assert toward > 0.10 * np.linalg.norm(drag)
    assert (camera.azimuth, camera.elevation) == view_before  # the camera did not orbit

    QTest.mouseRelease(native, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)
    assert not window.grab_tool.active and not canvas._spring.visible
    released_at = snapshot(window).time
    window.worker.set_time_scale(TIME_SCALE)
    limit = 0.10 * np.linalg.norm(pulled)

    def settled():
        shot = snapshot(window)
        return shot.time > released_at + 0.2 and np.linalg.norm(shot.tip[limb] - rest) < limit

    qtbot.waitUntil(settled, timeout=int(20.0 / TIME_SCALE * 1000) + 5000)
    print(f"back within 10 % after {snapshot(window).time - released_at:.2f} s")
    assert snapshot(window).time - released_at < 20.0
    assert not np.any(sim.ext_force) and not np.any(sim.ext_torque)  # the load is off


def test_orbiting_still_works_over_the_tree_and_beside_it(qtbot, open_window):
    window = open_window(sapling("wind.speed=0"))
    canvas = window.canvas
    camera = canvas.view.camera
    native = canvas.window
    sim = window.worker.simulation
    base, tip = canvas.tree.pose
    i = sim.crown_top()
    x, y = canvas.project(((base[i] + tip[i]) / 2)[None])[0]
    on_limb = QPoint(round(x), round(y))

    def drag(start, modifier, button=Qt.MouseButton.LeftButton):
        azimuth = camera.azimuth
        QTest.mousePress(native, button, modifier, start)
        for k in range(1, 6):
            QTest.mouseMove(native, start + QPoint(8 * k, 0))
            qtbot.wait(10)
        grabbed = window.grab_tool.active
        QTest.mouseRelease(native, button, modifier, start + QPoint(40, 0))
        return camera.azimuth - azimuth, grabbed

    turned, grabbed = drag(on_limb, Qt.KeyboardModifier.ControlModifier)
    assert turned != 0 and not grabbed  # Ctrl + left over the tree orbits
    turned, grabbed = drag(on_limb, Qt.KeyboardModifier.NoModifier, Qt.MouseButton.MiddleButton)
    assert turned != 0 and not grabbed  # so does the middle button
    turned, grabbed = drag(QPoint(20, 20), Qt.KeyboardModifier.NoModifier)
    assert turned != 0 and not grabbed  # and the left button on the sky


# -- live plot -------------------------------------------------------------------------------------

def test_live_plot_follows_the_crown_top_and_scrolls(qtbot, open_window):
    window = open_window(sapling("wind.speed=8", "wind.direction_deg=30"))
    sim = window.worker.simulation
    crown = sim.crown_top()
    rest = sim.tree.rest_tip[crown]
    history = window.history
    window.worker.set_time_scale(TIME_SCALE)

    # Every snapshot drawn is in the plot with the displacement the test computes from it.
    checked = 0
    deadline = time.perf_counter() + 20.0
    while snapshot(window).time < 23.0 and time.perf_counter() < deadline:
        qtbot.wait(30)
        frame = window.worker.latest
        shot, settings = frame.snapshot, frame.settings
        at = np.flatnonzero(history.time == shot.time)
        if not len(at) or abs(settings.wind_direction_deg - 30.0) > 1e-9:
            continue
        d = shot.tip[crown] - rest
        heading = math.radians(settings.wind_direction_deg)
        downwind = d[0] * math.cos(heading) + d[1] * math.sin(heading)
        crosswind = -d[0] * math.sin(heading) + d[1] * math.cos(heading)
        assert history.downwind[at[0]] == pytest.approx(downwind, abs=1e-12)
        assert history.crosswind[at[0]] == pytest.approx(crosswind, abs=1e-12)
        checked += 1
    assert checked > 20
    assert snapshot(window).time >= 23.0
    # It scrolls: the window holds the last 20 s (plus the one sample reaching its edge).
    assert history.time[-1] - history.time[1] <= 20.0
    assert history.time[0] > 1.0
    start, end = history.span()
    assert end == history.time[-1] and end - start == pytest.approx(20.0)
    assert np.ptp(history.downwind) > 0.01  # an 8 m/s wind moves it

    # Paused, the last sample is the simulation's own state, moment included.
    window.play_action.trigger()
    qtbot.waitUntil(lambda: window.worker.latest.state == PAUSED, timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: history.time[-1] == sim.time, timeout=CHANGE_TIMEOUT_MS)
    d = sim.tip[crown] - rest
    heading = math.radians(sim.wind_direction_deg)
    assert history.downwind[-1] == pytest.approx(d[0] * math.cos(heading)
                                                 + d[1] * math.sin(heading), abs=1e-12)
    assert history.moment[-1] == pytest.approx(np.linalg.norm(sim.root_moment()) / 1e3,
                                               rel=1e-12)
    assert history.moment[-1] > 0

    # The plot shows it: the downwind (blue) and moment (brown) lines are drawn.
    image = window.plot.grab().toImage()
    blue = brown = 0
    for yy in range(0, image.height(), 2):
        for xx in range(0, image.width(), 2):
            c = image.pixelColor(xx, yy)
            blue += c.blue() > 140 and c.red() < 90
            brown += c.red() > 110 and c.green() < 80 and c.blue() < 70
    assert blue > 20 and brown > 20


def test_polyline_holds_the_points_it_was_given():
    from treedyn_app.plots import polyline

    x, y = np.linspace(3.0, 250.5, 97), np.sin(np.arange(97.0)) * 40.0 + 60.0
    polygon = polyline(x, y)
    assert polygon.size() == 97
    assert [(polygon.at(i).x(), polygon.at(i).y()) for i in range(97)] == list(zip(x, y))
    assert polyline(np.empty(0), np.empty(0)).isEmpty()


# -- mode viewer -----------------------------------------------------------------------------------

def upward_crossing_period(t: np.ndarray, x: np.ndarray) -> float:
    """Mean time between upward zero crossings of x(t) (linear interpolation)."""
    x = x - x.mean()
    k = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    crossings = t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])
    assert len(crossings) >= 3
    return float(np.mean(np.diff(crossings)))


def test_mode_viewer_lists_the_modes_and_animates_mode_1(qtbot, open_window):
    window = open_window(sapling())
    panel = window.modes_panel
    window.modes_action.trigger()  # View → Modes…
    assert window.modes_dock.isVisible()
    qtbot.waitUntil(lambda: panel.table.rowCount() == 10, timeout=60_000)

    printed = modes_command_output("sapling", 10, as_json=False).splitlines()[2:12]  # the modes
    expected = [float(line.split()[1]) for line in printed]  # `treedyn modes sapling`
    assert panel.frequencies() == pytest.approx(expected, rel=1e-4)  # printed to 5 digits
    shown = [float(panel.table.item(r, 0).text()) for r in range(10)]
    assert shown == pytest.approx(expected, rel=1e-3)
    descriptions = [re.split(r"\s{2,}", line.strip())[-1] for line in printed]
    assert [panel.table.item(r, 3).text() for r in range(10)] == descriptions

    panel.table.selectRow(0)  # mode 1: the simulation pauses, the mode plays
    qtbot.waitUntil(lambda: window.worker.latest.state == PAUSED, timeout=CHANGE_TIMEOUT_MS)
    period = window._modes_job.result.periods[0]
    crown = window.worker.simulation.crown_top()
    samples = []
    end = time.perf_counter() + 6 * period
    while time.perf_counter() < end:
        qtbot.wait(5)
        tip = window.canvas.tree.pose[1][crown]  # what is drawn
        if not samples or not np.array_equal(samples[-1][1:], tip):
            samples.append((time.perf_counter(), *tip))
    samples = np.array(samples)
    motion = samples[:, 1:] - samples[:, 1:].mean(axis=0)
    direction = np.linalg.svd(motion, full_matrices=False)[2][0]
    measured = upward_crossing_period(samples[:, 0], motion @ direction)
    print(f"mode 1: period {period:.4f} s, drawn {measured:.4f} s from {len(samples)} frames")
    assert measured == pytest.approx(period, rel=0.03)
    amplitude = np.ptp(motion @ direction) / 2
    assert amplitude > 0.02 * window.worker.simulation.tree.height
    assert window.worker.latest.state == PAUSED  # the simulation stayed paused

    window.modes_dock.close()  # closing the panel resumes
    qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING, timeout=CHANGE_TIMEOUT_MS)
    assert window.mode_pose is None
    # The view follows the simulation again.
    qtbot.waitUntil(lambda: window.canvas.tree.pose[1] is snapshot(window).tip,
                    timeout=CHANGE_TIMEOUT_MS)


# -- export ----------------------------------------------------------------------------------------

def read_png(path: str) -> np.ndarray:
    """(H, W, 4) uint8 RGBA of a PNG, read with Qt (vispy's reader needs Pillow)."""
    from PyQt6.QtGui import QImage

    image = QImage(path).convertToFormat(QImage.Format.Format_RGBA8888)
    assert not image.isNull(), path
    bits = image.constBits()
    bits.setsize(image.sizeInBytes())
    rows = np.frombuffer(bits, np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, :4 * image.width()].reshape(image.height(), image.width(), 4).copy()


def test_export_image_writes_a_png_of_the_requested_size(qtbot, open_window, tmp_path,
                                                         monkeypatch):
    window = open_window(sapling())
    path = tmp_path / "tree.png"
    asked = []

    def size_dialog(parent, width, height):
        asked.append((width, height))
        return 1000, 640

    monkeypatch.setattr(ImageSizeDialog, "get_size", staticmethod(size_dialog))
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda *args, **kwargs: (str(path.with_suffix("")), ""))
    window.export_action.trigger()  # File → Export image…
    assert asked == [window.canvas.physical_size()]  # the view's size is the default
    image = read_png(str(path))
    assert image.shape == (640, 1000, 4)
    brown, green = tree_pixels(image)
    assert brown.sum() > 500 and green.sum() > 5000

    # Another aspect ratio: still the whole tree, not a stretched or shifted one.
    assert window.export_image(tmp_path / "tall.png", 360, 720)
    tall = read_png(str(tmp_path / "tall.png"))
    assert tall.shape == (720, 360, 4)
    brown, green = tree_pixels(tall)
    assert brown.sum() > 100 and green.sum() > 1000
    rows = np.flatnonzero((brown | green).any(axis=1))
    assert rows[0] > 0.05 * 720 and rows[-1] < 0.95 * 720  # framed, not cut off
    # The view on screen is unchanged by the export.
    assert window.canvas.view.size == window.canvas.canvas.size


# -- the pieces behind them ------------------------------------------------------------------------

def test_mode_pose_moves_the_tips_as_the_core_linearisation_says():
    """The GUI's forward kinematics of a mode, at a small amplitude, moves every tip by the
    core's `tip_displacements` (the linearised motion), limb order converted right."""
    from treedyn_app.mode_shapes import ModeAnimation, forward_kinematics
    from treedyn_core.analysis.modes import modes
    from treedyn_core.simulation import Simulation

    sim = Simulation(sapling())
    tree = sim.tree
    base, tip = forward_kinematics(tree, tree.rest_C_rel)
    assert np.allclose(base, tree.rest_base, atol=1e-12)
    assert np.allclose(tip, tree.rest_tip, atol=1e-12)
    result = modes(sim, 4)
    for k in range(4):
        animation = ModeAnimation(tree, result, k, amplitude=1e-6, start=0.0)
        quarter = 0.25 / result.frequencies_hz[k]  # sin = 1
        moved = (animation.pose(quarter)[1] - animation.pose(0.0)[1]) / animation.amplitude
        expected = tree.from_preset_order(result.tip_displacements[k])
        # Second-order terms: relative error ~ amplitude × rotation (1e-6 of the height).
        assert moved == pytest.approx(expected, abs=1e-4 * np.abs(expected).max())


def test_grab_and_mode_models_know_nothing_of_qt_or_vispy():
    import ast
    from pathlib import Path

    import treedyn_app

    for name in ("grab.py", "mode_shapes.py", "worker.py"):
        source = (Path(treedyn_app.__file__).parent / name).read_text()
        imported = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
        assert not imported & {"PyQt6", "PyQt5", "PySide6", "vispy"}, name
