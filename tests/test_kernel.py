"""Where the compiled kernels are kept: the user's cache folder, never the installed package,
with the stale-cache stamp there. Each check runs in a fresh interpreter (the folder is chosen
when the kernels are decorated, at import)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("TREEDYN_CACHE_DIR", "XDG_CACHE_HOME")}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env=environment)


# Every module of the core with compiled functions, fastmath first: it decorates with `njit`,
# and was once imported ahead of `kernel` (through aero).
EVERY_KERNEL = """
import sys
import treedyn_core.numerics.fastmath, treedyn_core.dynamics.aero, treedyn_core.simulation, treedyn_core.analysis.modes
import treedyn_core.dynamics.linearise, treedyn_core.bench.performance, treedyn_core.bench.accuracy
import treedyn_core.bench.freebody
import numba
from numba.core.registry import CPUDispatcher
kernels = [(name, getattr(value._cache, "_cache_path", None))
           for name, module in list(sys.modules.items()) if name.startswith("treedyn_core")
           for value in vars(module).values() if isinstance(value, CPUDispatcher)]
print(len(kernels)); print(numba.config.CACHE_DIR or "-")
for name, path in sorted(set(kernels), key=str):
    print(name, path)
"""


# The kernels that are not cached on their own: the step's parallel loops, cached inside each
# stepper that calls them (`dynamics.systems`).
UNCACHED = {"treedyn_core.dynamics.systems"}


def _kernel_folders(result):
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert int(lines[0]) > 50  # the scan found the kernels
    entries = [line.split(" ", 1) for line in lines[2:]]
    assert {name for name, path in entries if path == "None"} <= UNCACHED
    return lines[1], {path for name, path in entries if path != "None"}


def test_every_kernel_is_cached_in_treedyn_cache_dir(tmp_path):
    global_folder, folders = _kernel_folders(_python(EVERY_KERNEL,
                                                     TREEDYN_CACHE_DIR=str(tmp_path)))
    # numba's one folder per source folder: a subpackage's name and its path's hash
    assert folders and {Path(folder).parent for folder in folders} == {tmp_path}
    assert {Path(folder).name.split("_")[0] for folder in folders} <= {
        "numerics", "dynamics", "integrators", "analysis", "bench", "treedyn", "io", "model"}
    assert global_folder == "-"  # numba's own setting is left as it was, for other packages


def test_default_cache_folder_follows_xdg_then_home(tmp_path):
    _, folders = _kernel_folders(_python(EVERY_KERNEL, XDG_CACHE_HOME=str(tmp_path / "xdg")))
    assert {Path(f).parent for f in folders} == {tmp_path / "xdg" / "treedyn"}
    _, folders = _kernel_folders(_python(EVERY_KERNEL, HOME=str(tmp_path / "home")))
    assert {Path(f).parent for f in folders} == {tmp_path / "home" / ".cache" / "treedyn"}


def test_unwritable_cache_folder_compiles_without_caching(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    result = _python("from treedyn_core.numerics import so3, kernel\n"
                     "import numpy as np\n"
                     "print(kernel.CACHING, so3.exp(np.zeros(3))[0, 0])",
                     TREEDYN_CACHE_DIR=str(blocker / "cache"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "1.0"]
    assert result.stderr.count("\n") == 1 and "cannot write the kernel cache" in result.stderr
    assert not list((ROOT / "treedyn_core").rglob("__pycache__/*.nb[ic]"))


def test_stale_cache_is_dropped_and_a_current_one_kept(tmp_path):
    """numba keeps one cache folder per source folder: a stale kernel of any subpackage goes."""
    where = ("from treedyn_core.numerics import kernel; print(kernel.package_cache_folder()); "
             "print(*kernel.package_cache_folders(), sep=chr(10))")
    folder, *folders = map(Path, _python(where, TREEDYN_CACHE_DIR=str(tmp_path)).stdout.split())
    assert folder in folders and len(folders) >= 4  # numerics, dynamics, integrators, analysis…
    stamp = folder / "kernels.sources.sha256"
    digest = stamp.read_text()
    assert len(digest) == 64
    cached = [path for each in folders for path in (each / "x.exp-41.py311.nbi",
                                                    each / "x.exp-41.py311.1.nbc")]
    for path in cached:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"machine code")
    _python(where, TREEDYN_CACHE_DIR=str(tmp_path))
    assert all(path.exists() for path in cached)  # sources unchanged: kept

    stamp.write_text("0" * 64)  # as after an edit of any kernel source
    _python(where, TREEDYN_CACHE_DIR=str(tmp_path))
    assert not any(path.exists() for path in cached)
    assert stamp.read_text() == digest
