"""The app's first launch with an empty kernel cache: the tree is on screen at rest before any
kernel is compiled, the compile's progress is shown, closing meanwhile is prompt and leaves a
cache the next start uses, and the simulation starts by itself once the kernels are ready."""

import os
import time
from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import QSettings

from treedyn_app.main_window import MainWindow
from treedyn_app.worker import COMPILING_TEXT, PREPARING, RUNNING
from treedyn_core.model.preset import load_preset

# Compiling every kernel from nothing: ~25 s of CPU time, several times that on a busy machine.
COMPILE_TIMEOUT_MS = 400_000
FIRST_FRAME_S = 2.0  # the "tree on screen within 2 s"
CLOSE_S = 2.0  # closing during compilation returns within this


def tree_pixels(image: np.ndarray) -> tuple[int, int]:
    """Counts of bark-brown and leaf-green pixels of an RGBA image."""
    rgb = image[..., :3].astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (int(((r > g + 15) & (g > b + 15) & (r < 200)).sum()),
            int(((g > r + 20) & (g > b + 40)).sum()))


def _warm_up_children(cache: Path) -> list[int]:
    """Process ids of warm-up children compiling into `cache`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (b"treedyn_core.warm_up" in (proc / "cmdline").read_bytes()
                    and str(cache).encode() in (proc / "environ").read_bytes()):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _niceness(pid: int) -> int | None:
    """A process's nice value (/proc/PID/stat, field 19), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[16])


def _open(qtbot, tmp_path):
    window = MainWindow(load_preset("young_oak"),
                        settings=QSettings(str(tmp_path / "t.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.resize(1100, 720)
    window.show()
    return window


@pytest.mark.slow
def test_first_launch_with_an_empty_cache(qtbot, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TREEDYN_CACHE_DIR", str(cache))

    # A first start, closed while the kernels compile.
    started = time.perf_counter()
    window = _open(qtbot, tmp_path)
    qtbot.wait(max(0, int(1000 * (FIRST_FRAME_S - (time.perf_counter() - started)))))
    brown, green = tree_pixels(window.canvas.render())
    assert window.worker.latest.state == PREPARING  # no simulation yet: the rest pose
    assert brown > 300 and green > 3000
    qtbot.waitUntil(lambda: window.statusBar().text().lower().startswith(COMPILING_TEXT),
                    timeout=10_000)
    qtbot.waitUntil(lambda: any(cache.glob("*/*.nbc")), timeout=COMPILE_TIMEOUT_MS)
    assert window.worker.latest.state == PREPARING
    closing = time.perf_counter()
    window.close()
    assert time.perf_counter() - closing < CLOSE_S
    assert not window.worker.is_alive()
    assert not _warm_up_children(cache)

    # The next start draws the tree at once again, compiles what is missing (the files the
    # killed child wrote are used, not tripped over) and starts the simulation by itself.
    window = _open(qtbot, tmp_path)
    try:
        qtbot.waitUntil(lambda: "of" in window.canvas.message or "done" in window.canvas.message,
                        timeout=10_000)
        brown, green = tree_pixels(window.canvas.render())
        assert brown > 300 and green > 3000
        qtbot.waitUntil(lambda: window.worker.latest.state == RUNNING,
                        timeout=COMPILE_TIMEOUT_MS)
        qtbot.waitUntil(lambda: window.worker.simulation.time > 0.5, timeout=30_000)
        assert window.canvas.message == ""
        assert window.statusBar().text().startswith("Running")
    finally:
        window.shutdown()


def test_children_started_before_the_window_are_adopted(tmp_path, monkeypatch):
    """`treedyn PRESET` starts compiling before Qt (`worker.start_compiling`); the worker's
    `compile_kernels` then takes those children over instead of starting two more, and ending
    it ends them."""
    from threading import Event

    from treedyn_app import worker
    from treedyn_core import warm_up

    cache = tmp_path / "cache"
    monkeypatch.setenv("TREEDYN_CACHE_DIR", str(cache))
    spawned = []
    spawn = warm_up._spawn
    monkeypatch.setattr(warm_up, "_spawn", lambda *a: spawned.append(a) or spawn(*a))
    preset = load_preset("young_oak")
    worker.start_compiling(preset)
    worker.start_compiling(preset)  # a second call starts nothing more
    assert spawned == [worker.kernels_of(preset)]
    # A child just spawned may still be inside exec, its /proc cmdline empty for a moment.
    deadline = time.monotonic() + 5.0
    while len(pids := _warm_up_children(cache)) < len(warm_up.PARTS) \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(pids) == len(warm_up.PARTS)
    # They compile niced, so that the window's own start comes first.
    wanted = os.nice(0) + warm_up.CHILD_NICENESS
    deadline = time.monotonic() + 5.0
    while sorted(map(_niceness, pids)) != [wanted] * len(pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [_niceness(pid) for pid in pids] == [wanted] * len(pids)
    stop = Event()
    stop.set()  # closed at once: the adopted children are ended
    assert warm_up.compile_kernels(*worker.kernels_of(preset), None, stop) is False
    assert len(spawned) == 1
    assert not _warm_up_children(cache)



def test_warm_up_children_import_this_package_from_any_folder(tmp_path, monkeypatch):
    """The README's `pip install . && treedyn PRESET` starts the app in the clone's folder, whose
    own treedyn_core `python -m` would put first on a child's path: the children would then fill
    the cache of another package path, and the app compile everything again itself. A decoy
    package in the current folder must not be the one the children import."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from treedyn_core import warm_up
    from treedyn_core.numerics import kernel

    decoy = tmp_path / "treedyn_core"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(warm_up, "subprocess", SimpleNamespace(
        PIPE=subprocess.PIPE, Popen=lambda command, **options: calls.append((command, options))))
    warm_up._spawn("articulated", "implicit")
    assert len(calls) == len(warm_up.PARTS)
    for command, options in calls:
        assert command == warm_up.child_command("articulated", "implicit", command[-1])
        options = {key: options[key] for key in ("env", "cwd") if key in options}
        imported = subprocess.run(
            [sys.executable, "-c", "import treedyn_core; print(treedyn_core.__file__)"],
            capture_output=True, text=True, check=True, **options).stdout.strip()
        assert Path(imported).parent == kernel.PACKAGE
