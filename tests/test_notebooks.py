"""The tutorials in docs/notebooks/ run from top to bottom (nbclient, one kernel each, the
figures on matplotlib's Agg backend), and use the public API only."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import treedyn_core

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "docs" / "notebooks").glob(
    "*.ipynb"))
CELL_SECONDS = 600   # a cold kernel cache compiles for minutes on a busy machine


def test_the_tutorials_are_there():
    assert {path.stem for path in NOTEBOOKS} >= {"quick_start", "pulling_test", "small_study"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_uses_the_public_api_only(path):
    code = "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells
                     if cell.cell_type == "code")
    assert not re.search(r"treedyn_core\.\w|from treedyn_core\b|treedyn_app", code)
    used = set(re.findall(r"\btd\.(\w+)", code))
    assert used and used <= set(treedyn_core.__all__), used - set(treedyn_core.__all__)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_notebook_runs(path, tmp_path):
    notebook = nbformat.read(path, as_version=4)
    env = dict(os.environ, MPLBACKEND="Agg")
    start = time.perf_counter()
    NotebookClient(notebook, timeout=CELL_SECONDS, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    print(f"{path.name}: {time.perf_counter() - start:.1f} s")
