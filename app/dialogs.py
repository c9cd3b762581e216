"""Small dialogs of the main window."""

from __future__ import annotations

from PyQt6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QFormLayout, QLabel,
                             QSpinBox, QWidget)

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
        self.width_box = QSpinBox()
        self.height_box = QSpinBox()
        for box, value in ((self.width_box, width), (self.height_box, height)):
            box.setRange(16, MAX_IMAGE_SIDE)
            box.setSuffix(" px")
            box.setValue(int(value))
            # The other side follows the number typed, not each digit on the way to it.
            box.setKeyboardTracking(False)
        self.keep_aspect = QCheckBox("Keep the view's aspect ratio")
        self.keep_aspect.setChecked(True)
        note = QLabel("The camera as it is; another aspect ratio shows more\n"
                      "or less of the scene at the sides.")
        note.setStyleSheet("color: #505050;")
        form_with_buttons(self, [("Width", self.width_box), ("Height", self.height_box),
                                 self.keep_aspect, note])
        self.width_box.valueChanged.connect(self._width_changed)
        self.height_box.valueChanged.connect(self._height_changed)

    def size_chosen(self) -> tuple[int, int]:
        return self.width_box.value(), self.height_box.value()

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
