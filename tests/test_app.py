"""The desktop app (docs/design.md §9), driven with pytest-qt under Xvfb (pytest-xvfb starts one).

Parameters are read from the Simulation the worker steps, never from the
widgets. Dialogs are driven through the methods the menu actions call, with
QFileDialog / QMessageBox monkeypatched, so nothing modal blocks.
"""

from __future__ import annotations

import dataclasses
import math
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import yaml
from PyQt6.QtCore import QPoint, QSettings, Qt, QTimer
from PyQt6.QtGui import QGuiApplication, QImage
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QApplication, QFileDialog, QMessageBox

from treedyn_app import main as app_main
from treedyn_app.controls import beaufort
from treedyn_app.main_window import PREPARING_TEXT, MainWindow
from treedyn_core.dynamics.stability import fastest_rate, rk4_substeps
from treedyn_app.tree_visual import TreeVisual
from treedyn_app.worker import FAILED, PAUSED, RUNNING
from treedyn_core.model.preset import apply_overrides, load_preset
from treedyn_core.simulation import MODELS, Simulation

# The first window of a session may compile the kernels (docs/design.md §3: tens of seconds).
READY_TIMEOUT_MS = 400_000  # a busy shared machine runs a cold compile several times slower
# Every control change must reach the simulation within this (the 2 s); wind changes
# ramp over 1 s of simulated time, which at real time is 1 s of it.
CHANGE_TIMEOUT_MS = 2000
# Tree pixels allowed to change between two renders of a tree at rest: the core leaves its
# tips moving by ~1e-5 m (1/1000 of a pixel here), which may still flip a pixel at an edge.
STILL_PIXELS = 20


@pytest.fixture
def settings(tmp_path):
    """Recent files etc. in a throwaway file, not the user's settings."""
    return QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def open_window(qtbot, settings):
    """open_window(preset) → a shown MainWindow whose simulation is running."""
    windows = []

    def make(preset, **options):
        window = MainWindow(preset, settings=settings, **options)
        qtbot.addWidget(window)
        windows.append(window)
        window.resize(1100, 720)
        window.show()
        qtbot.waitUntil(lambda: window.worker.latest.state in (RUNNING, FAILED)
                        and window._generation > 0, timeout=READY_TIMEOUT_MS)
        return window

    yield make
    for window in windows:
        window.shutdown()


def with_overrides(name: str, *assignments: str):
    """A shipped preset with `--set`-style overrides (a Preset, path kept)."""
    preset = load_preset(name)
    return dataclasses.replace(preset, data=apply_overrides(preset.data, list(assignments)))


def sim_time(window) -> float:
    return window.worker.simulation.time


def wait_frames(qtbot, window, seconds: float) -> None:
    """Let the simulation advance `seconds` of simulated time."""
    start = sim_time(window)
    qtbot.waitUntil(lambda: sim_time(window) >= start + seconds, timeout=10_000)
    qtbot.wait(50)  # and let the window draw it


# -- controls reach the running simulation ------------------------------------------------------

