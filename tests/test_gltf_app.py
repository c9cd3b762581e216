"""File → Export animation… in the app: glTF and MP4 of the next seconds, progress, Cancel,
while the live view keeps running."""

from __future__ import annotations

import imageio.v2 as imageio
import pygltflib
import pytest
from PyQt6.QtCore import QSettings
from PyQt6.QtWidgets import QFileDialog, QPushButton

from treedyn_app.export_animation import GLTF, MP4, ExportAnimationDialog, ExportRequest
from treedyn_app.main_window import MainWindow
from treedyn_app.worker import FAILED, RUNNING
from treedyn_core.model.preset import load_preset

from gltf_validator import gltf_validator, problems  # noqa: F401 - the fixture

READY_TIMEOUT_MS = 120_000
EXPORT_TIMEOUT_MS = 120_000


@pytest.fixture
def window(qtbot, tmp_path):
    """A shown MainWindow on the sapling, its simulation running."""
    settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)
    window = MainWindow(load_preset("sapling"), settings=settings)
    qtbot.addWidget(window)
    window.resize(900, 600)
    window.show()
    qtbot.waitUntil(lambda: window.worker.latest.state in (RUNNING, FAILED)
                    and window._generation > 0, timeout=READY_TIMEOUT_MS)
    yield window
    window.shutdown()


def _finished(job):
    return job.result is not None


def test_menu_exports_a_valid_gltf_while_the_view_runs(qtbot, window, tmp_path, monkeypatch,
                                                       gltf_validator):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "sapling.glb"
    monkeypatch.setattr(ExportAnimationDialog, "ask",
                        staticmethod(lambda parent, previous=None: ExportRequest(GLTF, 1.0, 30.0)))
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *args, **kwargs: (str(out), "")))
    jobs = []
    real = window.export_animation
    monkeypatch.setattr(window, "export_animation", lambda *a: jobs.append(real(*a)) or jobs[-1])
    started_at = window.worker.simulation.time
    window.export_animation_action.trigger()
    (job,) = jobs
    assert not window.export_animation_action.isEnabled()  # one export at a time
    qtbot.waitUntil(lambda: _finished(job), timeout=EXPORT_TIMEOUT_MS)
    assert job.result[0], job.result
    assert window.export_animation_action.isEnabled()
    (report,) = gltf_validator(out)
    assert report["numErrors"] == 0 and report["numWarnings"] == 0, problems(report)
    gltf = pygltflib.GLTF2().load(str(out))
    assert len(gltf.nodes) == 28
    assert gltf.accessors[gltf.animations[0].samplers[0].input].count == 31  # 1 s at 30/s
    assert [p.name for p in folder.iterdir()] == ["sapling.glb"]
    qtbot.wait(200)
    assert window.worker.simulation.time > started_at  # the live view kept running


def test_film_export_has_its_frames_and_size(qtbot, window, tmp_path):
    out = tmp_path / "sapling.mp4"
    started_at = window.worker.simulation.time
    job = window.export_animation(out, ExportRequest(MP4, 0.5, 30.0, (320, 240)))
    qtbot.waitUntil(lambda: _finished(job), timeout=EXPORT_TIMEOUT_MS)
    assert job.result[0], job.result
    reader = imageio.get_reader(str(out), format="FFMPEG")
    frames = [frame for frame in reader]
    reader.close()
    assert len(frames) == 15 and frames[0].shape == (240, 320, 3)  # 0.5 s at 30/s
    assert window.worker.simulation.time > started_at


def test_cancel_leaves_no_file(qtbot, window, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "long.glb"
    job = window.export_animation(out, ExportRequest(GLTF, 600.0, 30.0))
    qtbot.waitUntil(lambda: job.done > 10, timeout=EXPORT_TIMEOUT_MS)
    (button,) = job.progress.findChildren(QPushButton)  # the progress dialog's Cancel
    button.click()
    qtbot.waitUntil(lambda: _finished(job), timeout=EXPORT_TIMEOUT_MS)
    assert job.result == (False, "cancelled")
    assert list(folder.iterdir()) == []
    assert window.export_animation_action.isEnabled()


def test_export_goes_on_from_the_live_motion(qtbot, window, tmp_path):
    """The export's first frame is the live simulation's state when it was asked for (the
    worker paused here so that the state holds still), not the preset's start."""
    import numpy as np

    from treedyn_app.worker import PAUSED
    from test_gltf_export import _tips_from_gltf
    from treedyn_core.simulation import Simulation

    qtbot.waitUntil(lambda: window.worker.simulation.time > 1.0, timeout=READY_TIMEOUT_MS)
    window.worker.pause()
    qtbot.waitUntil(lambda: window.worker.latest.state == PAUSED, timeout=10_000)
    live = window.worker.simulation
    live_tip = live.tree.to_preset_order(live.tip.copy())
    rest = Simulation(load_preset("sapling"))
    order = rest.tree.to_preset_order
    arrays = {"names": order(np.array(rest.tree.names, dtype=object)),
              "C_IF": order(rest.C_IF, axis=0)[None], "tip": order(rest.tip, axis=0)[None],
              "base": order(rest.base, axis=0)[None]}
    out = tmp_path / "live.glb"
    job = window.export_animation(out, ExportRequest(GLTF, 0.5, 30.0))
    qtbot.waitUntil(lambda: _finished(job), timeout=EXPORT_TIMEOUT_MS)
    assert job.result[0], job.result
    first = _tips_from_gltf(out, arrays, np.array([0.0]))[0]
    assert np.abs(first - live_tip).max() < 1e-5
    assert np.abs(live_tip - order(rest.tree.rest_tip, axis=0)).max() > 1e-3  # it had moved
