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
