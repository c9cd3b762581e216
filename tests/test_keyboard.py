"""The window's shortcuts wherever the focus is (app/keyboard.py), driven with real key events
under Xvfb: Space, `.`, Ctrl+R and Home act from every widget, except the keys a focused field
uses for editing; Esc or Enter hands the focus back to the view."""

from __future__ import annotations

from PyQt6.QtCore import Qt
from PyQt6.QtTest import QTest
from PyQt6.QtWidgets import QApplication

from test_app import CHANGE_TIMEOUT_MS, open_window, settings  # noqa: F401 (fixtures)
from treedyn_app.worker import PAUSED, RUNNING
from treedyn_core.model.preset import load_preset


def active(qtbot, window):
    qtbot.waitExposed(window)
    window.windowHandle().requestActivate()  # shortcuts need the active window (no WM here)
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    return window


def focus(qtbot, widget):
    widget.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is widget, timeout=2000)


def press(qtbot, key, modifier=Qt.KeyboardModifier.NoModifier):
    """A key on whatever widget has the focus, as the keyboard would send it."""
    QTest.keyClick(QApplication.focusWidget(), key, modifier)
    qtbot.wait(20)


def wait_state(qtbot, window, state):
    qtbot.waitUntil(lambda: window.worker.latest.state == state, timeout=CHANGE_TIMEOUT_MS)


def test_space_pauses_after_typing_into_the_wind_box(qtbot, open_window):
    window = active(qtbot, open_window(load_preset("sapling")))
    spin = window.controls.wind_speed.spin
    focus(qtbot, spin)
    spin.selectAll()
    QTest.keyClicks(spin, "12")
    press(qtbot, Qt.Key.Key_Space)
    wait_state(qtbot, window, PAUSED)
    assert window.controls.play_button.text() == "Play"
    assert spin.cleanText() == "12"  # Space typed nothing into the box
    press(qtbot, Qt.Key.Key_Return)  # commits and hands the focus to the view
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.canvas.widget, timeout=2000)
    assert window.controls.wind_speed.value() == 12.0
    press(qtbot, Qt.Key.Key_Space)
    wait_state(qtbot, window, RUNNING)
    qtbot.waitUntil(lambda: window.worker.simulation.wind_speed == 12.0,
                    timeout=CHANGE_TIMEOUT_MS)


def test_editing_keys_stay_in_the_number_box(qtbot, open_window):
    window = active(qtbot, open_window(load_preset("sapling")))
    spin = window.controls.stiffness.spin
    focus(qtbot, spin)
    spin.selectAll()
    QTest.keyClicks(spin, "2")
    press(qtbot, Qt.Key.Key_Period)  # a decimal point, not Step
    QTest.keyClicks(spin, "5")
    assert spin.cleanText() == "2.5"
    assert window.worker.latest.state == RUNNING
    press(qtbot, Qt.Key.Key_Escape)  # undoes the typing and hands the focus to the view
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.canvas.widget, timeout=2000)
    assert spin.value() == 1.0 and window.worker.simulation.stiffness_scale == 1.0
    press(qtbot, Qt.Key.Key_Period)  # in the view: Step
    wait_state(qtbot, window, PAUSED)


def test_shortcuts_act_from_sliders_combos_and_buttons(qtbot, open_window):
    window = active(qtbot, open_window(load_preset("sapling")))
    c = window.controls
    actions = {Qt.Key.Key_Space: window.play_action, Qt.Key.Key_Period: window.step_action,
               Qt.Key.Key_R: window.reset_action, Qt.Key.Key_Home: window.frame_action}
    fired = []
    for key, action in actions.items():
        action.triggered.connect(lambda checked=False, k=key: fired.append(k))
    speed = c.wind_speed.value()
    for widget in (c.wind_speed.slider, c.model, c.play_button):
        focus(qtbot, widget)
        for key in actions:
            press(qtbot, key, Qt.KeyboardModifier.ControlModifier if key == Qt.Key.Key_R
                  else Qt.KeyboardModifier.NoModifier)
        assert fired == list(actions), type(widget).__name__
        fired.clear()
        assert QApplication.focusWidget() is widget
    # The keys acted on the window, not on the widgets: the slider did not jump to its start
    # (Home), the combo kept its model, the button was not clicked by Space.
    assert c.wind_speed.value() == speed and c.model.currentText() == "articulated"
    wait_state(qtbot, window, PAUSED)  # . paused the run last
    press(qtbot, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.canvas.widget, timeout=2000)
