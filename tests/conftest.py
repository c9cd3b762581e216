"""The suite runs in two pytest-xdist workers (``-n 2`` in pyproject.toml: two cores halve its
wall time). Each worker keeps its compiled kernels in a folder of its own, set before any test
module imports the package: numba keeps one index file per kernel, rewritten whole by whichever
process compiles into it, so two workers compiling different overloads of a kernel at once lose
each other's entries, and the next command finds its step cold and compiles it again (a
property test of 150 short runs took 183 s instead of 2 s)."""

import os
import tempfile
from pathlib import Path

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    _base = os.environ.get("TREEDYN_CACHE_DIR") or str(
        Path(tempfile.gettempdir()) / f"treedyn-test-kernels-{getattr(os, 'getuid', int)()}")
    os.environ["TREEDYN_CACHE_DIR"] = str(Path(_base) / _worker)

# The app's settings (window geometry, recent files) of windows the tests open without a
# settings object of their own, and of the app processes they start: a file of the session's,
# never the user's (app/main_window.py, default_settings).
os.environ.setdefault("TREEDYN_SETTINGS", str(
    Path(tempfile.mkdtemp(prefix="treedyn-test-settings-")) / "treedyn.ini"))
# No background compile of the other integrators' kernels in the app's windows
# (app/worker.py): on a cold cache each short-lived test window would start it and end it. The
# test of it turns it on.
os.environ.setdefault("TREEDYN_BACKGROUND_COMPILE", "0")
