"""The app as a user lives with it: the controls in sight at common screen sizes,
typed numbers that mean what they show (widget, simulation and saved file agree), the wheel
scrolling the panel, nothing lost without asking, the window's geometry remembered.

Parameters are read from the Simulation the worker steps; dialogs are answered by the test
(the unsaved-changes question is window-modal and does not block, QFileDialog is patched).
"""

from __future__ import annotations

import math

import numpy as np

import pytest
from PyQt6.QtCore import QPoint, QPointF, QRect, QSettings, Qt
from PyQt6.QtGui import QWheelEvent
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QApplication, QFileDialog, QMessageBox

from test_app import READY_TIMEOUT_MS
from treedyn_app.main_window import MainWindow
from treedyn_app.worker import FAILED, RUNNING
from treedyn_core.model.preset import load_preset
from treedyn_core.model.widget_ranges import key_range

CHANGE_TIMEOUT_MS = 3000  # a change reaches the simulation (wind ramps over 1 s simulated)


@pytest.fixture
def settings_file(tmp_path):
    return str(tmp_path / "treedyn.ini")


@pytest.fixture
def window_at(qtbot, settings_file):
    """window_at(preset, width, height) → a shown, running MainWindow of that size."""
    windows = []

    def make(preset, width=None, height=None):
        settings = QSettings(settings_file, QSettings.Format.IniFormat)
        window = MainWindow(preset, settings=settings)
        qtbot.addWidget(window)
        windows.append(window)
        if width is not None:
            window.resize(width, height)
        window.show()
        qtbot.waitExposed(window)
        qtbot.waitUntil(lambda: window.worker.latest.state in (RUNNING, FAILED)
                        and window._generation > 0, timeout=READY_TIMEOUT_MS)
        return window

    yield make
    for window in windows:
        window.shutdown()


def rect_in_window(widget, window) -> QRect:
    return QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())


def visible_in_panel(widget, window) -> bool:
    """`widget` lies wholly inside the side panel's viewport (seen without scrolling)."""
    viewport = window.side_panel.viewport()
    return rect_in_window(viewport, window).contains(rect_in_window(widget, window)) \
        and widget.isVisible()


# -- controls first ------------------------------------------------------------------------------

def test_controls_are_in_sight_at_1280x800_and_the_view_keeps_half_at_1024x640(qtbot, window_at):
    window = window_at(load_preset("young_oak"))
    qtbot.wait(100)
    assert (window.width(), window.height()) == (1280, 800)  # the first window's size
    c = window.controls
    for widget in (c.wind_speed, c.wind_direction, c.turbulence, c.stiffness, c.damping,
                   c.time_scale, c.integrator, c.model, c.reset_button):
        assert visible_in_panel(widget, window), widget
    lines = c.description.text().splitlines()
    assert 2 <= c.description.heightForWidth(c.description.width()) \
        // c.description.fontMetrics().lineSpacing() <= 3
    assert "Quercus robur" in lines[0] and "limbs" in lines[-1] and "`" not in c.description.text()
    assert c.more_button.isVisible() and not c.full_description.isVisible()
    c.more_button.click()
    assert c.full_description.isVisible() and "Jenkins" in c.full_description.text()
    c.more_button.click()

    window.resize(1024, 640)
    qtbot.waitUntil(lambda: window.height() == 640, timeout=2000)
    qtbot.wait(100)
    view = window.canvas.widget
    assert view.height() >= 0.5 * window.height()
    assert view.width() >= 0.5 * window.width()
    for widget in (c.wind_speed, c.stiffness):  # the panel scrolls; the first ones are in sight
        assert visible_in_panel(widget, window), widget
    assert window.minimumWidth() <= 1024 and window.minimumHeight() <= 640


def test_window_geometry_and_splitters_are_remembered(qtbot, window_at):
    first = window_at(load_preset("sapling"), 1100, 700)
    qtbot.wait(50)
    first.splitter.setSizes([700, 400])
    sizes = first.splitter.sizes()
    first.close()
    second = window_at(load_preset("sapling"))
    qtbot.wait(50)
    assert (second.width(), second.height()) == (1100, 700)
    assert second.splitter.sizes() == sizes


