"""A scan in the desktop app: opened as the app's preset (`treedyn tree.mat`) and through
File → Open, the tree drawn (pytest-qt under Xvfb, as tests/test_app.py)."""

from __future__ import annotations

import numpy as np
import pytest
from PyQt6.QtCore import QSettings
from PyQt6.QtWidgets import QFileDialog

import scan_tables
from treedyn_app.main_window import MainWindow
from treedyn_app.worker import FAILED, RUNNING
from treedyn_core.preset import load_preset, validate
from treedyn_core.tree import build_tree

READY_TIMEOUT_MS = 400_000  # a first window may compile the kernels (tests/test_app.py)


@pytest.fixture
def scan_file(tmp_path):
    raw = {"tree": {"generator": {"trunk": {"length": 6.0, "radius": 0.15, "segments": 8},
                                  "levels": 2, "children": 3, "segments": 2}}}
    path = tmp_path / "scanned.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(build_tree(validate(raw, "t"))))
    return path


def bark(image: np.ndarray) -> np.ndarray:
    """Bark-brown pixels of an RGBA image (tests/test_app.py's test)."""
    rgb = image[..., :3].astype(int)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > g + 15) & (g > b + 15) & (r < 200)


def trunk_pixel(window, tree) -> tuple[int, int]:
    """Canvas pixel (column, row) of the middle of the root limb, in physical pixels."""
    transform = window.canvas.tree._limbs.get_transform("visual", "canvas")
    mapped = transform.map((tree.rest_base[:1] + tree.rest_tip[:1]) / 2)
    point = mapped[0, :2] / mapped[0, 3]
    return point


def ready(window, name: str) -> bool:
    return (window.worker.latest.state in (RUNNING, FAILED) and window._generation > 0
            and window.preset.name == name)


@pytest.mark.slow
def test_the_app_opens_a_scan_and_draws_it(qtbot, tmp_path, scan_file, monkeypatch):
    settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)
    first = load_preset("sapling")
    window = MainWindow(first, settings=settings)
    qtbot.addWidget(window)
    window.resize(1100, 720)
    window.show()
    try:
        qtbot.waitUntil(lambda: ready(window, first.name), timeout=READY_TIMEOUT_MS)
        # File → Open, the dialog answering with the scan file.
        monkeypatch.setattr(QFileDialog, "getOpenFileName",
                            staticmethod(lambda *args, **kwargs: (str(scan_file), "")))
        window.open_dialog()
        qtbot.waitUntil(lambda: ready(window, "scanned"), timeout=READY_TIMEOUT_MS)
        assert window.worker.latest.state == RUNNING
        tree = window.worker.simulation.tree
        assert tree.n == build_tree(load_preset(scan_file).data).n
        qtbot.wait(200)
        image = window.canvas.render()
        scale = image.shape[0] / window.canvas.canvas.size[1]
        col, row = (trunk_pixel(window, tree) * scale).astype(int)
        assert bark(image)[row - 6:row + 7, col - 6:col + 7].any()
    finally:
        window.shutdown()


@pytest.mark.slow
def test_a_scan_given_as_the_apps_preset_opens(qtbot, tmp_path, scan_file):
    settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)
    window = MainWindow(load_preset(scan_file), settings=settings)   # `treedyn scanned.mat`
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.waitUntil(lambda: ready(window, "scanned"), timeout=READY_TIMEOUT_MS)
        assert window.worker.latest.state == RUNNING
    finally:
        window.shutdown()
