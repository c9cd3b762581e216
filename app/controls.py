"""The control panel: only widgets. The main window wires them to the worker.

Every slider has a numeric field and a unit. A widget that echoes a model
change (a preset loaded, the integrator refused) updates through the
``set_*`` methods, which block its signals, so nothing feeds back (napari's
habit, docs/design.md §9).
"""

from __future__ import annotations

import math

from PyQt6.QtCore import QEvent, QLocale, QObject, Qt, pyqtSignal
from PyQt6.QtGui import QValidator
from PyQt6.QtWidgets import (QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox,
                             QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                             QPushButton, QSizePolicy, QSlider, QToolButton, QVBoxLayout, QWidget)

from treedyn_core.model.widget_ranges import key_range

SLIDER_STEPS = 1000
TIME_SCALE_RANGE = (0.1, 4.0)  # the app's own setting (no preset key): slow motion to ×4

# Beaufort scale: upper bound of each force's mean wind speed (m/s, WMO), and its name.
BEAUFORT = ((0.5, "calm"), (1.5, "light air"), (3.3, "light breeze"), (5.5, "gentle breeze"),
            (7.9, "moderate breeze"), (10.7, "fresh breeze"), (13.8, "strong breeze"),
            (17.1, "near gale"), (20.7, "gale"), (24.4, "strong gale"), (28.4, "storm"),
            (32.6, "violent storm"), (math.inf, "hurricane"))

# What each model is, in one line (docs/design.md §3): shown when the user switches to it.
MODEL_NOTES = {
    "articulated": "Articulated model: exact multibody dynamics; every limb's weight and wind "
                   "load are carried down through its joints to the root.",
    "seed": "Seed model (the blog's): each limb turns about its own base; the limb below "
            "feels its spring and damper torques, never its weight or its wind force.",
}


TURBULENCE_TIP = "Turbulence intensity σ_u / U"
STAND_TURBULENCE_TIP = ("Turbulence intensity σ_u / U_h at the canopy top: the tree stands in a "
                        "forest stand, where the wind's σ_u and mean speed u_h are taken at "
                        "the top of the canopy (inside it the wind is slower and relatively "
                        "gustier)")


def stand_words(stand: tuple[float, float] | None, reference_height: float) -> str:
    """The wind box's note for a tree in a forest stand (canopy height, spacing m; the wind
    speed given at `reference_height` m); '' on open ground."""
    if stand is None:
        return ""
    height, spacing = stand
    where = ("speed and turbulence σ_u/U_h at the canopy top" if reference_height == height
             else f"speed at {reference_height:g} m, turbulence σ_u/U_h at the canopy top")
    return f"In a forest stand ({height:g} m canopy, {spacing:g} m spacing): {where}"


def beaufort(speed: float) -> tuple[int, str]:
    """(force, name) on the Beaufort scale of a mean wind `speed` in m/s."""
    for force, (upper, name) in enumerate(BEAUFORT):
        if speed < upper:
            return force, name
    return len(BEAUFORT) - 1, BEAUFORT[-1][1]


# Digits a number box keeps: a loaded or typed value is held (and shown) to this many decimals,
# so the box shows what the simulation uses; the slider's own values are rounded to the box's
# display digits.
STORED_DECIMALS = 6


def _plain(value: float, decimals: int) -> str:
    """`value` with `decimals` decimals, or with as many more (up to STORED_DECIMALS) as it
    needs to be shown exactly: 6.0, 6.25."""
    text = f"{value:.{decimals}f}"
    if abs(float(text) - value) > 0.5 * 10 ** -STORED_DECIMALS:
        text = f"{value:.{STORED_DECIMALS}f}".rstrip("0").rstrip(".")
    return text