def test_the_preset_list_shows_names_and_a_summary_for_every_preset(qtbot, window_at):
    from treedyn_core.model.preset import shipped_presets

    window = window_at(load_preset("sapling"))
    picker = window.controls.preset
    shown = {picker.itemData(i): picker.itemText(i) for i in range(picker.count())}
    for key in shipped_presets():
        assert shown[key] == load_preset(key).name
    assert picker.currentText() == "Oak sapling"


def test_summaries_of_species_generator_and_limb_presets():
    from treedyn_app.summary import plain_text, summary

    species = {"name": "x", "description": "",
               "tree": {"generator": {"species": "quercus_rubra", "height": 12.0, "dbh": 0.3,
                                      "stand": "forest", "leafless": True}}}
    text = summary(species)
    assert text.splitlines()[0] == "A forest-grown red oak (Quercus rubra), leafless."
    assert text.splitlines()[1] == "12 m tall · DBH 30 cm"
    generator = {"name": "x", "tree": {"generator": {"levels": 3, "species": None}}}
    assert summary(generator).startswith("A generated tree, 3 branching levels")
    assert summary({"name": "Two limbs", "tree": {"limbs": []}}) == "Two limbs."
    assert plain_text("See `treedyn modes` and **this**\n# Head") == \
        "See treedyn modes and this Head"


# -- numbers that mean what they show ------------------------------------------------------------

def type_into(box, text: str) -> None:
    """Type `text` over the box's contents and press Enter, as a user would."""
    box.lineEdit().selectAll()
    QTest.keyClicks(box, text)
    QTest.keyClick(box, Qt.Key.Key_Return)


# (control, preset key, widget units per preset unit, typed → expected widget value)
WIND_HIGH = key_range("wind.speed").maximum
CASES = {
    "wind_speed": ("wind.speed", 1.0, [
        ("0", 0.0), (f"{WIND_HIGH:g}", WIND_HIGH), ("6.25", 6.25), ("45", 45.0), ("35", 35.0),
        ("100", WIND_HIGH), ("60.5", WIND_HIGH), ("1e3", WIND_HIGH), ("-5", 0.0),
        ("-0.1", 0.0), ("61", WIND_HIGH), ("99999", WIND_HIGH), ("-1e9", 0.0),
        ("75", WIND_HIGH), ("120", WIND_HIGH)]),
    "wind_direction": ("wind.direction_deg", 1.0, [
        ("0", 0.0), ("359", 359.0), ("360", 0.0), ("400", 40.0), ("-30", 330.0), ("720", 0.0),
        ("725", 5.0), ("-360", 0.0), ("1000", 280.0), ("-1", 359.0), ("365.5", 5.5),
        ("450", 90.0), ("-90", 270.0), ("12.5", 12.5)]),
    "turbulence": ("wind.turbulence_intensity", 100.0, [
        ("0", 0.0), ("100", 100.0), ("12.5", 12.5), ("150", 100.0), ("-1", 0.0),
        ("100.5", 100.0), ("1000", 100.0), ("-50", 0.0), ("200", 100.0), ("101", 100.0),
        ("-0.5", 0.0), ("5e2", 100.0), ("-1e3", 0.0)]),
    "stiffness": ("tuning.stiffness_scale", 1.0, [
        ("0.01", 0.01), ("1000", 1000.0), ("20", 20.0), ("0.125", 0.125), ("0", 0.01),
        ("-1", 0.01), ("2000", 1000.0), ("1000.5", 1000.0), ("1e6", 1000.0),
        ("-0.01", 0.01), ("0.001", 0.01), ("5000", 1000.0), ("1e-9", 0.01), ("3", 3.0),
        ("-1e3", 0.01)]),
    "damping": ("tuning.damping_scale", 1.0, [
        ("0", 0.0), ("1000", 1000.0), ("0.05", 0.05), ("20", 20.0), ("-1", 0.0),
        ("2000", 1000.0), ("1000.01", 1000.0), ("-0.001", 0.0), ("1e5", 1000.0),
        ("-50", 0.0), ("3000", 1000.0), ("1e9", 1000.0), ("-1e-3", 0.0), ("1", 1.0)]),
}
SIM_ATTRIBUTE = {"wind.speed": "wind_speed", "wind.direction_deg": "wind_direction_deg",
                 "wind.turbulence_intensity": "turbulence_intensity",
                 "tuning.stiffness_scale": "stiffness_scale",
                 "tuning.damping_scale": "damping_scale"}


