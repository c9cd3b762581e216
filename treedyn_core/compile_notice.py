"""Say "compiling kernels, first run only…" instead of appearing to hang.

The numba kernels compile on the first call after installation (tens of
seconds) and load from the cache afterwards (well under a second). Whether a
call will compile is not cheaply knowable in advance, so a timer announces it
when a first call is still busy after `DELAY` seconds.
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

MESSAGE = "compiling kernels, first run only…"
DELAY = 1.0  # s; a cached load finishes well within this

_listeners: list[Callable[[str], None]] = []


def _print_to_stderr(message: str) -> None:
    print(f"treedyn: {message}", file=sys.stderr, flush=True)


def add_listener(listener: Callable[[str], None]) -> None:
    """Call `listener(message)` (from a timer thread) instead of printing to stderr."""
    _listeners.append(listener)


def remove_listener(listener: Callable[[str], None]) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


@contextmanager
def announce_if_slow(message: str = MESSAGE, delay: float = DELAY) -> Iterator[None]:
    """Announce `message` once if the enclosed first-time work takes longer than `delay` s."""
    def announce() -> None:
        for listener in list(_listeners) or [_print_to_stderr]:
            listener(message)

    timer = threading.Timer(delay, announce)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
