"""Entry points: `run(preset)` for the core's CLI (``treedyn [PRESET]``) and `main(argv)` for
``python -m treedyn_app``."""

from __future__ import annotations

import argparse
import os
import signal
import sys

DEFAULT_PRESET = "young_oak"


def display_problem() -> str | None:
    """Why Qt could not open a window here (it aborts the process instead of failing)."""
    if not sys.platform.startswith("linux"):
        return None
    if os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] not in ("", "xcb", "wayland"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return "no display to open the window on (DISPLAY is not set); run it in a desktop " \
           "session, or headless under xvfb-run"


def run(preset: str | None = None) -> int:
    """Open the app on `preset` (a shipped name or a path; default young_oak) and return the
    exit status: 0 when the window is closed, 2 with a one-line message on stderr for an
    invalid preset or no display, 143 or 130 when SIGTERM or SIGINT closed it."""
    from treedyn_core.errors import TreedynError
    from treedyn_core.model.preset import load_preset

    source = preset or DEFAULT_PRESET
    try:
        loaded = load_preset(source)
    except TreedynError as exc:
        print(f"treedyn: {exc}", file=sys.stderr)
        return 2
    problem = display_problem()
    if problem:
        print(f"treedyn: {problem}", file=sys.stderr)
        return 2

    # Compiling a first run's kernels takes the longest: it starts before Qt does.
    from .worker import start_compiling

    start_compiling(loaded)
    from .application import app_instance
    from .main_window import MainWindow

    app = app_instance(sys.argv[:1])
    window = MainWindow(loaded)
    window.show()
    # SIGTERM and Ctrl-C in the terminal close the window as its close button does. The
    # handler runs between two bytecodes of whatever Python code Qt is calling (a paint, say):
    # it only posts the close to the event loop.
    from PyQt6.QtCore import QTimer

    received: list[int] = []

    def close_on_signal(signum, frame) -> None:
        received.append(signum)
        QTimer.singleShot(0, window.close_without_asking)

    previous = {signum: signal.signal(signum, close_on_signal)
                for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = int(app.exec())
        return 128 + received[0] if received else status  # 143 or 130, as the commands exit
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def main(argv: list[str] | None = None) -> int:
    """``python -m treedyn_app [PRESET]``."""
    parser = argparse.ArgumentParser(prog="treedyn", description="A tree in the wind, live.")
    parser.add_argument("preset", nargs="?", default=None,
                        help=f"a shipped preset's name or a preset file (default {DEFAULT_PRESET})")
    args = parser.parse_args(argv)
    return run(args.preset)
