"""Where a first run's compile time goes: each compiled function's own compile time.

    TREEDYN_CACHE_DIR=$(mktemp -d) python scripts/kernel_compile_times.py [treedyn arguments]

runs ``treedyn run two_limbs --duration 0.1`` (or the command given) in this process with
numba's compile events recorded, then lists every compiled function with its exclusive compile
time (the nested compiles of the functions it calls subtracted), its inclusive time and its
caller. Times are the compiling thread's CPU time, so a busy machine inflates them less than
wall time. Point TREEDYN_CACHE_DIR at an empty folder, or the kernels load from the cache.
"""

from __future__ import annotations

import sys
import time

from numba.core import event


class CompileTimes(event.Listener):
    """Exclusive and inclusive CPU seconds of every numba compile, with its caller."""

    def __init__(self):
        self.open: list[list] = []  # [function, started, seconds of nested compiles]
        self.records: list[tuple[str, str, float, float]] = []

    def on_start(self, e) -> None:
        self.open.append([e.data["dispatcher"].py_func, time.thread_time(), 0.0])

    def on_end(self, e) -> None:
        function, started, nested = self.open.pop()
        total = time.thread_time() - started
        caller = self.open[-1][0].__name__ if self.open else "-"
        if self.open:
            self.open[-1][2] += total
        self.records.append((f"{function.__module__}.{function.__qualname__}", caller,
                             total - nested, total))


def main(argv: list[str]) -> None:
    times = CompileTimes()
    event.register("numba:compile", times)
    from treedyn_core.cli import main as treedyn

    start = time.perf_counter()
    treedyn(argv or ["run", "two_limbs", "--duration", "0.1", "--out", "compile_times.npz"])
    wall = time.perf_counter() - start
    print(f"{'function':58} {'own s':>6} {'incl s':>6}  caller")
    for name, caller, own, total in sorted(times.records, key=lambda r: -r[2]):
        print(f"{name:58} {own:6.2f} {total:6.2f}  {caller}")
    print(f"{len(times.records)} compiles, {sum(r[2] for r in times.records):.1f} s of CPU "
          f"time; the command took {wall:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
