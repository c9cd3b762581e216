"""Words a user reads in the window (docs/design.md §9): nothing cut off at the default window
size — labels, the status line's longest messages, the modes table's cells — the energy
readout explained, and a line on what differs when the model is switched."""

from __future__ import annotations

from PyQt6.QtWidgets import QLabel

from test_app import CHANGE_TIMEOUT_MS, READY_TIMEOUT_MS, settings  # noqa: F401 (fixture)
from treedyn_app.controls import MODEL_NOTES
from treedyn_app.main_window import MainWindow
from treedyn_app.worker import RUNNING
from treedyn_core.model.preset import load_preset


def cut_labels(window) -> list[str]:
    """The visible labels whose text does not fit: wider than the label (one line) or, when it
    wraps, taller than the label."""
    cut = []
    for label in window.findChildren(QLabel):
        if not label.isVisible() or not label.text():
            continue
        room = label.contentsRect()
        if label.wordWrap():
            if label.heightForWidth(room.width()) > room.height():
                cut.append(label.text())
        elif label.fontMetrics().horizontalAdvance(label.text()) > room.width():
            cut.append(label.text())
    return cut


def cut_cells(table) -> list[str]:
    """The table's cells whose text is wider than its column."""
    header = table.horizontalHeader()
    metrics = table.fontMetrics()
    margin = 2 * table.style().pixelMetric(table.style().PixelMetric.PM_FocusFrameHMargin) + 1
    return [table.item(r, c).text() for r in range(table.rowCount())
            for c in range(table.columnCount())
            if metrics.horizontalAdvance(table.item(r, c).text()) + margin
            > header.sectionSize(c)]


def assert_nothing_cut(qtbot, window) -> None:
    """No label cut off once the layout has caught up with the last text change (a modes
    label rewritten by the modes thread grows on the next layout pass)."""
    try:
        qtbot.waitUntil(lambda: cut_labels(window) == [], timeout=2000)
    except qtbot.TimeoutError:
        pass
    assert cut_labels(window) == []


def test_nothing_is_cut_off_at_the_default_window_size(qtbot, settings):
    window = MainWindow(load_preset("young_oak"), settings=settings)  # its own default size
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING and window._generation > 0,
                    timeout=READY_TIMEOUT_MS)
    try:
        window.modes_action.trigger()
        table = window.modes_panel.table
        qtbot.waitUntil(lambda: table.rowCount() == 10, timeout=120_000)
        qtbot.wait(300)  # the status bar refreshes every 0.25 s
        assert table.rowCount() and cut_cells(table) == []
        assert_nothing_cut(qtbot, window)
        # The longest message the app shows: why rk4 is refused.
        window.controls.integrator.setCurrentText("rk4")
        qtbot.waitUntil(lambda: "rk4 refused" in window.statusBar().currentMessage(),
                        timeout=CHANGE_TIMEOUT_MS)
        assert_nothing_cut(qtbot, window)
        for name, note in MODEL_NOTES.items():
            window.controls.model.setCurrentText(name)
            if window.statusBar().currentMessage() == note:
                assert_nothing_cut(qtbot, window)
    finally:
        window.shutdown()


def test_energy_readout_and_model_switch_explain_themselves(qtbot, settings):
    window = MainWindow(load_preset("two_limbs"), settings=settings)
    qtbot.addWidget(window)
    try:
        tip = window.energy_label.toolTip()
        assert "kinetic + potential" in tip and "z = 0" in tip and "rest rotation" in tip
        window.controls.model.setCurrentText("seed")
        assert window.statusBar().currentMessage() == MODEL_NOTES["seed"]
        assert "never its weight" in MODEL_NOTES["seed"]
        window.controls.model.setCurrentText("articulated")
        assert window.statusBar().currentMessage() == MODEL_NOTES["articulated"]
    finally:
        window.shutdown()


def test_a_start_from_rest_for_want_of_a_balance_is_told(qtbot):
    """When the default start in the mean wind's balance finds none, the simulation starts
    from rest (`start_notice`, which `treedyn run` prints): the worker says so in words, after
    the load and after every reset, and the window shows them in the status line."""
    from treedyn_app.worker import START_FROM_REST, SimulationWorker
    from treedyn_core.simulation import Simulation

    class NoBalance(Simulation):
        def reset(self):
            super().reset()
            self.start_notice = "no static equilibrium under the mean wind was found"

    worker = SimulationWorker(load_preset("sapling"), simulation_factory=NoBalance)
    worker.start()
    try:
        told = []
        qtbot.waitUntil(lambda: told.extend(e.message for e in worker.events()
                                            if e.kind == "notice") or bool(told), timeout=60_000)
        assert told == [START_FROM_REST]
        assert "starts from rest" in START_FROM_REST and "no balance" in START_FROM_REST.lower()
        worker.reset()
        told.clear()
        qtbot.waitUntil(lambda: told.extend(e.message for e in worker.events()
                                            if e.kind == "notice") or bool(told), timeout=10_000)
        assert told == [START_FROM_REST]
    finally:
        worker.close()
