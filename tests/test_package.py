"""Packaging: the core stays headless, and an installed wheel finds its shipped presets."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUI_MODULES = ("PyQt6", "vispy")
# The source tree as a clean clone holds it (pip builds in the tree it is given, into its build/
# and egg-info: two pytest-xdist workers building ROOT at once shared them and one failed).
CLONE_IGNORES = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "tests",
                                       "docs", "scripts")


def _loaded_gui_modules(code: str) -> list[str]:
    probe = (f"{code}\nimport sys\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(GUI_MODULES)!r}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return eval(out.stdout.strip().splitlines()[-1])


def test_core_imports_no_gui_toolkit():
    code = ("import treedyn_core, treedyn_core.simulation, treedyn_core.model.preset, "
            "treedyn_core.cli, treedyn_core.io.run, treedyn_core.model.tree, treedyn_core.model.generator")
    assert _loaded_gui_modules(code) == []


def test_headless_run_imports_no_gui_toolkit(tmp_path):
    out = tmp_path / "r.npz"
    code = (f"from treedyn_core.cli import main\n"
            f"assert main(['run', 'two_limbs', '--duration', '0.05', '--out', {str(out)!r}]) == 0")
    assert _loaded_gui_modules(code) == []
    assert out.exists()


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory):
    """The project built as a wheel and installed with --no-deps --target into a fresh folder."""
    base = tmp_path_factory.mktemp("wheel")
    source, dist, target = base / "clone", base / "dist", base / "site"
    shutil.copytree(ROOT, source, ignore=CLONE_IGNORES)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w",
                    str(dist)], check=True, capture_output=True)
    wheel = next(dist.glob("treedyn-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    return wheel, target


def test_wheel_ships_the_presets(installed_wheel):
    wheel, _ = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "assets" / "presets").glob("*.yaml")}
    assert shipped and {f"treedyn_assets/presets/{name}" for name in shipped} <= names


def test_wheel_installs_only_treedyn_names(installed_wheel):
    """Every top-level import name the wheel installs starts with treedyn: no `app` or
    `assets` in site-packages to collide with another project's (docs/design.md §9)."""
    wheel, _ = installed_wheel
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        top_level_txt = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        declared = set(archive.read(top_level_txt).decode().split())
    installed = {name.split("/")[0].removesuffix(".py") for name in names
                 if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert installed >= {"treedyn_core", "treedyn_app", "treedyn_assets"}
    assert declared == installed
    assert all(name.startswith("treedyn") for name in installed | declared)


def test_installed_command_line_finds_shipped_preset(installed_wheel, tmp_path):
    _, target = installed_wheel
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    # Pure-Python kernels: compiling a second copy of them here would only cost time.
    env = {**os.environ, "PYTHONPATH": str(target), "NUMBA_DISABLE_JIT": "1",
           "TREEDYN_CACHE_DIR": str(tmp_path / "cache")}
    code = ("import sys, treedyn_core, treedyn_assets, treedyn_app\n"
            "print(treedyn_core.__file__); print(treedyn_assets.__file__); "
            "print(treedyn_app.__file__)\n"
            "from treedyn_core.cli import main\n"
            "sys.exit(main(['expand', 'young_oak', 'OUT.yaml']))")
    result = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    installed_files = result.stdout.splitlines()[:3]
    assert all(Path(file).is_relative_to(target) for file in installed_files)
    text = (workdir / "OUT.yaml").read_text()
    assert "prestress: false" in text and text.count("- {name:") > 100


def test_code_imports_the_installed_names_only():
    """`app/` and `assets/` are importable only as treedyn_app and treedyn_assets once
    installed; `python -m pytest` from the clone would still find a folder-named `app` and
    load a second copy of the app's modules beside treedyn_app's."""
    folder_import = re.compile(r"^\s*(?:from|import)\s+(?:app|assets)\b"
                               r"|files\([\"'](?:app|assets)[\"']\)", re.M)
    offenders = [str(path.relative_to(ROOT))
                 for folder in ("treedyn_core", "app", "tests", "scripts")
                 for path in sorted((ROOT / folder).rglob("*.py"))
                 if folder_import.search(path.read_text(encoding="utf-8"))]
    assert not offenders


def _files_under(folder: Path) -> set[Path]:
    return {path.relative_to(folder) for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow
def test_readme_install_sequence_in_a_fresh_environment(tmp_path):
    """The README's commands in order on a fresh machine: `pip install .`, a run (compiling the
    kernels into the user's cache, ~/.cache/treedyn, and writing nothing under the installation:
    files pip does not own there would outlive an uninstall, and a left-over package folder
    hides a later editable install), `pip install -e .`, then a command from another folder:
    both succeed and the second one runs the editable source. (The second is `expand`, which
    compiles nothing: a run there would compile every kernel again for the editable source's
    paths, 40 s of the suite, which the whole suite does in any case.)"""
    source, venv, home = tmp_path / "clone", tmp_path / "venv", tmp_path / "home"
    shutil.copytree(ROOT, source, ignore=CLONE_IGNORES)
    # The dependencies come from this interpreter's site-packages (a .pth line each, so that
    # their own .pth files, an editable treedyn's among them, stay inactive): the test stays
    # offline and fast, in a virtual environment or not.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(
        "\n".join(sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}))
        + "\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_DISABLE_JIT", "NUMBA_CACHE_DIR", "TREEDYN_CACHE_DIR",
                        "XDG_CACHE_HOME", "PYTHONPATH")}
    env["HOME"] = str(home)  # the user's cache folder: ~/.cache/treedyn of a new user

    def pip_install(*args):
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                        "--no-deps", "-q", *args], check=True, capture_output=True, cwd=source)

    def run(cwd: Path, *command) -> subprocess.CompletedProcess:
        cwd.mkdir(exist_ok=True)
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)

    pip_install(".")
    site = next((venv / "lib").glob("python*/site-packages"))
    def files_but_bytecode() -> set[Path]:
        return {path for path in _files_under(site) if path.suffix != ".pyc"}

    installed = files_but_bytecode()
    first = run(tmp_path / "first", str(venv / "bin" / "treedyn"), "run", "two_limbs",
                "--duration", "0.1", "--out", "r.npz")
    assert first.returncode == 0, first.stderr
    # one folder per source folder (numba's), each named after its subpackage
    cache = home / ".cache" / "treedyn"
    assert list(cache.glob("*_*/*.nbi")) and list(cache.glob("*_*/*.nbc"))
    assert files_but_bytecode() == installed
    pip_install("-e", ".")
    assert not (site / "treedyn_core").exists()  # nothing left behind by the uninstall
    second = run(tmp_path / "second", str(python), "-m", "treedyn_core", "expand", "two_limbs",
                 "OUT.yaml")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "second" / "OUT.yaml").exists()
    where = subprocess.run([str(python), "-c", "import treedyn_core as t; print(t.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(source)
