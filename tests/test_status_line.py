"""The status line shows one text at a time: a message while it lasts, else the app's state."""

from PyQt6.QtWidgets import QLabel, QMainWindow

from treedyn_app.status_line import StatusLine


def test_one_text_at_a_time_even_before_the_window_is_shown(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    bar = StatusLine()
    window.setStatusBar(bar)
    bar.set_state("Preparing the simulation…")
    bar.showMessage("compiling physics kernels, first run only: 3 of 30")  # not shown yet
    window.show()
    qtbot.waitExposed(window)
    labels = [w for w in bar.findChildren(QLabel) if w.isVisible() and w.text()]
    assert [label.text() for label in labels] == [
        "compiling physics kernels, first run only: 3 of 30"]

    bar.showMessage("Saved tree.yaml", 200)
    assert bar.text() == bar.currentMessage() == "Saved tree.yaml"
    bar.set_state("Running")  # the state changes under a message: the message stays
    assert bar.text() == "Saved tree.yaml"
    qtbot.waitUntil(lambda: bar.text() == "Running", timeout=2000)
    assert bar.currentMessage() == ""
    bar.showMessage("the simulation diverged at t = 1.2 s")
    bar.clearMessage()
    assert bar.text() == "Running"


def test_a_long_message_wraps_instead_of_being_cut(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    bar = StatusLine()
    window.setStatusBar(bar)
    window.resize(700, 300)
    window.show()
    qtbot.waitExposed(window)
    one_line = bar.label.height()
    bar.showMessage("rk4 refused: it needs 447 sub-steps per 8.33 ms step to stay stable "
                    "(fastest joint mode 1.34e+05/s) and would run at 0.00047× real time "
                    "(< 0.05×); keeping implicit")
    qtbot.waitUntil(lambda: bar.label.height() > one_line, timeout=2000)
    label = bar.label
    assert label.height() >= label.heightForWidth(label.width())
    assert label.width() < label.fontMetrics().horizontalAdvance(label.text())  # it did wrap