def same_angle(a: float, b: float) -> bool:
    return abs((a - b + 180.0) % 360.0 - 180.0) < 1e-6


@pytest.mark.parametrize("control", list(CASES))
def test_typed_values_are_clamped_and_agree_in_widget_simulation_and_file(
        qtbot, window_at, tmp_path, monkeypatch, control):
    key, factor, cases = CASES[control]
    window = window_at(load_preset("sapling"))
    window.controls.time_scale.set_value(4.0)
    window.worker.set_time_scale(4.0)
    slider = getattr(window.controls, control)
    box = slider.spin
    low, high = slider.range()
    assert (low, high) == ((0.0, 360.0) if control == "wind_direction" else
                           tuple(factor * v for v in key_range(key).legal(
                               10.0 ** -{"wind_speed": 1, "turbulence": 0}.get(control, 2)
                               / factor)))
    attribute = SIM_ATTRIBUTE[key]
    path = tmp_path / "typed.yaml"
    for typed, expected in cases:
        window.statusBar().clearMessage()
        type_into(box, typed)
        assert slider.value() == pytest.approx(expected, abs=1e-9), typed
        assert box.text().replace(box.prefix(), "").replace(box.suffix(), "").strip() \
            == f"{expected:.{box._shown}f}".rstrip("0").rstrip(".") \
            or float(box.cleanText()) == pytest.approx(expected), typed
        inside = float(typed) == expected or (control == "wind_direction"
                                               and float(typed) == expected)
        message = window.statusBar().currentMessage()
        if not inside:
            assert f"{float(typed):g}" in message and f"{expected:g}" in message, \
                (typed, message)
        else:
            assert message == "", (typed, message)
        want = expected / factor

        def reached():
            value = getattr(window.worker.simulation, attribute)
            if control == "wind_direction":
                return same_angle(value, want)
            return value == pytest.approx(want, abs=1e-9)

        qtbot.waitUntil(reached, timeout=CHANGE_TIMEOUT_MS)
        assert window.save_as(path)
        section, name = key.split(".")
        saved = load_preset(path).data[section][name]
        if control == "wind_direction":
            assert same_angle(saved, want), typed
        else:
            assert saved == pytest.approx(want, abs=1e-12), typed
        assert slider.value() == pytest.approx(expected, abs=1e-9)  # reloaded: shown the same


def test_a_loaded_value_is_shown_exactly(qtbot, window_at):
    from test_app import with_overrides

    window = window_at(with_overrides("sapling", "wind.speed=45", "wind.turbulence_intensity=0.125",
                                      "tuning.damping_scale=0", "tuning.stiffness_scale=0.333"))
    c = window.controls
    assert c.wind_speed.value() == 45.0 and c.wind_speed.spin.text() == "45.0 m/s"
    assert c.beaufort.text().startswith("Beaufort 12")
    assert c.turbulence.value() == 12.5 and c.turbulence.spin.text() == "12.5 %"
    assert c.damping.value() == 0.0 and c.damping.slider.value() == 0
    assert c.stiffness.spin.text() == "×0.333"
    sim = window.worker.simulation
    assert (sim.wind_speed, sim.damping_scale, sim.stiffness_scale) == (45.0, 0.0, 0.333)
    assert window.unsaved_settings() == {}


# -- the wheel scrolls the panel ----------------------------------------------------------------

