"""Packaging: the core stays headless, and an installed wheel finds its shipped presets."""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUI_MODULES = ("PyQt6", "vispy")


def _loaded_gui_modules(code: str) -> list[str]:
    probe = (f"{code}\nimport sys\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(GUI_MODULES)!r}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return eval(out.stdout.strip().splitlines()[-1])


def test_core_imports_no_gui_toolkit():
    code = ("import treedyn_core, treedyn_core.simulation, treedyn_core.preset, "
            "treedyn_core.cli, treedyn_core.run, treedyn_core.tree, treedyn_core.generator")
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
    dist, target = base / "dist", base / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w",
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
    env = {**os.environ, "PYTHONPATH": str(target), "NUMBA_DISABLE_JIT": "1"}
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
