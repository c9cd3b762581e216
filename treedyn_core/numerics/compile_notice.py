"""Say "compiling kernels, first run only…" instead of appearing to hang.

The numba kernels compile on the first call after installation (tens of
seconds) and load from the cache afterwards (well under a second). The notice
is given when numba really compiles (its ``numba:compile`` event, which a
kernel loaded from the cache does not raise) and the enclosed work is still
busy `DELAY` seconds after it began: a slow load on a busy machine says nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from numba.core import event as numba_event

MESSAGE = "compiling kernels, first run only…"
DELAY = 1.0  # s; a cached load finishes well within this

_listeners: list[Callable[[str], None]] = []


_printed: set[str] = set()


def _print_to_stderr(message: str) -> None:
    """Print the notice on stderr once per process: a command whose set-up and first step
    both compile (`treedyn run` on an empty cache) says it once."""
    if message not in _printed:
        _printed.add(message)
        print(f"treedyn: {message}", file=sys.stderr, flush=True)


def add_listener(listener: Callable[[str], None]) -> None:
    """Call `listener(message)` (from a timer thread) instead of printing to stderr."""
    _listeners.append(listener)


def remove_listener(listener: Callable[[str], None]) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


class _Announcer(numba_event.Listener):
    """Announces `message` once, `delay` s after the work began, if numba has compiled
    something by then, or at its first compile after that."""

    def __init__(self, message: str, delay: float) -> None:
        self.message, self.start = message, time.monotonic() + delay
        self.compiling = False
        self.lock = threading.Lock()
        self.done = False
        self.timer = threading.Timer(delay, self.announce_if_compiling)
        self.timer.daemon = True

    def on_start(self, event) -> None:
        self.compiling = True
        if time.monotonic() >= self.start:
            self.announce_if_compiling()

    def on_end(self, event) -> None:
        pass

    def announce_if_compiling(self) -> None:
        with self.lock:
            if self.done or not self.compiling:
                return
            self.done = True
        for listener in list(_listeners) or [_print_to_stderr]:
            listener(self.message)


@contextmanager
def announce_if_slow(message: str = MESSAGE, delay: float = DELAY) -> Iterator[None]:
    """Announce `message` once if the enclosed first-time work compiles kernels and takes
    longer than `delay` s."""
    announcer = _Announcer(message, delay)
    announcer.timer.start()
    try:
        with numba_event.install_listener("numba:compile", announcer):
            yield
    finally:
        announcer.timer.cancel()
