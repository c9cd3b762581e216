"""The documentation site (docs/conf.py, Sphinx + myst-parser) builds with warnings as
errors: every page, the API reference from the docstrings, the Markdown of docs/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_site_builds_without_a_warning(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"),
                           str(tmp_path / "html")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    api = (tmp_path / "html" / "api.html").read_text(encoding="utf-8")
    for name in ("treedyn_core.load_preset", "treedyn_core.run", "treedyn_core.modes",
                 "treedyn_core.pull", "treedyn_core.study", "treedyn_core.Simulation"):
        assert f'id="{name}"' in api, name
    for page in ("index", "getting_started", "app", "cli", "tutorials", "design", "validation",
                 "performance", "hardening", "studies", "export", "kernel_cache"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page
