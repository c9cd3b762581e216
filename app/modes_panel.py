"""The Modes panel: only widgets (the main window computes, animates and wires).

A table of the lowest modes (frequency, period, damping ratio, motion), a
status line ("computing…"), an amplitude slider and a speed choice. Choosing a
row emits `modeChosen(index)`; −1 when the choice is cleared. Hovering a row emits
`modeHovered(index)`; −1 when the pointer leaves the rows.
"""

from __future__ import annotations

import math

from PyQt6.QtCore import QEvent, Qt, pyqtSignal
from PyQt6.QtWidgets import (QAbstractItemView, QComboBox, QFormLayout, QHBoxLayout, QHeaderView,
                             QLabel, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout,
                             QWidget)

from .controls import ValueSlider
from .mode_shapes import DEFAULT_AMPLITUDE

HEADERS = ("f (Hz)", "T (s)", "ζ", "motion")
SPEEDS = (("real time", 1.0), ("× 1/4", 0.25), ("× 1/10", 0.1))


def _number(value: float, digits: int = 4) -> str:
    return f"{value:.{digits}g}" if math.isfinite(value) else "–"


class ModesPanel(QWidget):
    """Widgets of the mode viewer."""

    modeChosen = pyqtSignal(int)
    modeHovered = pyqtSignal(int)
    amplitudeChanged = pyqtSignal(float)  # fraction of the tree's height
    speedChanged = pyqtSignal(float)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header = self.table.horizontalHeader()
        for column in range(len(HEADERS)):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.setToolTip("Natural frequency, period and damping ratio of each mode about "
                              "the static equilibrium (wind off), as `treedyn modes` prints "
                              "them. Point at one to see the limbs it moves on the tree; "
                              "choose one to watch it (the simulation pauses).")
        self.table.setMouseTracking(True)
        self._hovered = -1
        self.amplitude = ValueSlider(0.0, 25.0, 100 * DEFAULT_AMPLITUDE, decimals=1,
                                     unit="% of height")
        self.amplitude.setToolTip("The mode's largest tip displacement, in per cent of the "
                                  "tree's height")
        self.speed = QComboBox()
        for text, _ in SPEEDS:
            self.speed.addItem(text)
        self.speed.setToolTip("Animation speed (high modes alias at the screen's frame rate "
                              "in real time)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Back to the running simulation")
        self.stop_button.setEnabled(False)

        form = QFormLayout()
        form.addRow("Amplitude", self.amplitude)
        speed_row = QHBoxLayout()
        speed_row.addWidget(self.speed, 1)
        speed_row.addWidget(self.stop_button)
        form.addRow("Speed", speed_row)
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        layout.addLayout(form)

        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.cellEntered.connect(lambda row, column: self._hover(row))
        self.table.viewport().installEventFilter(self)
        self.amplitude.valueChanged.connect(lambda v: self.amplitudeChanged.emit(v / 100.0))
        self.speed.currentIndexChanged.connect(
            lambda i: self.speedChanged.emit(SPEEDS[i][1]))
        self.stop_button.clicked.connect(self.table.clearSelection)

    # -- read by the main window ------------------------------------------------------------------

    def amplitude_fraction(self) -> float:
        return self.amplitude.value() / 100.0

    def speed_factor(self) -> float:
        return SPEEDS[self.speed.currentIndex()][1]

    def chosen(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def frequencies(self) -> list[float]:
        """Hz, as listed."""
        return [float(self.table.item(r, 0).data(Qt.ItemDataRole.UserRole))
                for r in range(self.table.rowCount())]

    # -- echoes (no signals) -----------------------------------------------------------------------

    def show_computing(self, what: str, seconds: float | None = None) -> None:
        """Say the modes of `what` are being computed (for `seconds` s so far); the list is
        emptied when they are not yet (None)."""
        text = f"Computing the modes of {what}…"
        if seconds is None:
            self._fill([])
        elif seconds >= 1.0:
            text += f" {seconds:.0f} s (a large tree takes up to a minute)"
        self.status.setText(text)

    def show_error(self, message: str) -> None:
        self.status.setText(f"No modes: {message}")
        self._fill([])

    def show_modes(self, result, seconds: float, note: str = "") -> None:
        """List a `ModeResult` (keeps the chosen row when there is one)."""
        chosen = self.chosen()
        rows = [(result.frequencies_hz[k], result.periods[k], result.damping_ratios[k],
                 result.descriptions[k]) for k in range(result.count)]
        self._fill(rows)
        self.status.setText(f"{result.count} lowest modes of {result.preset_name} about its "
                            f"static equilibrium, wind off ({seconds:.1f} s to compute)."
                            + (f" {note}" if note else ""))
        if 0 <= chosen < len(rows):
            self.choose(chosen, emit=False)

    def choose(self, index: int, emit: bool = True) -> None:
        blocked = self.table.blockSignals(not emit)
        if index < 0:
            self.table.clearSelection()
        else:
            self.table.selectRow(index)
        self.table.blockSignals(blocked)
        self.stop_button.setEnabled(index >= 0)

    def _fill(self, rows) -> None:
        self._hover(-1)
        blocked = self.table.blockSignals(True)
        self.table.clearSelection()
        self.table.setRowCount(len(rows))
        for r, (f, T, zeta, text) in enumerate(rows):
            items = (QTableWidgetItem(_number(f)), QTableWidgetItem(_number(T)),
                     QTableWidgetItem(_number(zeta, 3)), QTableWidgetItem(text))
            items[0].setData(Qt.ItemDataRole.UserRole, float(f))
            for c, item in enumerate(items):
                if c < 3:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight
                                          | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.blockSignals(blocked)
        self.stop_button.setEnabled(False)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Widen the table (and so its dock) to show every cell whole."""
        table = self.table
        table.resizeColumnsToContents()
        columns = sum(table.sizeHintForColumn(c) if table.rowCount() else
                      table.horizontalHeader().sectionSizeHint(c) for c in range(len(HEADERS)))
        table.setMinimumWidth(columns + table.verticalHeader().sizeHint().width()
                              + table.verticalScrollBar().sizeHint().width()
                              + 2 * table.frameWidth() + 4)

    def hovered(self) -> int:
        return self._hovered

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Leave:
            self._hover(-1)
        return False

    def _hover(self, index: int) -> None:
        if index != self._hovered:
            self._hovered = index
            self.modeHovered.emit(index)

    def _selection_changed(self) -> None:
        index = self.chosen()
        self.stop_button.setEnabled(index >= 0)
        self.modeChosen.emit(index)
