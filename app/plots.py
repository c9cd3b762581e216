"""The live plot under the view: crown-top displacement and base bending moment, last 20 s.

`PlotHistory` (no Qt) keeps the worker's `Probe` samples of the running
simulation in a window of simulated time; `LivePlot` (a QWidget painted with
QPainter) draws it as two scrolling strips. A second vispy canvas would cost
another OpenGL context on the software rasteriser for three polylines; a
plotting library (pyqtgraph) would be a dependency for what ~150 lines of
QPainter do.
"""

from __future__ import annotations

import math

import numpy as np
from PyQt6.QtCore import QPointF, QRectF, Qt
from PyQt6.QtGui import QColor, QFont, QPainter, QPen, QPolygonF
from PyQt6.QtWidgets import QSizePolicy, QWidget

WINDOW = 20.0  # s of simulated time shown
CAPACITY = 4096  # samples kept (the worker publishes at most ~60 per wall second)
DOWNWIND = QColor(31, 94, 170)
CROSSWIND = QColor(214, 120, 20)
MOMENT = QColor(140, 50, 40)
AXIS = QColor(90, 90, 90)
GRID = QColor(222, 224, 226)
BACKGROUND = QColor(250, 250, 250)


def _column(index: int, doc: str) -> property:
    """A read-only view of column `index` of the samples kept (`PlotHistory`)."""
    return property(lambda self: self._data[:self._count, index], doc=doc)


class PlotHistory:
    """Samples (t s, downwind m, crosswind m, |base moment| kN·m) over the last `window` s of
    simulated time, oldest first. A new simulation or a jump back in time (reset) starts
    afresh."""

    def __init__(self, window: float = WINDOW, capacity: int = CAPACITY):
        self.window = float(window)
        self._data = np.empty((capacity, 4))
        self._count = 0
        self._key = None

    def add(self, probe, key=None) -> bool:
        """Add a `worker.Probe`; `key` identifies the simulation (its generation). True when
        the sample is new."""
        if key != self._key:
            self.clear()
            self._key = key
        if self._count and probe.time <= self._data[self._count - 1, 0]:
            if probe.time < self._data[self._count - 1, 0]:
                self.clear()  # reset: time went back
            else:
                return False
        if self._count == len(self._data):
            self._drop_before(probe.time - self.window, keep_one=True)
            if self._count == len(self._data):  # all within the window: thin out by half
                kept = self._data[1:self._count:2].copy()
                self._count = len(kept)
                self._data[:self._count] = kept
        self._data[self._count] = (probe.time, probe.downwind, probe.crosswind,
                                   probe.base_moment_magnitude / 1e3)
        self._count += 1
        self._drop_before(probe.time - self.window, keep_one=True)
        return True

    def clear(self) -> None:
        self._count = 0

    def _drop_before(self, start: float, keep_one: bool) -> None:
        """Drop samples older than `start` (keeping the last of them, so the line reaches the
        window's left edge)."""
        times = self._data[:self._count, 0]
        first = int(np.searchsorted(times, start, side="left"))
        if keep_one:
            first = max(first - 1, 0)
        if first > 0:
            self._data[:self._count - first] = self._data[first:self._count]
            self._count -= first

    def __len__(self) -> int:
        return self._count

    time = _column(0, "(S,) s.")
    downwind = _column(1, "(S,) m.")
    crosswind = _column(2, "(S,) m.")
    moment = _column(3, "(S,) kN·m.")

    def span(self) -> tuple[float, float]:
        """(start, end) s of the time axis: the last `window` s, or [0, window] at first."""
        end = float(self.time[-1]) if self._count else 0.0
        return max(end, self.window) - self.window, max(end, self.window)


