"""The one QApplication of a process: the window's, a film's or the frame benchmark's."""

from __future__ import annotations

import sys

from PyQt6.QtWidgets import QApplication

from .canvas import configure_vispy


def app_instance(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), with vispy set to draw through it."""
    configure_vispy()
    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
        app.setApplicationName("treedyn")
        app.setOrganizationName("treedyn")
    return app
