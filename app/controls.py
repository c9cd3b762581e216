"""The control panel: only widgets. The main window wires them to the worker.

Every slider has a numeric field and a unit. A widget that echoes a model
change (a preset loaded, the integrator refused) updates through the
``set_*`` methods, which block its signals, so nothing feeds back (napari's
habit, docs/design.md §9).
"""

from __future__ import annotations

import math

from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtWidgets import (QAbstractSpinBox, QComboBox, QDoubleSpinBox, QFormLayout,
                             QGroupBox, QHBoxLayout, QLabel, QPushButton, QSizePolicy,
                             QSlider, QVBoxLayout, QWidget)

SLIDER_STEPS = 1000

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


def beaufort(speed: float) -> tuple[int, str]:
    """(force, name) on the Beaufort scale of a mean wind `speed` in m/s."""
    for force, (upper, name) in enumerate(BEAUFORT):
        if speed < upper:
            return force, name
    return len(BEAUFORT) - 1, BEAUFORT[-1][1]


class ValueSlider(QWidget):
    """A horizontal slider with a numeric field and a unit, linear or logarithmic.

    `valueChanged(float)` is emitted when the user moves either; `set_value`
    changes both without emitting.
    """

    valueChanged = pyqtSignal(float)

    def __init__(self, minimum: float, maximum: float, value: float, *, decimals: int = 2,
                 unit: str = "", prefix: str = "", log: bool = False, wrap: bool = False,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._min, self._max, self._log = float(minimum), float(maximum), log
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setPageStep(SLIDER_STEPS // 10)
        self.slider.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.spin = QDoubleSpinBox()
        self.spin.setRange(self._min, self._max)
        self.spin.setDecimals(decimals)
        self.spin.setKeyboardTracking(False)
        self.spin.setWrapping(wrap)
        self.spin.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.spin.setMinimumWidth(84)
        if log:
            self.spin.setStepType(QAbstractSpinBox.StepType.AdaptiveDecimalStepType)
        else:
            self.spin.setSingleStep(10 ** -decimals * 10 if decimals else 1)
        if prefix:
            self.spin.setPrefix(prefix)
        if unit:
            self.spin.setSuffix(f" {unit}")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.set_value(value)
        self.slider.valueChanged.connect(self._slider_moved)
        self.spin.valueChanged.connect(self._spin_changed)

    def value(self) -> float:
        return float(self.spin.value())

    def set_value(self, value: float) -> None:
        """Show `value` (clamped to the range) without emitting valueChanged."""
        value = min(max(float(value), self._min), self._max)
        for widget, shown in ((self.spin, value), (self.slider, self._position(value))):
            blocked = widget.blockSignals(True)
            widget.setValue(shown)
            widget.blockSignals(blocked)

    def _position(self, value: float) -> int:
        if self._log:
            fraction = math.log(value / self._min) / math.log(self._max / self._min)
        else:
            fraction = (value - self._min) / (self._max - self._min)
        return round(fraction * SLIDER_STEPS)

    def _value_at(self, position: int) -> float:
        fraction = position / SLIDER_STEPS
        if self._log:
            return self._min * (self._max / self._min) ** fraction
        return self._min + fraction * (self._max - self._min)

    def _slider_moved(self, position: int) -> None:
        blocked = self.spin.blockSignals(True)
        self.spin.setValue(self._value_at(position))
        self.spin.blockSignals(blocked)
        self.valueChanged.emit(self.value())

    def _spin_changed(self, value: float) -> None:
        blocked = self.slider.blockSignals(True)
        self.slider.setValue(self._position(value))
        self.slider.blockSignals(blocked)
        self.valueChanged.emit(float(value))


class Controls(QWidget):
    """Preset picker, wind and tree sliders, simulation choices and transport buttons."""

    def __init__(self, integrators: tuple[str, ...], models: tuple[str, ...],
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.preset = QComboBox()
        self.preset.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset.setMinimumContentsLength(16)
        self.preset.setToolTip("Shipped presets (File → Open… for a preset file)")
        self.description = QLabel()
        self.description.setWordWrap(True)
        self.description.setStyleSheet("color: #505050;")
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.wind_speed = ValueSlider(0.0, 30.0, 6.0, decimals=1, unit="m/s")
        self.beaufort = QLabel()
        self.beaufort.setMinimumWidth(150)
        self.wind_direction = ValueSlider(0.0, 360.0, 0.0, decimals=0, unit="°", wrap=True)
        self.wind_direction.setToolTip("Azimuth the wind blows toward: 0° = +x, 90° = +y")
        self.turbulence = ValueSlider(0.0, 100.0, 20.0, decimals=0, unit="%")
        self.turbulence.setToolTip("Turbulence intensity σ_u / U")
        self.stiffness = ValueSlider(0.1, 10.0, 1.0, decimals=2, prefix="×", log=True)
        self.stiffness.setToolTip("Multiplies every joint stiffness (the rest pose is not "
                                  "re-balanced: a softened tree sags)")
        self.damping = ValueSlider(0.1, 10.0, 1.0, decimals=2, prefix="×", log=True)
        self.damping.setToolTip("Multiplies every joint damping")
        self.time_scale = ValueSlider(0.1, 4.0, 1.0, decimals=2, prefix="×", log=True)
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
        self.reset_button.setToolTip("Back to the rest pose at t = 0 (Ctrl+R)")
        self.wind_speed.valueChanged.connect(self._show_beaufort)
        self._show_beaufort(self.wind_speed.value())

        preset_box = QGroupBox("Preset")
        preset_layout = QVBoxLayout(preset_box)
        preset_layout.addWidget(self.preset)
        preset_layout.addWidget(self.description)

        wind_box = QGroupBox("Wind")
        wind_form = QFormLayout(wind_box)
        wind_form.addRow("Speed", self.wind_speed)
        wind_form.addRow("", self.beaufort)
        wind_form.addRow("Direction", self.wind_direction)
        wind_form.addRow("Turbulence", self.turbulence)

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

        layout = QVBoxLayout(self)
        for box in (preset_box, wind_box, tree_box, sim_box):
            layout.addWidget(box)
        layout.addStretch(1)

    # -- echoes of the model (no signals) ------------------------------------------------------

    def set_presets(self, names: list[str]) -> None:
        blocked = self.preset.blockSignals(True)
        self.preset.clear()
        self.preset.addItems(names)
        self.preset.blockSignals(blocked)

    def show_preset(self, label: str, description: str = "") -> None:
        """Select `label` in the picker (adding it, e.g. a file's name, when not listed)."""
        blocked = self.preset.blockSignals(True)
        index = self.preset.findText(label)
        if index < 0:
            self.preset.addItem(label)
            index = self.preset.count() - 1
        self.preset.setCurrentIndex(index)
        self.preset.blockSignals(blocked)
        self.description.setText(description)

    def show_values(self, *, wind_speed: float, wind_direction_deg: float,
                    turbulence_intensity: float, stiffness_scale: float,
                    damping_scale: float) -> None:
        """Show a preset's settings (turbulence as a fraction 0..1)."""
        self.wind_speed.set_value(wind_speed)
        self._show_beaufort(wind_speed)
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