def test_every_slider_changes_the_running_simulation(qtbot, open_window):
    window = open_window(load_preset("young_oak"))
    c = window.controls

    def sim():
        return window.worker.simulation

    def move(value_slider, fraction):
        value_slider.slider.setValue(round(fraction * value_slider.slider.maximum()))
        return value_slider.value()

    # The three wind controls ramp the wind over 1 s of simulated time: move them together.
    speed = move(c.wind_speed, 0.4)
    direction = move(c.wind_direction, 0.25)
    percent = move(c.turbulence, 0.35)
    qtbot.waitUntil(lambda: sim().wind_speed == pytest.approx(speed, abs=1e-9),
                    timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: sim().wind_direction_deg == pytest.approx(direction, abs=1e-6),
                    timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: sim().turbulence_intensity == pytest.approx(percent / 100, abs=1e-9),
                    timeout=CHANGE_TIMEOUT_MS)
    assert c.beaufort.text().endswith(beaufort(speed)[1])

    def log_at(value_slider, fraction):  # a log slider from its smallest positive value
        low, high = max(value_slider.range()[0], 0.01), value_slider.range()[1]
        return low * (high / low) ** fraction

    stiffness = move(c.stiffness, 0.8)
    assert stiffness == pytest.approx(log_at(c.stiffness, 0.8), rel=0.01)  # logarithmic
    qtbot.waitUntil(lambda: sim().stiffness_scale == pytest.approx(stiffness),
                    timeout=CHANGE_TIMEOUT_MS)

    damping = move(c.damping, 0.2)
    assert damping == pytest.approx(log_at(c.damping, (0.2 * 1000 - 1) / 999), rel=0.01)
    qtbot.waitUntil(lambda: sim().damping_scale == pytest.approx(damping),
                    timeout=CHANGE_TIMEOUT_MS)

    # The time scale is the worker's pacing, not a Simulation parameter: read it there.
    time_scale = move(c.time_scale, 0.3)
    qtbot.waitUntil(lambda: window.worker.latest.settings.time_scale
                    == pytest.approx(time_scale), timeout=CHANGE_TIMEOUT_MS)

    # The numeric fields drive the same parameters.
    c.stiffness.spin.setValue(3.0)
    qtbot.waitUntil(lambda: sim().stiffness_scale == pytest.approx(3.0),
                    timeout=CHANGE_TIMEOUT_MS)
    low, high = c.stiffness.range()
    assert c.stiffness.slider.value() == round(
        math.log10(3.0 / low) / math.log10(high / low) * c.stiffness.slider.maximum())


def test_model_choice_lists_the_core_models(qtbot, open_window):
    window = open_window(load_preset("two_limbs"))
    combo = window.controls.model
    assert [combo.itemText(i) for i in range(combo.count())] == list(MODELS)
    for model in reversed(MODELS):  # away from the preset's model, and back
        combo.setCurrentText(model)
        # A model's first use may compile its kernels (the window says so meanwhile).
        qtbot.waitUntil(lambda: window.worker.simulation.model == model,
                        timeout=READY_TIMEOUT_MS)
        start = sim_time(window)
        qtbot.waitUntil(lambda: sim_time(window) > start + 0.2, timeout=CHANGE_TIMEOUT_MS)
        assert window.worker.latest.state == RUNNING
        assert window.controls.stiffness.value() == 1.0


def test_rk4_is_sub_stepped_where_affordable(qtbot, open_window):
    window = open_window(load_preset("two_limbs"))
    sim = window.worker.simulation
    preset_dt = sim.dt
    window.controls.integrator.setCurrentText("rk4")
    qtbot.waitUntil(lambda: window.worker.simulation.integrator == "rk4",
                    timeout=CHANGE_TIMEOUT_MS)
    substeps = rk4_substeps(preset_dt, fastest_rate(sim.tree, sim.inertia_base,
                                                    sim.stiffness_scale, sim.damping_scale))
    assert substeps > 1
    assert sim.dt == pytest.approx(preset_dt / substeps)
    start = sim_time(window)
    # rk4's first use may compile its kernels.
    qtbot.waitUntil(lambda: sim_time(window) > start + 0.5, timeout=READY_TIMEOUT_MS)
    assert window.worker.latest.state == RUNNING  # stable: no divergence
    window.controls.integrator.setCurrentText("implicit")
    qtbot.waitUntil(lambda: window.worker.simulation.integrator == "implicit",
                    timeout=CHANGE_TIMEOUT_MS)
    assert sim.dt == pytest.approx(preset_dt)


def test_a_preset_asking_for_dop853_runs_implicit(qtbot, open_window):
    window = open_window(with_overrides("two_limbs", "simulation.integrator=dop853"))
    assert window.worker.simulation.integrator == "implicit"
    assert window.controls.integrator.currentText() == "implicit"
    combo = window.controls.integrator
    assert "dop853" not in [combo.itemText(i) for i in range(combo.count())]


