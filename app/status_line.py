"""The status bar's one line of text: what the app is doing, or a message for a while.

Qt's status bar draws a temporary message over its normal widgets, and hides them only if they
are visible when the message comes: a message shown before the window was (the first "preparing"
one) ended up drawn on top of the mouse hint. Here a single label holds the text, so one
message at a time is all there can be. `showMessage`, `clearMessage` and `currentMessage` keep
`QStatusBar`'s meaning (a message for `timeout` ms, or until cleared); when none is shown, the
label says what the app is doing (`set_state`). A text wider than the bar wraps onto a second
line (the bar grows) rather than being cut off: the rk4 refusal says why in ~150 characters.
"""

from __future__ import annotations

from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import QLabel, QSizePolicy, QStatusBar


class StatusLine(QStatusBar):
    """A status bar whose text is either the current message or the app's state."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.label = QLabel()
        self.label.setMinimumWidth(0)
        self.label.setWordWrap(True)
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.addWidget(self.label, 1)
        self._state = ""
        self._message = ""
        self._expiry = QTimer(self)
        self._expiry.setSingleShot(True)
        self._expiry.timeout.connect(self.clearMessage)

    def set_state(self, text: str, tooltip: str = "") -> None:
        """What the app is doing, shown whenever no message is."""
        self._state = text
        self.label.setToolTip(tooltip)
        self._show()

    def state(self) -> str:
        return self._state

    def showMessage(self, text: str, timeout: int = 0) -> None:  # noqa: N802 (Qt's name)
        """Show `text` instead of the state, for `timeout` ms (0: until cleared or replaced)."""
        self._message = text or ""
        self._expiry.stop()
        if timeout > 0 and self._message:
            self._expiry.start(timeout)
        self._show()

    def clearMessage(self) -> None:  # noqa: N802
        self._message = ""
        self._expiry.stop()
        self._show()

    def currentMessage(self) -> str:  # noqa: N802
        return self._message

    def text(self) -> str:
        """The text on screen."""
        return self.label.text()

    def _show(self) -> None:
        self.label.setText(self._message or self._state)
        self.label.setStyleSheet("" if self._message else "color: #505050;")
        self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        """As many lines as the text needs at the label's width (Qt's layout would size a
        wrapping label for a guessed, narrower width: four lines for two)."""
        label = self.label
        one_line = label.fontMetrics().height()
        if label.width() < 10 * one_line:  # not laid out yet
            label.setFixedHeight(one_line)
            return
        label.setFixedHeight(max(one_line, label.heightForWidth(label.width())))
