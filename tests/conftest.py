"""The suite runs in two pytest-xdist workers (``-n 2`` in pyproject.toml: two cores halve its
wall time). Each worker keeps its compiled kernels in a folder of its own, set before any test
module imports the package: numba keeps one index file per kernel, rewritten whole by whichever
process compiles into it, so two workers compiling different overloads of a kernel at once lose
each other's entries, and the next command finds its step cold and compiles it again (a
property test of 150 short runs took 183 s instead of 2 s)."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_worker = os.environ.get("PYTEST_XDIST_WORKER")
# Each worker's step on one thread (`dynamics.partition`): the two workers already keep both
# cores busy, and a step's threads waiting on a core the other worker holds took the suite
# from 10 to 19 minutes. The tests of the threads set it themselves (test_partition).
if _worker:
    os.environ.setdefault("TREEDYN_THREADS", "1")
_base = Path(os.environ.get("TREEDYN_CACHE_DIR") or (
    Path(tempfile.gettempdir()) / f"treedyn-test-kernels-{getattr(os, 'getuid', int)()}"))
if _worker:
    os.environ["TREEDYN_CACHE_DIR"] = str(_base / _worker)

# What the controller compiles once for every worker (`pytest_configure`): the app's first
# pair and its background pairs, two children each at once (`warm_up.compile_kernels`), and
# the modes' kernels.
_WARM_EVERY_PAIR = """
from treedyn_app.worker import BACKGROUND_KERNELS
from treedyn_core import warm_up
for pair in (("articulated", "implicit"), *BACKGROUND_KERNELS):
    warm_up.compile_kernels(*pair)
from treedyn_app.mode_shapes import modes_kernels_warm, warm_modes_kernels
if not modes_kernels_warm():
    warm_modes_kernels()
"""
_STAMP = "*/kernels.sources.sha256"   # the sources' digest in the cache (numerics/kernel.py)


def _check_display() -> None:
    """Stop the suite with one line where the GUI tests could not open a window: no display
    and no Xvfb for pytest-xvfb to start (Qt would abort each GUI test's worker instead, a
    crash per test)."""
    if sys.platform.startswith("linux") and not (
            os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) \
            and shutil.which("Xvfb") is None:
        import pytest

        pytest.exit("the GUI tests need a display or Xvfb (Debian: apt-get install xvfb and "
                    "the other packages .ci/run lists; README, Set up)", returncode=2)


def pytest_configure(config):
    """Before the workers start, compile the kernels once, on both cores, into a folder of the
    controller's, and give each worker a copy: otherwise each worker compiles them all on its
    own core (about a minute and a half of the suite's wall time on a cold cache, the CI's).
    The tests of a cold start keep caches of their own (test_first_launch, test_cold_run)."""
    if not _worker:
        _check_display()
    workers = getattr(config.option, "numprocesses", None)
    if _worker or not workers:
        return
    seed = _base / "seed"
    subprocess.run([sys.executable, "-c", _WARM_EVERY_PAIR], timeout=900, capture_output=True,
                   env=dict(os.environ, TREEDYN_CACHE_DIR=str(seed)))
    stamps = {path.read_bytes() for path in seed.glob(_STAMP)}
    count = workers if isinstance(workers, int) else os.cpu_count() or 2
    for name in (f"gw{k}" for k in range(count)):
        target = _base / name
        if {path.read_bytes() for path in target.glob(_STAMP)} - stamps:
            shutil.rmtree(target, ignore_errors=True)   # kernels of older sources
        for folder, _, files in os.walk(seed):
            into = target / Path(folder).relative_to(seed)
            into.mkdir(parents=True, exist_ok=True)
            for file in files:
                if not (into / file).exists():   # a worker's own index keeps what it added
                    shutil.copy2(Path(folder) / file, into / file)

# The app's settings (window geometry, recent files) of windows the tests open without a
# settings object of their own, and of the app processes they start: a file of the session's,
# never the user's (app/main_window.py, default_settings).
os.environ.setdefault("TREEDYN_SETTINGS", str(
    Path(tempfile.mkdtemp(prefix="treedyn-test-settings-")) / "treedyn.ini"))
# No background compile of the other integrators' kernels in the app's windows
# (app/worker.py): on a cold cache each short-lived test window would start it and end it. The
# test of it turns it on.
os.environ.setdefault("TREEDYN_BACKGROUND_COMPILE", "0")