def wheel(widget, steps: int = -3) -> None:
    """A wheel turn of `steps` notches (negative: toward the user) over the widget's middle."""
    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_over_an_unfocused_control_scrolls_the_panel(qtbot, window_at):
    window = window_at(load_preset("sapling"), 1024, 640)
    c = window.controls
    c.more_button.click()  # the full description: the panel scrolls
    qtbot.wait(100)
    bar = window.side_panel.verticalScrollBar()
    assert bar.maximum() > 0
    window.focus_view()
    for control in (c.stiffness.slider, c.stiffness.spin, c.damping.slider, c.integrator):
        bar.setValue(0)
        before = (c.stiffness.value(), c.damping.value(), c.integrator.currentText())
        assert not control.hasFocus()
        wheel(control)
        assert (c.stiffness.value(), c.damping.value(), c.integrator.currentText()) == before
        assert bar.value() > 0, control
    assert window.unsaved_settings() == {} and not window.isWindowModified()
    # With the focus (a click or Tab gives it), the wheel changes the control.
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    c.stiffness.slider.setFocus()
    qtbot.waitUntil(c.stiffness.slider.hasFocus, timeout=2000)
    wheel(c.stiffness.slider, 1)
    assert c.stiffness.value() != 1.0


# -- nothing lost without asking -----------------------------------------------------------------

def answer(qtbot, window, button) -> None:
    qtbot.waitUntil(lambda: window.unsaved_box is not None and window.unsaved_box.isVisible(),
                    timeout=2000)
    window.unsaved_box.button(button).click()
    qtbot.waitUntil(lambda: window.unsaved_box is None, timeout=2000)


def test_quit_open_and_preset_switch_ask_before_losing_changes(qtbot, window_at, tmp_path,
                                                               monkeypatch):
    window = window_at(load_preset("sapling"))
    c = window.controls
    B = QMessageBox.StandardButton
    c.stiffness.slider.setValue(c.stiffness.position(2.0))
    assert window.unsaved_settings() == {"tuning.stiffness_scale": 2.0}

    # Quit, cancelled: the window stays.
    window.quit_action.trigger()
    answer(qtbot, window, B.Cancel)
    assert window.isVisible() and window.timer.isActive()

    # Another preset, cancelled: the picker shows the running preset again.
    picker = c.preset
    index = picker.findData("two_limbs")
    picker.setCurrentIndex(index)
    picker.activated.emit(index)
    answer(qtbot, window, B.Cancel)
    assert picker.currentData() == "sapling" and window.preset.name == "Oak sapling"

    # Open…, Save: a shipped preset is saved as a new file, then the other one opens.
    other = tmp_path / "other.yaml"
    other.write_text(load_preset("two_limbs").path.read_text())
    saved = tmp_path / "mine.yaml"
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(other), ""))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(saved), ""))
    window.open_action.trigger()
    answer(qtbot, window, B.Save)
    assert load_preset(saved).data["tuning"]["stiffness_scale"] == 2.0
    qtbot.waitUntil(lambda: window.preset.name == "Two limbs", timeout=20_000)

    # File → Save writes a file's recipe back to it.
    qtbot.waitUntil(lambda: window.worker.simulation.tree.n == 2, timeout=20_000)
    c.damping.slider.setValue(c.damping.position(0.5))
    damping = c.damping.value()
    assert damping == pytest.approx(0.5, rel=0.02)
    window.save_action.trigger()
    assert load_preset(other).data["tuning"]["damping_scale"] == damping
    assert window.unsaved_settings() == {} and not window.isWindowModified()

    # A preset switch, discarded: it loads without saving.
    c.damping.slider.setValue(c.damping.position(3.0))
    index = picker.findData("sapling")
    picker.setCurrentIndex(index)
    picker.activated.emit(index)
    answer(qtbot, window, B.Discard)
    qtbot.waitUntil(lambda: window.preset.name == "Oak sapling", timeout=20_000)
    assert load_preset(other).data["tuning"]["damping_scale"] == damping

    # Quit, discarded: it closes.
    c.damping.slider.setValue(c.damping.position(3.0))
    window.quit_action.trigger()
    answer(qtbot, window, B.Discard)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=2000)
    assert not window.timer.isActive()


# -- exports -------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(2400, 1500), (2400, 2400), (1001, 777), (640, 1280)])
def test_an_exported_image_has_the_size_asked_and_the_whole_tree(qtbot, window_at, tmp_path,
                                                                  size):
    from test_app_interaction import read_png, tree_pixels

    window = window_at(load_preset("young_oak"))
    width, height = size
    path = tmp_path / "tree.png"
    assert window.export_image(path, width, height)
    image = read_png(str(path))
    assert image.shape == (height, width, 4)
    brown, green = tree_pixels(image)
    tree = brown | green
    # Rows of the tree, columns of the crown (the ground's edge may pass for bark).
    rows, columns = np.flatnonzero(tree.any(axis=1)), np.flatnonzero(green.any(axis=0))
    assert rows[0] > 0.01 * height and rows[-1] < 0.99 * height, (rows[0], rows[-1])
    assert columns[0] > 0.01 * width and columns[-1] < 0.99 * width, (columns[0], columns[-1])