def nice_step(raw: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is ≥ raw (> 0)."""
    power = 10.0 ** math.floor(math.log10(raw))
    return next(f * power for f in (1.0, 2.0, 5.0, 10.0) if raw <= f * power * (1 + 1e-9))


def nice_ticks(low: float, high: float, count: int = 4) -> np.ndarray:
    """Round tick values (1, 2, 5 × 10^k) within [low, high], about `count` steps apart."""
    step = nice_step(max(high - low, 1e-12) / count)
    return np.arange(math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9) + 1) * step


def _tick_text(value: float, step: float) -> str:
    decimals = max(0, -int(math.floor(math.log10(step) + 1e-9))) if step > 0 else 0
    return f"{value:.{decimals}f}"


class AxisRange:
    """A y range of one round step each side of zero (or above it), the step the smallest of
    1, 2, 5 × 10^k that holds the data: ticks at −step, 0, step. It grows at once and shrinks
    when the data (the last 20 s) fits a smaller step, so the strips do not jitter."""

    def __init__(self, symmetric: bool, floor: float):
        self.symmetric = symmetric
        self.floor = floor
        self.step = floor
        self.low, self.high = (-floor, floor) if symmetric else (0.0, floor)

    def fit(self, values: list[np.ndarray]) -> tuple[float, float]:
        finite = [v[np.isfinite(v)] for v in values if len(v)]
        finite = [v for v in finite if len(v)]
        if not finite:
            return self.low, self.high
        if self.symmetric:
            need = max(float(np.abs(v).max()) for v in finite)
        else:
            need = max(float(v.max()) for v in finite)
        self.step = nice_step(max(need, self.floor))
        self.low, self.high = (-self.step if self.symmetric else 0.0), self.step
        return self.low, self.high


def polyline(x: np.ndarray, y: np.ndarray) -> QPolygonF:
    """A QPolygonF of the points (x, y), px, filled through its buffer: a QPointF is two
    doubles, and building one Python QPointF per sample cost ~1 µs each."""
    polygon = QPolygonF()
    polygon.resize(len(x))
    if len(x):
        buffer = polygon.data()
        buffer.setsize(16 * len(x))
        points = np.frombuffer(buffer, dtype=np.float64).reshape(len(x), 2)
        points[:, 0] = x
        points[:, 1] = y
    return polygon


class LivePlot(QWidget):
    """Two strips over the history's time span: crown-top displacement downwind and
    crosswind (m), and the bending moment at the base (kN·m)."""

    def __init__(self, history: PlotHistory, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.setMinimumHeight(150)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setToolTip("Crown top's displacement from rest, along the wind (downwind) and "
                        "across it (crosswind, 90° to its left), and the bending moment at "
                        "the base of the trunk, over the last 20 s of simulated time")
        self._displacement_range = AxisRange(symmetric=True, floor=0.01)
        self._moment_range = AxisRange(symmetric=False, floor=0.001)
        self.names = ("downwind", "crosswind")  # the displacement's two axes, in words
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(self._font.pointSizeF() - 1.0, 7.0))

    def set_wind(self, speed: float, direction_deg: float) -> None:
        """Name the displacement's axes for the wind in force: downwind and crosswind, or in
        still air the azimuths they lie along (the probe keeps the wind's last direction)."""
        if speed > 0:
            names = ("downwind", "crosswind")
        else:
            names = (f"toward {direction_deg % 360:.0f}°",
                     f"toward {(direction_deg + 90) % 360:.0f}°")
        if names != self.names:
            self.names = names
            self.update()

    def sizeHint(self):
        hint = super().sizeHint()
        hint.setHeight(190)
        return hint

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
            painter.fillRect(self.rect(), BACKGROUND)
            painter.setFont(self._font)
            metrics = painter.fontMetrics()
            left = metrics.horizontalAdvance("−0.000") + 30
            right, top, bottom = 12, 6, metrics.height() + 6
            gap = metrics.height() + 4
            width = max(self.width() - left - right, 10)
            height = max(self.height() - top - bottom - gap, 20)
            upper = QRectF(left, top + metrics.height() + 2, width,
                           height * 0.55 - metrics.height() - 2)
            lower = QRectF(left, upper.bottom() + gap + metrics.height() + 2, width,
                           height * 0.45 - metrics.height() - 2)
            h = self.history
            start, end = h.span()
            t = h.time
            self._strip(painter, upper, start, end, t, [(h.downwind, DOWNWIND, self.names[0]),
                                                        (h.crosswind, CROSSWIND, self.names[1])],
                        self._displacement_range, "crown-top displacement (m)")
            self._strip(painter, lower, start, end, t, [(h.moment, MOMENT, "")],
                        self._moment_range, "bending moment at the base (kN·m)")
            self._time_axis(painter, lower, start, end)
        finally:
            painter.end()

    def _strip(self, painter, rect: QRectF, start, end, t, series, axis_range, title) -> None:
        low, high = axis_range.fit([values for values, _, _ in series])
        metrics = painter.fontMetrics()
        painter.setPen(QPen(AXIS))
        painter.drawText(QPointF(rect.left(), rect.top() - 4), title)
        legend_x = rect.left() + metrics.horizontalAdvance(title) + 16
        for _, color, name in series:
            if not name:
                continue
            painter.setPen(QPen(color, 2))
            y = rect.top() - 4 - metrics.ascent() / 2 + 1
            painter.drawLine(QPointF(legend_x, y), QPointF(legend_x + 16, y))
            painter.setPen(QPen(AXIS))
            painter.drawText(QPointF(legend_x + 20, rect.top() - 4), name)
            legend_x += 28 + metrics.horizontalAdvance(name)
        ticks = nice_ticks(low, high, 2)
        step = ticks[1] - ticks[0] if len(ticks) > 1 else axis_range.step

        def y_of(v):
            return rect.bottom() - (v - low) / (high - low) * rect.height()

        for value in ticks:
            y = y_of(value)
            painter.setPen(QPen(AXIS if abs(value) < 1e-12 else GRID, 1))
            painter.drawLine(QPointF(rect.left(), y), QPointF(rect.right(), y))
            painter.setPen(QPen(AXIS))
            text = _tick_text(value, step).replace("-", "−")
            painter.drawText(QRectF(0, y - metrics.height() / 2, rect.left() - 6,
                                    metrics.height()),
                             Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
        painter.setPen(QPen(AXIS, 1))
        painter.drawRect(rect)
        if len(t) < 2:
            return
        x = rect.left() + (t - start) / (end - start) * rect.width()
        painter.save()
        painter.setClipRect(rect)
        for values, color, _ in series:
            y = rect.bottom() - (values - low) / (high - low) * rect.height()
            painter.setPen(QPen(color, 1.6))
            painter.drawPolyline(polyline(x, y))
        painter.restore()

    def _time_axis(self, painter, rect: QRectF, start: float, end: float) -> None:
        metrics = painter.fontMetrics()
        painter.setPen(QPen(AXIS))
        ticks = nice_ticks(start, end, 5)
        for k, value in enumerate(ticks):
            x = rect.left() + (value - start) / (end - start) * rect.width()
            painter.drawLine(QPointF(x, rect.bottom()), QPointF(x, rect.bottom() + 3))
            text = f"{value:.0f}" + (" s" if k == len(ticks) - 1 else "")
            w = metrics.horizontalAdvance(text)
            left = min(x - w / 2, self.width() - 2 - w)
            painter.drawText(QPointF(left, rect.bottom() + 3 + metrics.ascent()), text)
