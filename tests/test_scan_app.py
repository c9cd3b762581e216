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
from treedyn_core.model.preset import load_preset, validate
from treedyn_core.dynamics.static_model import build_tree

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


def drop_on(target, path) -> None:
    """Drag `path` over `target` (a widget or the view's QWindow) and drop it, as a file
    manager does: a drag-enter, then the drop, both at the target's middle."""
    from PyQt6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
    from PyQt6.QtGui import QDragEnterEvent, QDropEvent
    from PyQt6.QtWidgets import QApplication

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    middle = QPoint(target.width() // 2, target.height() // 2)
    copy = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(middle, copy, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(middle), copy, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, drop)
    assert drop.isAccepted()


def test_the_open_dialog_offers_presets_and_scans():
    from treedyn_app.main_window import OPEN_FILTER

    filters = OPEN_FILTER.split(";;")
    assert filters[0] == "Presets and scans (*.yaml *.yml *.mat *.txt *.csv)"
    assert "treedyn presets (*.yaml *.yml)" in filters
    assert "TreeQSM scans (*.mat *.txt *.csv)" in filters
    assert filters[-1] == "All files (*)"


def test_only_presets_and_scans_are_taken_from_a_drag(tmp_path):
    from PyQt6.QtCore import QMimeData, QUrl

    from treedyn_app.main_window import dropped_file

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tmp_path / "photo.png")),
                  QUrl.fromLocalFile(str(tmp_path / "tree.CSV"))])
    assert dropped_file(mime) == str(tmp_path / "tree.CSV")
    mime.setUrls([QUrl("https://example.org/tree.mat")])
    assert dropped_file(mime) is None
    text = QMimeData()
    text.setText("tree.yaml")
    assert dropped_file(text) is None


@pytest.mark.slow
def test_a_dropped_scan_or_preset_opens_asking_first_about_unsaved_changes(
        qtbot, tmp_path, scan_file, monkeypatch):
    from PyQt6.QtWidgets import QMessageBox

    settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)
    first = load_preset("sapling")
    window = MainWindow(first, settings=settings)
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.waitUntil(lambda: ready(window, first.name), timeout=READY_TIMEOUT_MS)
        # The filter File → Open shows.
        asked = {}

        def answer(*args, **kwargs):
            asked["folder"] = args[2]
            asked["filter"] = args[3] if len(args) > 3 else kwargs.get("filter")
            return "", ""

        monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(answer))
        window.open_dialog()
        assert "*.mat *.txt *.csv" in asked["filter"].split(";;")[0]
        # A changed setting: the drop asks first; Discard opens the scan.
        window.controls.wind_speed.spin.setValue(11.0)
        assert window.unsaved_settings()
        drop_on(window, scan_file)
        qtbot.waitUntil(lambda: window.unsaved_box is not None, timeout=2000)
        window.unsaved_box.button(QMessageBox.StandardButton.Discard).click()
        qtbot.waitUntil(lambda: ready(window, "scanned"), timeout=READY_TIMEOUT_MS)
        assert window.worker.simulation.tree.n == build_tree(load_preset(scan_file).data).n
        assert "scanned.mat" in window.windowTitle()
        window.open_dialog()  # File → Open starts in the scan's folder
        assert asked["folder"] == str(scan_file.parent)
        # A preset dropped on the 3-D view itself (a native window of its own).
        drop_on(window.canvas.window, load_preset("sapling").path)
        qtbot.waitUntil(lambda: ready(window, first.name), timeout=READY_TIMEOUT_MS)
        # A file the app does not open is refused at the drag.
        from PyQt6.QtCore import QMimeData, QPoint, Qt, QUrl
        from PyQt6.QtGui import QDragEnterEvent
        from PyQt6.QtWidgets import QApplication
        mime = QMimeData()
        mime.setUrls([QUrl.fromLocalFile(str(tmp_path / "photo.png"))])
        enter = QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime,
                                Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(window, enter)
        assert not enter.isAccepted()
    finally:
        window.shutdown()


@pytest.mark.slow
def test_save_as_of_a_scan_names_it_relative_to_the_preset(qtbot, tmp_path, scan_file):
    import yaml

    settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)
    window = MainWindow(load_preset(scan_file), settings=settings)
    qtbot.addWidget(window)
    window.show()
    try:
        qtbot.waitUntil(lambda: ready(window, "scanned"), timeout=READY_TIMEOUT_MS)
        window.controls.wind_speed.spin.setValue(12.0)
        beside = tmp_path / "scanned.yaml"
        assert window.save_as(beside)
        written = yaml.safe_load(beside.read_text())
        assert written["tree"]["scan"]["file"] == "scanned.mat"
        assert written["wind"]["speed"] == 12.0 and "limbs" not in written["tree"]
        # The saved preset, saved again in another folder, still finds its scan.
        elsewhere = tmp_path / "studies" / "spring"
        elsewhere.mkdir(parents=True)
        assert window.save_as(elsewhere / "tuned.yaml")
        written = yaml.safe_load((elsewhere / "tuned.yaml").read_text())
        assert written["tree"]["scan"]["file"] == "../../scanned.mat"
        reloaded = load_preset(elsewhere / "tuned.yaml")
        assert build_tree(reloaded.data).n == build_tree(load_preset(scan_file).data).n
        assert reloaded.data["wind"]["speed"] == 12.0
    finally:
        window.shutdown()