def test_the_image_size_dialog_keeps_the_numbers_typed(qtbot):
    from treedyn_app.dialogs import ImageSizeDialog

    dialog = ImageSizeDialog(949, 583)
    qtbot.addWidget(dialog)
    type_into(dialog.width_box, "2400")
    assert dialog.size_chosen() == (2400, round(2400 * 583 / 949))
    type_into(dialog.height_box, "1500")
    assert dialog.size_chosen() == (round(1500 * 949 / 583), 1500)
    dialog.keep_aspect.setChecked(False)
    type_into(dialog.width_box, "2400")
    type_into(dialog.height_box, "2400")
    assert dialog.size_chosen() == (2400, 2400)


def test_the_export_dialog_keeps_its_choices_and_a_film_has_duration_times_fps_frames(qtbot):
    from treedyn_app.export_animation import (GLTF, MP4, ExportAnimationDialog, ExportRequest,
                                              film_frame_count)

    dialog = ExportAnimationDialog(None, ExportRequest(MP4, 3.0, 30.0, (640, 480)))
    qtbot.addWidget(dialog)
    assert dialog.request() == ExportRequest(MP4, 3.0, 30.0, (640, 480))
    dialog.duration.setValue(7.5)
    dialog.kind.setCurrentIndex(dialog.kind.findData(GLTF))
    assert dialog.request().duration == 7.5 and dialog.request().kind == GLTF
    assert film_frame_count(3.0, 30.0) == 90 and film_frame_count(0.5, 30.0) == 15


def test_the_export_dialog_takes_typed_numbers_whole_and_clamps_them(qtbot):
    """Duration, frames per second and film size take a number typed digit by digit (a Qt
    spin box refused the keystroke that left its range: 2500 frames/s gave 25, 1000 s 100 s),
    and bring one outside the range to the nearest legal value, saying so."""
    from treedyn_app.export_animation import (DURATION_RANGE, FPS_RANGE, MP4, ExportAnimationDialog)
    from treedyn_app.render_video import MAX_SIZE, MIN_SIDE

    dialog = ExportAnimationDialog(None)
    qtbot.addWidget(dialog)
    dialog.kind.setCurrentIndex(dialog.kind.findData(MP4))
    for text, duration in (("45", 45.0), ("120", 120.0), ("2.25", 2.25), ("599.9", 599.9),
                           ("1000", DURATION_RANGE[1]), ("0", DURATION_RANGE[0])):
        type_into(dialog.duration, text)
        assert dialog.request().duration == duration, text
        if text == "1000":
            assert "1000" in dialog.adjusted.text() and "600" in dialog.adjusted.text()
    for text, fps in (("25", 25.0), ("120", 120.0), ("240", 240.0), ("2500", FPS_RANGE[1]),
                      ("0", FPS_RANGE[0]), ("59.6", 60.0)):
        type_into(dialog.fps, text)
        assert dialog.request().fps == fps, text
    type_into(dialog.width_box, "1920")
    type_into(dialog.height_box, "1080")
    assert dialog.request().size == (1920, 1080)
    type_into(dialog.width_box, "99999")
    type_into(dialog.height_box, "1081")
    assert dialog.request().size == (MAX_SIZE[0], 1080)  # even sizes only (H.264)
    type_into(dialog.height_box, "3")
    assert dialog.request().size[1] == MIN_SIDE


# -- words and small things ----------------------------------------------------------------------