class NumberBox(QDoubleSpinBox):
    """A number box that takes any number typed and brings it into its range: clamped to the
    nearest legal value (or, with `period`, wrapped: 400° is 40°), and `adjusted(message)` says
    so. Qt's own box refuses each keystroke that leaves the range, so typing 35 where 30 is the
    largest gave 3."""

    adjusted = pyqtSignal(str)

    def __init__(self, what: str, decimals: int, unit: str = "", prefix: str = "",
                 period: float | None = None, kept: int = STORED_DECIMALS):
        super().__init__()
        self._what, self._shown, self._kept = what, decimals, kept
        self._period = period
        self.setLocale(QLocale.c())  # one decimal point, the one the presets use
        self.setDecimals(kept)
        self.setKeyboardTracking(False)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        if prefix:
            self.setPrefix(prefix)
        if unit:
            self.setSuffix(f" {unit}")

    def textFromValue(self, value: float) -> str:  # noqa: N802 (Qt's name)
        return _plain(value, self._shown)

    def _number_text(self, text: str) -> str:
        text = text.strip()
        if self.prefix() and text.startswith(self.prefix()):
            text = text[len(self.prefix()):]
        if self.suffix().strip() and text.endswith(self.suffix().strip()):
            text = text[:-len(self.suffix().strip())]
        return text.strip().replace(",", ".")

    def validate(self, text: str, pos: int):
        number = self._number_text(text)
        try:
            value = float(number)
        except ValueError:
            partial = number in ("", "-", "+", ".", "-.", "+.") or number[-1:] in ("e", "E") \
                or number[-2:] in ("e-", "E-", "e+", "E+")
            state = QValidator.State.Intermediate if partial else QValidator.State.Invalid
            return state, text, pos
        state = (QValidator.State.Acceptable if math.isfinite(value)
                 else QValidator.State.Intermediate)
        return state, text, pos

    def valueFromText(self, text: str) -> float:  # noqa: N802
        try:
            typed = float(self._number_text(text))
        except ValueError:
            return self.value()
        return self.legal(typed, tell=True)

    def legal(self, value: float, tell: bool = False) -> float:
        """`value` brought into the range (wrapped with a period, else clamped), rounded to the
        digits kept; with `tell`, `adjusted` says what happened to a value outside."""
        low, high = self.minimum(), self.maximum()
        if self._period is not None:
            high = math.nextafter(self._period, 0.0)  # a full turn is 0 (the file says so)
        if low <= value <= high:
            return round(value, self._kept)
        if self._period is not None:
            result = round(value % self._period, self._kept)
            note = f"is the same direction as {self._shown_text(result)}"
        else:
            result = low if value < low else high
            note = (f"is below the smallest allowed: set to {self._shown_text(result)}"
                    if value < low else
                    f"is above the largest allowed: set to {self._shown_text(result)}")
        if tell:
            self.adjusted.emit(f"{self._what} {self._shown_text(value, exact=True)} {note}")
        return result

    def _shown_text(self, value: float, exact: bool = False) -> str:
        number = f"{value:g}" if exact else _plain(value, self._shown)
        return f"{self.prefix()}{number}{self.suffix()}"


class WheelGuard(QObject):
    """An event filter that lets the wheel over a control without the keyboard focus scroll the
    panel (the event goes on to the parent) instead of changing the control: scrolling past a
    slider moved it. A control takes the focus by a click or Tab (StrongFocus), and then the
    wheel changes it."""

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) \
                and not watched.hasFocus():
            # Handed to the panel's scroll bar: Qt propagates an ignored wheel event to the
            # parent only when it came from the window system, not when sent by a program.
            area = watched.parentWidget()
            while area is not None and not isinstance(area, QAbstractScrollArea):
                area = area.parentWidget()
            if area is not None:
                QApplication.sendEvent(area.verticalScrollBar(), event)
            else:
                event.ignore()
            return True  # never delivered to the control
        return False