def test_rk4_is_refused_where_too_slow(qtbot, open_window):
    window = open_window(load_preset("young_oak"))
    window.controls.integrator.setCurrentText("rk4")
    qtbot.waitUntil(lambda: "rk4 refused" in window.statusBar().currentMessage(),
                    timeout=CHANGE_TIMEOUT_MS)
    assert window.worker.simulation.integrator == "implicit"
    assert window.controls.integrator.currentText() == "implicit"
    assert window.worker.latest.state == RUNNING


def test_play_pause_step_reset(qtbot, open_window):
    window = open_window(load_preset("sapling"))
    window.play_action.trigger()  # Space: pause
    qtbot.wait(100)
    paused_at = sim_time(window)
    qtbot.wait(300)
    assert sim_time(window) == paused_at
    window.step_action.trigger()
    qtbot.waitUntil(lambda: sim_time(window) == pytest.approx(
        paused_at + window.worker.simulation.dt), timeout=CHANGE_TIMEOUT_MS)
    window.play_action.trigger()  # Space: play
    qtbot.waitUntil(lambda: sim_time(window) > paused_at + 0.2, timeout=CHANGE_TIMEOUT_MS)
    window.reset_action.trigger()
    qtbot.waitUntil(lambda: sim_time(window) < 0.2, timeout=CHANGE_TIMEOUT_MS)


def test_keyboard_shortcuts(qtbot, open_window, monkeypatch):
    window = open_window(load_preset("sapling"))
    qtbot.waitExposed(window)
    window.windowHandle().requestActivate()  # shortcuts need the active window (no WM here)
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    # A click in the view takes the focus from the spin box that had it (the view is a native
    # GL window: the click must move the focus explicitly), so Space is the shortcut.
    window.controls.stiffness.spin.setFocus()
    QTest.mouseClick(window.canvas.window, Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.NoModifier, QPoint(10, 10))  # the sky: grabs nothing
    assert QApplication.focusWidget() is window.canvas.widget
    qtbot.keyClick(QGuiApplication.focusWindow(), Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.worker.latest.state == PAUSED, timeout=CHANGE_TIMEOUT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Period)  # Step
    qtbot.waitUntil(lambda: window.worker.latest.state == PAUSED
                    and window.controls.play_button.text() == "Play", timeout=CHANGE_TIMEOUT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING, timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: sim_time(window) > 0.3, timeout=CHANGE_TIMEOUT_MS)
    qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: sim_time(window) < 0.2, timeout=CHANGE_TIMEOUT_MS)
    asked = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        lambda *args, **kwargs: asked.append("open") or ("", ""))
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda *args, **kwargs: asked.append("save") or ("", ""))
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier
                   | Qt.KeyboardModifier.ShiftModifier)
    assert asked == ["open", "save"]


# -- what the canvas shows ----------------------------------------------------------------------