def test_two_limbs_is_seen_across_its_tilt_and_the_plot_names_still_air(qtbot, window_at):
    from test_app import with_overrides

    window = window_at(with_overrides("two_limbs", "wind.speed=0"))
    canvas = window.canvas
    tree = window.worker.simulation.tree
    base, tip = canvas.project(np.array([tree.rest_base[1], tree.rest_tip[1]]))
    # Limb B leans 30° toward −y: on screen its tip is well to one side of its base.
    assert abs(tip[0] - base[0]) > 0.25 * abs(tip[1] - base[1])
    assert canvas.view.camera.azimuth != 0.0
    young = window_at(load_preset("young_oak"))
    assert young.canvas.view.camera.azimuth == 0.0  # a tree without a lean: as before
    qtbot.waitUntil(lambda: window.plot.names[0].startswith("toward"), timeout=2000)
    assert window.plot.names == ("toward 0°", "toward 90°")
    window.controls.wind_speed.set_value(5.0)
    window.worker.set_wind_speed(5.0)
    qtbot.waitUntil(lambda: window.plot.names == ("downwind", "crosswind"),
                    timeout=CHANGE_TIMEOUT_MS)


def test_the_compass_caption_clears_its_dial():
    from treedyn_app.wind_overlay import CAPTION_GAP, placement

    for width, height in ((950, 600), (600, 400), (2400, 2400)):
        centre, radius = placement(width, height)
        assert CAPTION_GAP >= 1.25
        assert centre[1] + (CAPTION_GAP + 0.45) * radius <= height  # the caption fits


def test_reset_says_where_the_tree_starts(qtbot, window_at):
    window = window_at(load_preset("sapling"))
    window.reset_action.trigger()
    assert window.statusBar().currentMessage() == \
        "Reset to t = 0: the tree bent in its balance in the mean wind"
    from test_app import with_overrides

    still = window_at(with_overrides("sapling", "simulation.start=rest"))
    still.reset_action.trigger()
    assert still.statusBar().currentMessage() == "Reset to t = 0: the rest pose"


# -- smooth slow motion -------------------------------------------------------------------------

def test_between_turns_limbs_on_the_great_circle_and_keeps_their_length():
    from treedyn_app.smooth_pose import between

    rng = np.random.default_rng(40)
    base0 = rng.normal(size=(50, 3))
    u0 = rng.normal(size=(50, 3))
    u0 /= np.linalg.norm(u0, axis=1)[:, None]
    length = rng.uniform(0.1, 2.0, 50)
    tip0 = base0 + length[:, None] * u0
    # State 1: each limb turned by 0.3 rad about an axis normal to it, its base moved.
    normal = np.cross(u0, rng.normal(size=(50, 3)))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    u1 = np.cos(0.3) * u0 + np.sin(0.3) * np.cross(normal, u0)
    base1 = base0 + 0.1
    tip1 = base1 + length[:, None] * u1
    for alpha, want in ((0.0, (base0, tip0)), (1.0, (base1, tip1))):
        got = between(base0, tip0, base1, tip1, alpha)
        assert np.allclose(got[0], want[0], atol=1e-12) and np.allclose(got[1], want[1],
                                                                       atol=1e-12)
    base, tip = between(base0, tip0, base1, tip1, 0.25)
    assert np.allclose(base, base0 + 0.025)
    assert np.allclose(np.linalg.norm(tip - base, axis=1), length, rtol=1e-12)
    u = (tip - base) / length[:, None]
    assert np.allclose(np.arccos(np.clip(np.einsum("ni,ni->n", u, u0), -1, 1)), 0.075,
                       atol=1e-9)  # a quarter of the turn, on the great circle


def draws_per_second(qtbot, window, seconds: float) -> float:
    count = [0]

    def counted(event=None):
        count[0] += 1

    window.canvas.canvas.events.draw.connect(counted)
    try:
        qtbot.wait(int(1000 * seconds))
    finally:
        window.canvas.canvas.events.draw.disconnect(counted)
    return count[0] / seconds


@pytest.mark.slow
def test_slow_motion_draws_at_the_rate_of_real_time(qtbot, window_at):
    """×0.1 on young_oak: the view draws the poses between the simulation's states at every
    tick, so about as many frames a second as at ×1 (before: 11–12 fps, one per step).
    Rates are compared in alternation on the same (shared, loaded) machine."""
    window = window_at(load_preset("young_oak"))
    c = window.controls
    rates = {1.0: [], 0.1: []}
    for _ in range(2):
        for scale in (1.0, 0.1):
            c.time_scale.spin.setValue(scale)
            qtbot.waitUntil(lambda: window.worker.latest.settings.time_scale == scale,
                            timeout=CHANGE_TIMEOUT_MS)
            qtbot.wait(300)
            rates[scale].append(draws_per_second(qtbot, window, 2.0))
    fast, slow = max(rates[1.0]), max(rates[0.1])
    print(f"draws per second: ×1 {rates[1.0]}, ×0.1 {rates[0.1]}")
    assert slow >= 0.8 * fast, rates
    step_rate = 0.1 / window.worker.simulation.dt  # states a second at ×0.1
    assert slow > 2 * step_rate, rates