class ValueSlider(QWidget):
    """A horizontal slider with a number box and a unit, linear or logarithmic.

    `valueChanged(float)` is emitted when the user moves either; `set_value` changes both
    without emitting. The box holds every legal value of [minimum, maximum] (a preset's key's
    range); the slider covers it too, logarithmically from `10**-decimals` when `log` (a log
    slider whose range starts at 0 has 0 at its left end). `adjusted(str)` relays the box's
    message when a typed value was brought into the range.
    """

    valueChanged = pyqtSignal(float)
    adjusted = pyqtSignal(str)

    def __init__(self, minimum: float, maximum: float, value: float, *, decimals: int = 2,
                 unit: str = "", prefix: str = "", log: bool = False, wrap: bool = False,
                 what: str = "The value", parent: QWidget | None = None):
        super().__init__(parent)
        self._min, self._max, self._log = float(minimum), float(maximum), log
        self._decimals = decimals
        # A logarithmic slider starts at the box's smallest positive step; 0, if legal, is its
        # left end.
        self._log_min = max(self._min, 10.0 ** -decimals)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setPageStep(SLIDER_STEPS // 10)
        self.slider.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.slider.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.spin = NumberBox(what, decimals, unit, prefix, 360.0 if wrap else None)
        self.spin.setRange(self._min, self._max)
        self.spin.setWrapping(wrap)
        self.spin.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.spin.setMinimumWidth(84)
        if log:
            self.spin.setStepType(QAbstractSpinBox.StepType.AdaptiveDecimalStepType)
        else:
            self.spin.setSingleStep(10 ** -decimals * 10 if decimals else 1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.set_value(value)
        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)
        self.spin.adjusted.connect(self.adjusted)

    def value(self) -> float:
        return float(self.spin.value())

    def range(self) -> tuple[float, float]:
        """The smallest and largest value the control holds."""
        return self._min, self._max

    def set_value(self, value: float) -> None:
        """Show `value` (brought into the range) without emitting valueChanged."""
        value = self.spin.legal(float(value))
        for widget, shown in ((self.spin, value), (self.slider, self.position(value))):
            blocked = widget.blockSignals(True)
            widget.setValue(shown)
            widget.blockSignals(blocked)

    def position(self, value: float) -> int:
        """The slider's position for `value`."""
        if self._log:
            if value < self._log_min:
                return 0
            low = self._log_min
            start = 1 if self._min < low else 0  # 0 holds the left end
            fraction = math.log(value / low) / math.log(self._max / low)
            return start + round(fraction * (SLIDER_STEPS - start))
        fraction = (value - self._min) / (self._max - self._min)
        return round(fraction * SLIDER_STEPS)

    def value_at(self, position: int) -> float:
        """The value at slider position `position`, rounded to the box's digits (a log
        slider's to three significant digits where they are finer)."""
        if self._log:
            low = self._log_min
            start = 1 if self._min < low else 0
            if position < start:
                return self._min
            fraction = (position - start) / (SLIDER_STEPS - start)
            value = low * (self._max / low) ** fraction
            digits = max(self._decimals, 2 - math.floor(math.log10(value)))
            return min(max(round(value, digits), self._min), self._max)
        fraction = position / SLIDER_STEPS
        value = self._min + fraction * (self._max - self._min)
        return min(max(round(value, self._decimals), self._min), self._max)

    def _slider_moved(self, position: int) -> None:
        blocked = self.spin.blockSignals(True)
        self.spin.setValue(self.value_at(position))
        self.spin.blockSignals(blocked)
        self.valueChanged.emit(self.value())

    def _spin_changed(self, value: float) -> None:
        blocked = self.slider.blockSignals(True)
        self.slider.setValue(self.position(value))
        self.slider.blockSignals(blocked)
        self.valueChanged.emit(float(value))


def _schema_slider(path: str, value: float, *, decimals: int, what: str, scale: float = 1.0,
                   **options) -> "ValueSlider":
    """A slider over the schema's range of preset key `path` (times `scale`: a fraction shown in
    %), a strict bound moved in by the box's smallest step."""
    low, high = key_range(path).legal(10.0 ** -decimals / scale)
    return ValueSlider(low * scale, high * scale, value, decimals=decimals, what=what, **options)


class Controls(QWidget):
    """Preset picker and summary, wind and tree sliders, simulation choices and transport
    buttons. The sliders' ranges are the preset schema's (`treedyn_core.model.widget_ranges`)."""

    def __init__(self, integrators: tuple[str, ...], models: tuple[str, ...],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.preset = QComboBox()
        self.preset.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset.setMinimumContentsLength(16)
        self.preset.setToolTip("Shipped presets (File → Open… for a preset file)")
        self.description = QLabel()  # the preset's summary: two or three lines
        self.description.setWordWrap(True)
        self.description.setStyleSheet("color: #505050;")
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.more_button = QToolButton()
        self.more_button.setText("More…")
        self.more_button.setCheckable(True)
        self.more_button.setAutoRaise(True)
        self.more_button.setToolTip("The preset's full description")
        self.full_description = QLabel()
        self.full_description.setWordWrap(True)
        self.full_description.setStyleSheet("color: #505050;")
        self.full_description.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        self.full_description.hide()
        self.more_button.toggled.connect(self._show_full_description)

        self.wind_speed = _schema_slider("wind.speed", 6.0, decimals=1, unit="m/s",
                                         what="Wind speed")
        self.beaufort = QLabel()
        self.beaufort.setMinimumWidth(150)
        self.wind_direction = ValueSlider(0.0, 360.0, 0.0, decimals=0, unit="°", wrap=True,
                                          what="Wind direction")
        self.wind_direction.setToolTip("Azimuth the wind blows toward: 0° = +x, 90° = +y")
        self.turbulence = _schema_slider("wind.turbulence_intensity", 20.0, decimals=0,
                                         scale=100.0, unit="%", what="Turbulence")
        self.turbulence.setToolTip(TURBULENCE_TIP)
        # In a forest stand: what the speed and turbulence are taken at (hidden in the open).
        self.stand_note = QLabel()
        self.stand_note.setWordWrap(True)
        self.stand_note.setStyleSheet("color: #505050;")
        self.stand_note.hide()
        self.stiffness = _schema_slider("tuning.stiffness_scale", 1.0, decimals=2, prefix="×",
                                        log=True, what="Stiffness")
        self.stiffness.setToolTip("Multiplies every joint stiffness (the rest pose is not "
                                  "re-balanced: a softened tree sags)")
        self.damping = _schema_slider("tuning.damping_scale", 1.0, decimals=2, prefix="×",
                                      log=True, what="Damping")
        self.damping.setToolTip("Multiplies every joint damping (0 at the slider's left end)")
        self.time_scale = ValueSlider(*TIME_SCALE_RANGE, 1.0, decimals=2, prefix="×", log=True,
                                      what="Time scale")
        self.time_scale.setToolTip("Simulated seconds per second of wall-clock time")
        self.integrator = QComboBox()
        self.integrator.addItems(integrators)
        self.integrator.setToolTip("implicit: the θ-method, stable at the app's step; galpha: "
                                   "generalized-α, second order, little numerical damping, "
                                   "about twice the θ-method's cost per step; rk4: "
                                   "explicit, sub-stepped below its stability limit or refused")
        self.model = QComboBox()
        self.model.addItems(models)
        self.model.setToolTip("\n".join(MODEL_NOTES.get(name, name) for name in models))
        self.play_button = QPushButton("Pause")
        self.step_button = QPushButton("Step")
        self.reset_button = QPushButton("Reset")
        self.play_button.setToolTip("Play / pause (Space)")
        self.step_button.setToolTip("Pause and advance one step")
        self.reset_button.setToolTip("Back to the start at t = 0: the balance in the mean "
                                     "wind, or the rest pose (Ctrl+R)")
        self.wind_speed.valueChanged.connect(self._show_beaufort)
        self._show_beaufort(self.wind_speed.value())
        self.wheel_guard = WheelGuard(self)
        for widget in (*(s.slider for s in self.sliders()), *(s.spin for s in self.sliders()),
                       self.preset, self.integrator, self.model):
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            widget.installEventFilter(self.wheel_guard)

        preset_box = QGroupBox("Preset")
        preset_layout = QVBoxLayout(preset_box)
        preset_layout.addWidget(self.preset)
        preset_layout.addWidget(self.description)
        more_row = QHBoxLayout()
        more_row.addStretch(1)
        more_row.addWidget(self.more_button)
        preset_layout.addLayout(more_row)
        preset_layout.addWidget(self.full_description)
        preset_layout.setSpacing(2)

        wind_box = QGroupBox("Wind")
        wind_form = QFormLayout(wind_box)
        wind_form.addRow("Speed", self.wind_speed)
        wind_form.addRow("", self.beaufort)
        wind_form.addRow("Direction", self.wind_direction)
        wind_form.addRow("Turbulence", self.turbulence)
        wind_form.addRow(self.stand_note)

        tree_box = QGroupBox("Tree")
        tree_form = QFormLayout(tree_box)
        tree_form.addRow("Stiffness", self.stiffness)
        tree_form.addRow("Damping", self.damping)

        sim_box = QGroupBox("Simulation")
        sim_form = QFormLayout(sim_box)
        sim_form.addRow("Time scale", self.time_scale)
        sim_form.addRow("Integrator", self.integrator)
        sim_form.addRow("Model", self.model)
        buttons = QHBoxLayout()
        for button in (self.play_button, self.step_button, self.reset_button):
            buttons.addWidget(button)
        sim_form.addRow(buttons)
        self.wind_box, self.tree_box, self.sim_box = wind_box, tree_box, sim_box

        layout = QVBoxLayout(self)
        for box in (preset_box, wind_box, tree_box, sim_box):
            layout.addWidget(box)
        layout.addStretch(1)

    def sliders(self) -> tuple[ValueSlider, ...]:
        return (self.wind_speed, self.wind_direction, self.turbulence, self.stiffness,
                self.damping, self.time_scale)

    # -- echoes of the model (no signals) ------------------------------------------------------

    def set_presets(self, entries: list[tuple[str, str]]) -> None:
        """The picker's entries: (label shown, source) pairs; the source (a shipped preset's
        key or a file's path) is the item's data."""
        blocked = self.preset.blockSignals(True)
        self.preset.clear()
        for label, source in entries:
            self.preset.addItem(label, source)
        self.preset.blockSignals(blocked)

    def preset_source(self, index: int) -> str | None:
        """The source (shipped key or path) of the picker's entry `index`."""
        data = self.preset.itemData(index)
        return str(data) if data is not None else None

    def show_preset(self, label: str, source: str | None, summary: str = "",
                    description: str = "") -> None:
        """Select the entry of `source` in the picker (adding it as `label`, e.g. a file,
        when not listed); show the preset's `summary` and, behind More…, its `description`."""
        blocked = self.preset.blockSignals(True)
        index = self.preset.findData(source) if source is not None else -1
        if index < 0:
            index = self.preset.findText(label)
        if index < 0:
            self.preset.addItem(label, source)
            index = self.preset.count() - 1
        self.preset.setCurrentIndex(index)
        self.preset.blockSignals(blocked)
        self.description.setText(summary)
        self.description.setToolTip(description)
        self.full_description.setText(description)
        self.more_button.setVisible(bool(description) and description != summary)
        if not self.more_button.isVisible():
            self.more_button.setChecked(False)

    def show_stand(self, stand: tuple[float, float] | None, reference_height: float) -> None:
        """Say what the wind controls mean for a tree in a forest stand (canopy height,
        spacing m), or on open ground (None); the speed is given at `reference_height` m."""
        self.stand_note.setText(stand_words(stand, reference_height))
        self.stand_note.setVisible(stand is not None)
        self.turbulence.setToolTip(TURBULENCE_TIP if stand is None else STAND_TURBULENCE_TIP)
        top = stand is not None and reference_height == stand[0]
        self.wind_speed.setToolTip("Mean wind speed u_h at the canopy top" if top
                                   else f"Mean wind speed at {reference_height:g} m")

    def _show_full_description(self, shown: bool) -> None:
        self.full_description.setVisible(shown)
        self.more_button.setText("Less" if shown else "More…")

    def show_values(self, *, wind_speed: float, wind_direction_deg: float,
                    turbulence_intensity: float, stiffness_scale: float,
                    damping_scale: float) -> None:
        """Show a preset's settings (turbulence as a fraction 0..1)."""
        self.wind_speed.set_value(wind_speed)
        self._show_beaufort(self.wind_speed.value())
        self.wind_direction.set_value(wind_direction_deg % 360.0)
        self.turbulence.set_value(100.0 * turbulence_intensity)
        self.stiffness.set_value(stiffness_scale)
        self.damping.set_value(damping_scale)

    def show_choice(self, combo: QComboBox, text: str) -> None:
        blocked = combo.blockSignals(True)
        index = combo.findText(text)
        if index >= 0:
            combo.setCurrentIndex(index)
        combo.blockSignals(blocked)

    def show_playing(self, playing: bool) -> None:
        self.play_button.setText("Pause" if playing else "Play")

    def _show_beaufort(self, speed: float) -> None:
        force, name = beaufort(speed)
        self.beaufort.setText(f"Beaufort {force}: {name}")
