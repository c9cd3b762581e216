"""Small dialogs of the main window."""

from __future__ import annotations

from PyQt6.QtWidgets import QCheckBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QWidget

from .controls import NumberBox

MAX_IMAGE_SIDE = 8192  # px (an offscreen framebuffer larger than this may not exist)


def form_with_buttons(dialog: QDialog, rows: list) -> QFormLayout:
    """The dialog's layout: a form of rows (a (label, widget) pair, or a widget across the
    form), then OK and Cancel, which accept and reject the dialog."""
    form = QFormLayout(dialog)
    for row in rows:
        if isinstance(row, tuple):
            form.addRow(*row)
        else:
            form.addRow(row)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                               | QDialogButtonBox.StandardButton.Cancel)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    form.addRow(buttons)
    return form


class ImageSizeDialog(QDialog):
    """Width × height of an exported image, px; the view's size by default, aspect kept
    unless unticked."""

    def __init__(self, width: int, height: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export image")
        self._aspect = width / max(height, 1)
        # Boxes that take any number typed and bring it into range, saying so below them (a
        # QSpinBox refused the digit that left its range: 10000 became 1000).
        self.width_box = NumberBox("Width", 0, "px", kept=0)
        self.height_box = NumberBox("Height", 0, "px", kept=0)
        self.adjusted = QLabel()
        self.adjusted.setStyleSheet("color: #b03020;")
        for box, value in ((self.width_box, width), (self.height_box, height)):
            box.setRange(16, MAX_IMAGE_SIDE)
            box.setSingleStep(1)
            box.setValue(int(value))
            box.adjusted.connect(self.adjusted.setText)
        self.keep_aspect = QCheckBox("Keep the view's aspect ratio")
        self.keep_aspect.setChecked(True)
        note = QLabel("The camera's direction as it is; the whole tree while the view\n"
                      "is framed (Home), else all the view shows, at any aspect ratio.")
        note.setStyleSheet("color: #505050;")
        form_with_buttons(self, [("Width", self.width_box), ("Height", self.height_box),
                                 self.adjusted, self.keep_aspect, note])
        self.width_box.valueChanged.connect(self._width_changed)
        self.height_box.valueChanged.connect(self._height_changed)

    def size_chosen(self) -> tuple[int, int]:
        return round(self.width_box.value()), round(self.height_box.value())

    def _width_changed(self, value: int) -> None:
        if self.keep_aspect.isChecked():
            blocked = self.height_box.blockSignals(True)
            self.height_box.setValue(round(value / self._aspect))
            self.height_box.blockSignals(blocked)

    def _height_changed(self, value: int) -> None:
        if self.keep_aspect.isChecked():
            blocked = self.width_box.blockSignals(True)
            self.width_box.setValue(round(value * self._aspect))
            self.width_box.blockSignals(blocked)

    @staticmethod
    def get_size(parent: QWidget | None, width: int, height: int) -> tuple[int, int] | None:
        """Ask; None when cancelled."""
        dialog = ImageSizeDialog(width, height, parent)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            return dialog.size_chosen()
        return None