# -- no silent stalls ---------------------------------------------------------------------------

def test_compile_progress_in_words():
    from treedyn_app.worker import COMPILING_TEXT, FIRST_RUN_KERNELS, compiling_words

    total = FIRST_RUN_KERNELS[("articulated", "implicit")]
    assert compiling_words("articulated", "implicit", True, 12, None) == \
        (f"{COMPILING_TEXT}: 12 of about {total}", total)
    assert compiling_words("articulated", "implicit", True, 12, 60) == \
        (f"{COMPILING_TEXT}: 12 of 60", 60)
    assert compiling_words("articulated", "galpha", False, 2, 3) == \
        ("compiling the galpha integrator's kernels (once; the simulation waits): 2 of 3", 3)
    assert compiling_words("seed", "implicit", False, 4, None) == \
        ("compiling the seed model's kernels (once; the simulation waits): 4 done", None)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sapling", "young_oak"])
def test_switching_integrator_and_model_after_the_background_compile_has_no_gap(
        qtbot, window_at, monkeypatch, name):
    """After the first start the other kernels compile in the background; a switch to each
    integrator and model then keeps the simulation's states coming (gaps recorded by the
    worker below 0.5 s)."""
    monkeypatch.setenv("TREEDYN_BACKGROUND_COMPILE", "1")  # tests/conftest.py turns it off
    window = window_at(load_preset(name))
    worker = window.worker
    qtbot.waitUntil(lambda: worker._background is not None, timeout=10_000)
    qtbot.waitUntil(worker.background_compile_done, timeout=READY_TIMEOUT_MS)
    from treedyn_app.worker import BACKGROUND_KERNELS
    from treedyn_core import warm_up

    assert all(warm_up.is_warm(*pair) for pair in BACKGROUND_KERNELS)
    from treedyn_app.mode_shapes import modes_kernels_warm
    assert modes_kernels_warm()  # and the modes' own kernels (View → Modes… after)
    c = window.controls
    longest = {}
    for combo, choice in ((c.integrator, "galpha"), (c.integrator, "rk4"),
                          (c.integrator, "implicit"), (c.model, "seed"),
                          (c.model, "articulated")):
        qtbot.wait(300)
        worker.gaps.clear()
        combo.setCurrentText(choice)
        qtbot.waitUntil(lambda: choice in (worker.latest.settings.integrator,
                                           worker.latest.settings.model)
                        or "refused" in window.statusBar().currentMessage(), timeout=10_000)
        qtbot.wait(1000)
        longest[choice] = (max(worker.gaps), worker.latest.settings.integrator,
                           worker.latest.settings.model)
    print("longest gap after each switch (s):", longest)
    assert max(gap for gap, _, _ in longest.values()) < 0.5, longest


def test_compile_progress_shows_a_bar_in_the_status_bar_and_the_view(qtbot, window_at):
    from treedyn_app.worker import Event

    window = window_at(load_preset("sapling"))
    text = "compiling the galpha integrator's kernels (once; the simulation waits): 3 of 10"
    window._handle(Event("compiling", text, done=3, total=10))
    bar = window.compile_bar
    assert bar.isVisible() and (bar.value(), bar.maximum()) == (3, 10)
    assert window.statusBar().text() == text[0].upper() + text[1:]
    assert window.canvas.message.splitlines()[1] == "█" * 6 + "░" * 14
    window._handle(Event("ready"))
    assert not bar.isVisible() and not window.canvas.message