def tree_pixels(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of bark-brown and leaf-green pixels of an RGBA image."""
    rgb = image[..., :3].astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    brown = (r > g + 15) & (g > b + 15) & (r < 200)
    green = (g > r + 20) & (g > b + 40)
    return brown, green


def screen_pixels(widget) -> np.ndarray:
    """What the screen shows of `widget`, as an (H, W, 4) uint8 RGBA image."""
    image = widget.screen().grabWindow(int(widget.winId())).toImage()
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    shape = (image.height(), image.bytesPerLine() // 4, 4)
    return np.frombuffer(image.constBits().asstring(image.sizeInBytes()),
                         np.uint8).reshape(shape)[:, :image.width()].copy()


def changed_tree_pixels(first: np.ndarray, second: np.ndarray) -> int:
    """Pixels that became, or stopped being, bark or leaf. (Overlapping leaf triangles at
    nearly equal depth may swap shades on a motion of 1e-5 m; that is not movement.)"""
    return int(sum((a != b).sum() for a, b in zip(tree_pixels(first), tree_pixels(second))))


def to_pixels(window, points: np.ndarray) -> np.ndarray:
    """Canvas pixel (column, row) of scene points (M, 3)."""
    transform = window.canvas.tree._limbs.get_transform("visual", "canvas")
    mapped = transform.map(points)
    return mapped[:, :2] / mapped[:, 3:4]


def test_canvas_shows_the_tree_and_it_moves_in_the_wind(qtbot, open_window):
    window = open_window(load_preset("young_oak"))
    wait_frames(qtbot, window, 1.0)
    first = window.canvas.render()
    brown, green = tree_pixels(first)
    tree = window.worker.simulation.tree
    scale = first.shape[0] / window.canvas.canvas.size[1]  # physical / logical pixels
    # Where the trunk stands (its middle, on screen) there is bark...
    trunk = to_pixels(window, (tree.rest_base[:1] + tree.rest_tip[:1]) / 2)[0] * scale
    col, row = int(trunk[0]), int(trunk[1])
    assert brown[row - 6:row + 7, col - 6:col + 7].any()
    # ...and around the leafy twigs there are leaves.
    leafy = np.flatnonzero(tree.leaf_area > 0)
    crown = to_pixels(window, tree.rest_tip[leafy]) * scale
    hits = [green[int(y) - 8:int(y) + 9, int(x) - 8:int(x) + 9].any() for x, y in crown]
    assert np.mean(hits) > 0.8
    assert brown.sum() > 500 and green.sum() > 5000
    # The same tree on screen: the view's native GL window, read back from the X server.
    on_screen = screen_pixels(window.canvas.widget)
    assert on_screen.shape[:2] == first.shape[:2]
    shown_brown, shown_green = tree_pixels(on_screen)
    assert shown_brown.sum() > 0.5 * brown.sum() and shown_green.sum() > 0.5 * green.sum()

    wait_frames(qtbot, window, 0.3)
    second = window.canvas.render()
    changed = changed_tree_pixels(first, second)
    assert changed > 20 * STILL_PIXELS, "the tree should move in a 6 m/s wind"


def test_render_modes(qtbot, open_window):
    window = open_window(load_preset("sapling"))
    assert window.canvas.tree.mode == "tubes" and window.tubes_action.isChecked()  # default
    window.lines_action.trigger()
    assert window.canvas.tree.mode == "lines"
    wait_frames(qtbot, window, 0.2)
    brown, green = tree_pixels(window.canvas.render())
    assert brown.sum() > 100 and green.sum() > 1000
    window.tubes_action.trigger()
    assert window.canvas.tree.mode == "tubes"
    wait_frames(qtbot, window, 0.2)
    brown, green = tree_pixels(window.canvas.render())
    assert brown.sum() > 100 and green.sum() > 1000


def test_canvas_is_still_without_wind(qtbot, open_window):
    window = open_window(with_overrides("young_oak", "wind.speed=0"))
    wait_frames(qtbot, window, 0.5)
    first = window.canvas.render()
    wait_frames(qtbot, window, 0.5)
    second = window.canvas.render()
    brown, green = tree_pixels(first)
    assert brown.sum() > 500 and green.sum() > 5000
    changed = changed_tree_pixels(first, second)
    assert changed <= STILL_PIXELS, "a prestressed tree in still air stays at rest"


def test_preparing_message_until_the_simulation_is_ready(qtbot, settings):
    window = MainWindow(load_preset("sapling"), settings=settings)
    qtbot.addWidget(window)
    try:
        assert window.statusBar().text() == PREPARING_TEXT
        qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING, timeout=READY_TIMEOUT_MS)
        qtbot.waitUntil(lambda: window.canvas.message == "", timeout=2000)
        qtbot.waitUntil(lambda: window.statusBar().text().startswith("Running"), timeout=2000)
        window.toggle_play()
        qtbot.waitUntil(lambda: window.statusBar().text().startswith("Paused"), timeout=2000)
    finally:
        window.shutdown()


@pytest.mark.parametrize("mode", ["tubes", "lines"])
def test_drawing_allocates_nothing_per_limb(mode):
    """set_pose refills preallocated buffers: its peak allocation stays far below the size
    of one (N, 3) array of positions."""
    from treedyn_app.canvas import configure_vispy
    from vispy import scene

    configure_vispy()
    tree = Simulation(load_preset("old_oak")).tree
    visual = TreeVisual(scene.Node(), mode=mode)
    visual.set_tree(tree)
    base = np.ascontiguousarray(tree.rest_base)
    tip = np.ascontiguousarray(tree.rest_tip)
    visual.set_pose(base, tip)
    tracemalloc.start()
    try:
        for _ in range(5):
            visual.set_pose(base, tip)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < base.nbytes / 4, f"{peak} bytes allocated per frame for {tree.n} limbs"


# -- presets ------------------------------------------------------------------------------------

def test_save_as_then_open_round_trips_recipe_and_sliders(qtbot, open_window, tmp_path,
                                                          monkeypatch):
    window = open_window(load_preset("sapling"))
    assert window.windowTitle() == "Oak sapling — sapling.yaml[*] (shipped) — treedyn"
    assert not window.isWindowModified()
    c = window.controls
    chosen = dict(wind_speed=11.5, wind_direction=135.0, turbulence=35.0, stiffness=2.5,
                  damping=0.4)
    for name, value in chosen.items():
        getattr(c, name).spin.setValue(value)
    assert window.isWindowModified()  # the title's * while settings differ from the file's
    path = tmp_path / "tuned.yaml"
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        lambda *args, **kwargs: (str(path), ""))
    window.save_as_action.trigger()  # File → Save As…, through the (patched) dialog
    assert window.windowTitle() == f"Oak sapling — tuned.yaml[*] (in {tmp_path.resolve()}) — treedyn"
    assert not window.isWindowModified()
    saved = yaml.safe_load(path.read_text(encoding="utf-8"))
    original = load_preset("sapling")
    # The generator recipe with the changed keys, nothing else added.
    assert saved["tree"] == original.raw["tree"]
    assert set(saved) == set(original.raw) | {"tuning"}
    assert saved["tuning"] == {"stiffness_scale": 2.5, "damping_scale": 0.4}
    assert saved["wind"]["speed"] == 11.5 and saved["wind"]["direction_deg"] == 135.0
    assert saved["wind"]["turbulence_intensity"] == pytest.approx(0.35)

    for name in chosen:  # move everything away
        getattr(c, name).slider.setValue(0)
    assert window.isWindowModified()
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        lambda *args, **kwargs: (str(path), ""))
    generation = window.worker.latest.generation
    window.open_action.trigger()  # File → Open…
    # The moved sliders are unsaved: the window asks first (Save / Discard / Cancel).
    window.unsaved_box.button(QMessageBox.StandardButton.Discard).click()
    qtbot.waitUntil(lambda: window.worker.latest.generation > generation
                    and window.preset is window.worker.latest.preset, timeout=10_000)
    assert window.preset.path == path
    for name, value in chosen.items():
        assert getattr(c, name).value() == pytest.approx(value)
    assert not window.isWindowModified()
    # The same limbs, and the same run: the simulation of the original preset with the
    # sliders' values assigned, reset (its prestress at the stiffness in force).
    sim = window.worker.simulation
    expected = Simulation(with_overrides("sapling", "tuning.stiffness_scale=2.5",
                                         "tuning.damping_scale=0.4", "wind.speed=11.5",
                                         "wind.direction_deg=135",
                                         "wind.turbulence_intensity=0.35"))
    assert sim.data == expected.data
    for field in ("parent", "length", "mass", "stiffness", "damping", "rest_C_rel"):
        np.testing.assert_array_equal(getattr(sim.tree, field), getattr(expected.tree, field))
    np.testing.assert_array_equal(sim.spring_C_rel, expected.spring_C_rel)
    assert sim.stiffness_scale == 2.5 and sim.damping_scale == 0.4
    assert sim.wind_speed == 11.5 and sim.wind_direction_deg == pytest.approx(135.0)
    assert str(path.resolve()) in window.recent_files()
    qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING, timeout=5000)


def test_invalid_preset_shows_the_error_and_keeps_running(qtbot, open_window, tmp_path,
                                                          monkeypatch):
    window = open_window(load_preset("sapling"))
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntree:\n  limbs:\n    - {name: A, parent: null, length: -1}\n")
    sim_before, generation = window.worker.simulation, window.worker.latest.generation
    assert window.open_preset(bad) is False
    assert len(shown) == 1 and "\n" not in shown[0] and "bad.yaml" in shown[0]
    assert "length" in shown[0]
    start = sim_time(window)
    qtbot.waitUntil(lambda: sim_time(window) > start + 0.2, timeout=CHANGE_TIMEOUT_MS)
    assert window.worker.simulation is sim_before
    assert window.worker.latest.generation == generation

    # Valid YAML whose tree cannot be built (springs too soft to hold it up): the worker
    # refuses it, the dialog says why, the old simulation goes on.
    soft = tmp_path / "soft.yaml"
    soft.write_text(Path(load_preset("sapling").path).read_text()
                    .replace("youngs_modulus: 6.0e+9", "youngs_modulus: 1.0e+4"))
    assert window.open_preset(soft) is True
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=10_000)
    assert "too soft" in shown[1] and "\n" not in shown[1]
    start = sim_time(window)
    qtbot.waitUntil(lambda: sim_time(window) > start + 0.2, timeout=CHANGE_TIMEOUT_MS)
    assert window.worker.simulation is sim_before
    assert window.controls.damping.value() == 1.0  # the controls still show the old preset


def test_preset_picker_lists_and_loads_shipped_presets(qtbot, open_window):
    from treedyn_core.model.preset import shipped_presets

    window = open_window(load_preset("sapling"))
    picker = window.controls.preset
    keys = [picker.itemData(i) for i in range(picker.count())]
    assert set(shipped_presets()) <= set(keys)
    index = keys.index("two_limbs")
    picker.setCurrentIndex(index)
    picker.activated.emit(index)
    # The worker swaps the simulation before the window handles its "loaded" event: wait for both.
    expected = load_preset("two_limbs").name
    qtbot.waitUntil(lambda: window.worker.simulation.tree.n == 2
                    and window.preset.name == expected, timeout=10_000)


# -- robustness ---------------------------------------------------------------------------------

def test_divergence_is_reported_and_reset_recovers(qtbot, open_window):
    window = open_window(load_preset("young_oak"))
    wait_frames(qtbot, window, 0.2)
    good = window.worker.latest.snapshot
    window.worker.set_stiffness_scale(1e200)  # past every slider: forced through the worker
    qtbot.waitUntil(lambda: window.worker.latest.state == FAILED, timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: window._failure_box is not None, timeout=CHANGE_TIMEOUT_MS)
    assert "diverged" in window._failure_box.text()
    assert "diverged" in window.statusBar().currentMessage()
    frame = window.worker.latest
    assert np.isfinite(frame.snapshot.tip).all()  # the last good frame stays on screen
    assert frame.snapshot.time >= good.time
    stopped_at = sim_time(window)
    qtbot.wait(200)
    assert sim_time(window) == stopped_at  # the worker stopped stepping

    reset = [b for b in window._failure_box.buttons() if b.text() == "Reset"][0]
    reset.click()  # offered in the dialog
    qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING, timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: sim_time(window) > 0.3, timeout=5000)
    assert window.worker.simulation.stiffness_scale == 1.0
    assert np.isfinite(window.worker.latest.snapshot.tip).all()


def test_finite_runaway_is_caught_by_the_physical_bounds(qtbot, open_window):
    """An unstable step that stays finite (generalized-α with ρ∞ = 1 on two_limbs in a 60 m/s
    storm at dt 0.1 s: at 1.7 s with this wind's seed) stops with the divergence dialog,
    naming the bound it broke, instead of animating nonsense."""
    window = open_window(with_overrides("two_limbs", "simulation.integrator=galpha",
                                        "simulation.rho_inf=1", "wind.seed=5",
                                        "wind.speed=60", "wind.turbulence_intensity=1.0",
                                        "simulation.dt=0.1"))
    qtbot.waitUntil(lambda: window._failure_box is not None, timeout=READY_TIMEOUT_MS)
    text = window._failure_box.text()
    assert "diverged" in text and ("rad/s its loads allow" in text or "can supply" in text)
    assert np.isfinite(window.worker.latest.snapshot.tip).all()


def test_huge_dt_diverges_and_resets(qtbot, open_window):
    window = open_window(load_preset("sapling"))
    window.worker.set_dt(1e200)
    window.step_action.trigger()  # paced to the wall clock, a 1e200 s step would never come
    qtbot.waitUntil(lambda: window.worker.latest.state == FAILED, timeout=CHANGE_TIMEOUT_MS)
    window.worker.set_dt(load_preset("sapling").data["simulation"]["dt"])
    window.reset()
    window.play_action.trigger()
    qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING and sim_time(window) > 0.2,
                    timeout=5000)


def test_an_exception_in_the_worker_is_shown(qtbot, open_window):
    window = open_window(load_preset("sapling"))

    def broken_step(n=1):
        raise RuntimeError("kernel exploded")

    window.worker.call(lambda sim: setattr(sim, "step", broken_step))
    qtbot.waitUntil(lambda: window.worker.latest.state == FAILED, timeout=CHANGE_TIMEOUT_MS)
    qtbot.waitUntil(lambda: window._failure_box is not None, timeout=CHANGE_TIMEOUT_MS)
    assert "RuntimeError: kernel exploded" in window._failure_box.text()


def test_giant_keeps_the_gui_responsive_and_closes_fast(qtbot, open_window):
    window = open_window(load_preset("giant"))
    assert window.worker.simulation.tree.n == 10926
    wait_frames(qtbot, window, 0.1)  # warm-up: kernels loaded, first frames drawn
    qtbot.wait(500)
    intervals = []
    last = [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        intervals.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    timer.start()
    qtbot.wait(3000)
    timer.stop()
    latency = np.array(intervals) - 0.010
    print(f"giant: {len(intervals)} ticks, latency p50 {np.median(latency) * 1e3:.0f} ms, "
          f"p95 {np.percentile(latency, 95) * 1e3:.0f} ms, real-time factor "
          f"{window.worker.latest.realtime_factor:.2f}")
    assert len(intervals) > 10
    assert np.percentile(latency, 95) < 0.250, f"p95 latency {np.percentile(latency, 95):.3f} s"
    assert window.worker.latest.state == RUNNING
    assert window.worker.latest.realtime_factor > 0

    start = time.perf_counter()
    window.close()
    elapsed = time.perf_counter() - start
    print(f"giant: closed in {elapsed * 1e3:.0f} ms")
    assert not window.worker.is_alive()
    assert elapsed < 1.0


# -- entry points and boundaries -----------------------------------------------------------------

def test_run_refuses_an_invalid_preset_with_one_line(capsys):
    assert app_main.run("no_such_tree_anywhere") == 2
    err = capsys.readouterr().err
    assert err.startswith("treedyn: ") and err.count("\n") == 1


def test_beaufort_names():
    assert beaufort(0.0) == (0, "calm")
    assert beaufort(6.0) == (4, "moderate breeze")
    assert beaufort(30.0) == (11, "violent storm")
    assert beaufort(40.0)[0] == 12
