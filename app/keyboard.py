"""The window's shortcut keys wherever the keyboard focus is (docs/design.md §9).

Qt offers a key to the focused widget first (a ``ShortcutOverride`` event): a number box
takes Space, a slider Home, a button Space, and the window's shortcut never fires. The
`KeyRouter`, an event filter on the application, decides instead: while a text or number
field has the focus it keeps the keys that edit it (``.`` and Home; a text field also
Space), every other key of a shortcut (Space in a number box, Ctrl+R anywhere) goes to the
window's action. Enter or Esc in any of the window's widgets (Esc first restoring a number
box's committed value) hands the focus back to the view, where every key is a shortcut.
"""

from __future__ import annotations

from PyQt6.QtCore import QEvent, QObject, Qt, QTimer
from PyQt6.QtGui import QKeySequence
from PyQt6.QtWidgets import QAbstractSpinBox, QLineEdit, QPlainTextEdit, QTextEdit, QWidget

# Keys a focused field uses for editing, so they are not shortcuts while it has the focus.
NUMBER_EDITING_KEYS = frozenset({Qt.Key.Key_Period, Qt.Key.Key_Home})
TEXT_EDITING_KEYS = NUMBER_EDITING_KEYS | {Qt.Key.Key_Space}
RETURN_KEYS = frozenset({Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape})


def _combination(event) -> QKeySequence:
    """The key and modifiers of a key event, as a one-key sequence (keypad modifier dropped:
    the keypad's Enter and . are the same keys as the main ones)."""
    modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
    return QKeySequence(event.keyCombination().key().value | modifiers.value)


class KeyRouter(QObject):
    """Routes the shortcut keys of `window` (the `QKeySequence`s of its actions `shortcuts`)
    to those actions whatever widget of the window has the focus; `focus_view()` gives the
    focus to the view. Installed on the application by `install`, removed by `remove`."""

    def __init__(self, window: QWidget, shortcuts, focus_view):
        super().__init__(window)
        self.window = window
        self.shortcuts = [QKeySequence(s) for s in shortcuts]
        self.focus_view = focus_view

    def install(self, app) -> None:
        app.installEventFilter(self)

    def remove(self, app) -> None:
        app.removeEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's name)
        kind = event.type()
        if kind not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            return False
        if not (isinstance(obj, QWidget) and self.window.isAncestorOf(obj)):
            return False
        if kind == QEvent.Type.ShortcutOverride:
            if self._is_shortcut(event) and not self._field_keeps(obj, event.key()):
                event.ignore()  # the widget does not take the key: the window's action does
                return True
            return False
        if event.key() in RETURN_KEYS and not event.modifiers() & ~(
                Qt.KeyboardModifier.KeypadModifier):
            if event.key() == Qt.Key.Key_Escape:
                _revert(obj)
            QTimer.singleShot(0, self.focus_view)  # after the widget has taken an Enter
        return False

    def _is_shortcut(self, event) -> bool:
        combination = _combination(event)
        return any(combination.matches(s) == QKeySequence.SequenceMatch.ExactMatch
                   for s in self.shortcuts)

    @staticmethod
    def _field_keeps(widget: QWidget, key) -> bool:
        """`widget` is a field being edited and `key` edits it."""
        if isinstance(widget, QAbstractSpinBox):
            return key in NUMBER_EDITING_KEYS
        if isinstance(widget, (QLineEdit, QTextEdit, QPlainTextEdit)):
            return key in TEXT_EDITING_KEYS
        return False


def _revert(widget: QWidget) -> None:
    """Undo the uncommitted text of a number box (Esc): it shows its value again, so leaving
    the box does not commit what was typed."""
    if isinstance(widget, QAbstractSpinBox) and hasattr(widget, "value"):
        text = widget.textFromValue(widget.value())
        widget.lineEdit().setText(widget.prefix() + text + widget.suffix())