def test_typed_time_scales_are_clamped_to_the_apps_range(qtbot, window_at):
    from treedyn_app.controls import TIME_SCALE_RANGE

    window = window_at(load_preset("sapling"))
    slider = window.controls.time_scale
    low, high = TIME_SCALE_RANGE
    for typed, expected in (("0.1", low), ("4", high), ("0.25", 0.25), ("40", high),
                            ("10", high), ("0", low), ("-1", low), ("0.01", low),
                            ("4.5", high), ("1e3", high), ("0.05", low), ("100", high),
                            ("1", 1.0)):
        window.statusBar().clearMessage()
        type_into(slider.spin, typed)
        assert slider.value() == pytest.approx(expected), typed
        qtbot.waitUntil(lambda: window.worker.latest.settings.time_scale
                        == pytest.approx(expected), timeout=CHANGE_TIMEOUT_MS)
        told = window.statusBar().currentMessage()
        assert (told != "") == (float(typed) != expected), (typed, told)


def test_the_image_size_dialog_clamps_a_typed_size_and_says_so(qtbot):
    from treedyn_app.dialogs import MAX_IMAGE_SIDE, ImageSizeDialog

    dialog = ImageSizeDialog(949, 583)
    qtbot.addWidget(dialog)
    dialog.keep_aspect.setChecked(False)
    type_into(dialog.width_box, "10000")
    assert dialog.size_chosen()[0] == MAX_IMAGE_SIDE
    assert "10000" in dialog.adjusted.text() and str(MAX_IMAGE_SIDE) in dialog.adjusted.text()
    type_into(dialog.height_box, "2400.4")
    assert dialog.size_chosen() == (MAX_IMAGE_SIDE, 2400)
    type_into(dialog.height_box, "3")
    assert dialog.size_chosen() == (MAX_IMAGE_SIDE, 16)


COUNT_MODES_COMPILES = """
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, e): pass
    def on_end(self, e):
        f = e.data["dispatcher"].py_func
        if f.__module__.startswith("treedyn_core"): compiled.append(f.__qualname__)
from treedyn_core.analysis.modes import modes
from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation
sim = Simulation.from_data(load_preset("two_limbs").data)
event.register("numba:compile", Listener())
modes(sim, 3)
print(",".join(compiled))
"""


@pytest.mark.slow
def test_the_modes_kernels_are_warmed_in_a_child_and_then_compiled_by_no_one():
    """The background compile's last job (`mode_shapes.warm_modes_kernels`, in a child): after
    it, the modes of a new process compile no kernel (they held the GUI's process ~2.5 s)."""
    import subprocess
    import sys

    from treedyn_app.mode_shapes import MODES_STAMP, WARM_MODES_CODE, modes_kernels_warm
    from treedyn_core.numerics import kernel
    from treedyn_core import warm_up

    if not kernel.CACHING:
        pytest.skip("no kernel cache")
    folder = kernel.package_cache_folder()
    (folder / MODES_STAMP).unlink(missing_ok=True)
    # The two kernels only the modes use, out of the cache (numba's files are named after them).
    for pattern in ("modes._add_ancestors-*", "tree_lowrank._lowrank_matvec-*"):
        for path in (p for cached in kernel.package_cache_folders() for p in cached.glob(pattern)):
            path.unlink()
    assert not modes_kernels_warm()
    env, folder = warm_up.child_environment()
    before = subprocess.run([sys.executable, "-c", COUNT_MODES_COMPILES], env=env, cwd=folder,
                            check=True, capture_output=True, text=True,
                            timeout=READY_TIMEOUT_MS / 1000)
    assert "_add_ancestors" in before.stdout  # compiled here, the cache lacking it
    for pattern in ("modes._add_ancestors-*", "tree_lowrank._lowrank_matvec-*"):
        for path in (p for cached in kernel.package_cache_folders() for p in cached.glob(pattern)):
            path.unlink()
    subprocess.run([sys.executable, "-c", WARM_MODES_CODE], env=env, cwd=folder, check=True,
                   timeout=READY_TIMEOUT_MS / 1000)
    assert modes_kernels_warm()
    out = subprocess.run([sys.executable, "-c", COUNT_MODES_COMPILES], env=env, cwd=folder,
                         check=True, capture_output=True, text=True,
                         timeout=READY_TIMEOUT_MS / 1000)
    assert out.stdout.strip() == ""
