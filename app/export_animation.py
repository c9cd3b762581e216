"""File → Export animation…: the next seconds of the tree, simulated at the sliders' values,
as animated glTF or as an MP4 film, while the live view keeps running.

The export simulates a simulation of its own, going on from the live one's present state
(taken in the worker between two steps: `Simulation.saved_state`) with the settings in force
(`Simulation.preset_data`); should the worker not answer within LIVE_STATE_TIMEOUT_S, from the
preset's start with the controls' values (`MainWindow.current_preset_data`). A glTF export simulates and writes on a thread of its own; a film simulates and draws one
frame per turn of the GUI's event loop (OpenGL lives on the GUI thread), into an offscreen
canvas of its own (`render_video.FilmCanvas`). Both write a temporary file beside the
target and rename it at the end; Cancel removes it.
"""

from __future__ import annotations

import os
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PyQt6.QtCore import QObject, Qt, QTimer, pyqtSignal
from PyQt6.QtWidgets import QComboBox, QDialog, QLabel, QProgressDialog, QWidget

from treedyn_core.errors import TreedynError
from treedyn_core.io.frame_clock import film_frame_count, frame_count
from treedyn_core.output_file import put_in_place

from .controls import NumberBox
from .dialogs import form_with_buttons
from .render_video import MAX_SIZE, MIN_SIDE, VideoJob, check_size, film_frames

GLTF, MP4 = "glb", "mp4"


POLL_MS = 50  # how often the progress dialog reads a glTF export's progress
DURATION_RANGE = (0.1, 600.0)  # s of simulated time an export may cover
DURATION_DECIMALS = 3  # a typed duration is kept to the millisecond
FPS_RANGE = (1, 240)  # frames per simulated second
LIVE_STATE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class ExportRequest:
    """kind: GLTF or MP4; duration s of simulated time; fps frames per simulated second;
    size (width, height) px of a film's frames."""

    kind: str
    duration: float
    fps: float = 30.0
    size: tuple[int, int] = (1280, 720)


class ExportAnimationDialog(QDialog):
    """Format, seconds, frames per second and (film) frame size of an export."""

    def __init__(self, parent: QWidget | None = None, previous: ExportRequest | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export animation")
        self.kind = QComboBox()
        self.kind.addItem("glTF 2.0 animation (.glb: Blender, game engines, the web)", GLTF)
        self.kind.addItem("MP4 film (H.264) of the 3-D view", MP4)
        # Boxes that take any number typed and bring it into range, saying so below them (Qt's
        # spin boxes refused the keystroke that left the range: 2500 frames/s typed gave 25,
        # 1000 s gave 100 s).
        self.duration = NumberBox("Duration", 1, "s", kept=DURATION_DECIMALS)
        self.duration.setRange(*DURATION_RANGE)
        self.duration.setValue(10.0)
        self.fps = NumberBox("Frames per second", 0, "frames/s", kept=0)
        self.fps.setRange(*FPS_RANGE)
        self.fps.setValue(30)
        self.width_box = NumberBox("Film width", 0, "px", kept=0)
        self.height_box = NumberBox("Film height", 0, "px", kept=0)
        self.adjusted = QLabel()
        self.adjusted.setStyleSheet("color: #b03020;")
        for box, value, top in ((self.width_box, 1280, MAX_SIZE[0]),
                                (self.height_box, 720, MAX_SIZE[1])):
            box.setRange(MIN_SIDE, top)
            box.setSingleStep(2)
            box.setValue(value)
        for box in (self.duration, self.fps, self.width_box, self.height_box):
            box.adjusted.connect(self.adjusted.setText)
        form_with_buttons(self, [("Format", self.kind), ("The next", self.duration),
                                 ("Frames", self.fps), ("Film width", self.width_box),
                                 ("Film height", self.height_box), self.adjusted])
        if previous is not None:  # the last export's choices, whatever its format
            self.kind.setCurrentIndex(max(self.kind.findData(previous.kind), 0))
            self.duration.setValue(previous.duration)
            self.fps.setValue(round(previous.fps))
            self.width_box.setValue(previous.size[0])
            self.height_box.setValue(previous.size[1])
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self._kind_changed()

    def _kind_changed(self) -> None:
        film = self.kind.currentData() == MP4
        self.width_box.setEnabled(film)
        self.height_box.setEnabled(film)

    def request(self) -> ExportRequest:
        # Even sizes only (H.264's 4:2:0 colour): round an odd entry down.
        size = (round(self.width_box.value()) // 2 * 2, round(self.height_box.value()) // 2 * 2)
        return ExportRequest(self.kind.currentData(), self.duration.value(),
                             float(round(self.fps.value())), size)

    @staticmethod
    def ask(parent: QWidget | None,
            previous: ExportRequest | None = None) -> ExportRequest | None:
        """Ask (with the `previous` request's choices); None when cancelled."""
        dialog = ExportAnimationDialog(parent, previous)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            return dialog.request()
        return None


class AnimationExport(QObject):
    """One export under way, with a progress dialog whose Cancel stops it.

    `finished(ok, message)` is emitted once, on the GUI thread: ok is False when it was
    cancelled or failed (the message says which), and then no file is left behind.
    """

    finished = pyqtSignal(bool, str)

    def __init__(self, data: dict, path: str | os.PathLike, request: ExportRequest,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.path = Path(path)
        self.request = request
        self.data = data
        # A film of d s at f frames/s has d·f frames, each shown 1/f s (3 s at 30/s: 90); an
        # animation's keys span d s, both ends included (91).
        self.total = (film_frame_count(request.duration, request.fps) if request.kind == MP4
                      else frame_count(request.duration, request.fps))
        self.done = 0
        self.result: tuple[bool, str] | None = None  # (ok, message) once finished
        self._outcome: tuple[bool, str] | None = None  # the glTF thread's, for `_poll`
        self._cancel = threading.Event()
        self._live_taken = threading.Event()
        self._live = None
        self._temporary: str | None = None
        self.progress = QProgressDialog(f"Exporting {self.path.name}…", "Cancel", 0, self.total,
                                        parent)
        self.progress.setWindowTitle("Export animation")
        self.progress.setWindowModality(Qt.WindowModality.NonModal)
        self.progress.setMinimumDuration(0)
        self.progress.canceled.connect(self.cancel)
        self._timer = QTimer(self)

    def take_live_state(self, sim) -> None:
        """In the worker, between steps (`SimulationWorker.call`): what the export goes on
        from."""
        self._live = (sim.preset_data(), sim.saved_state(), list(sim.tree.names))
        self._live_taken.set()

    def _simulation(self):
        """The export's own simulation, at the live state when it came in time."""
        from treedyn_core.simulation import Simulation

        if not self._live_taken.wait(LIVE_STATE_TIMEOUT_S):
            sim = Simulation.from_data(self.data)
            sim.warm_up()
            return sim
        data, state, names = self._live
        sim = Simulation.from_data(data)
        if list(sim.tree.names) != names:  # a preset rewritten as explicit limbs: reorder
            order = [sim.tree.index_of[name] for name in names]
            q, v, time, wind, springs = state
            permuted = [np.empty_like(a) for a in (q, v, springs)]
            for out, a in zip(permuted, (q, v, springs)):
                out[order] = a
            state = (permuted[0], permuted[1], time, wind, permuted[2])
        sim.warm_up()
        sim.restore_state(state)
        return sim

    def start(self) -> None:
        from treedyn_core.output_file import check_output, temporary_beside

        try:
            if self.request.kind == MP4:
                check_size(*self.request.size)
            check_output(self.path, (f".{self.request.kind}",), "the file")
        except Exception as error:
            self._finish(False, str(error))
            return
        self._temporary = temporary_beside(self.path)
        self.progress.show()
        if self.request.kind == GLTF:
            threading.Thread(target=self._write_gltf, daemon=True).start()
            self._timer.timeout.connect(self._poll)
            self._timer.start(POLL_MS)
        else:
            self._start_film()

    def cancel(self) -> None:
        """Stop; the partial file is removed."""
        self._cancel.set()

    # -- glTF: a thread simulates and writes ------------------------------------------------------

    def _write_gltf(self) -> None:
        from treedyn_core.io.gltf_export import MotionRecorder, write_glb

        try:
            sim = self._simulation()
            recorder = MotionRecorder(sim, self.request.duration, self.request.fps)
            for self.done in recorder:
                if self._cancel.is_set():
                    self._outcome = (False, "cancelled")
                    return
            size = write_glb(recorder.motion(), self._temporary)
            self._outcome = (True, f"Exported {recorder.frames} frames to {self.path} "
                                 f"({size / 1e6:.1f} MB)")
        except Exception as error:
            traceback.print_exc()
            self._outcome = (False, f"{type(error).__name__}: {error}")

    def _poll(self) -> None:
        self.progress.setValue(min(self.done, self.total - 1))
        if self._outcome is not None:
            self._finish(*self._outcome)

    # -- film: one frame per turn of the event loop -------------------------------------------------

    def _start_film(self) -> None:
        try:
            sim = self._simulation()
            job = VideoJob(self.total, self.request.fps, self.request.size)
            self._frames = film_frames(sim, job, self._temporary,
                                       (self.total - 1) / self.request.fps)
        except Exception as error:
            traceback.print_exc()
            self._finish(False, f"{type(error).__name__}: {error}")
            return
        self._timer.timeout.connect(self._next_frame)
        self._timer.start(0)

    def _next_frame(self) -> None:
        if self._cancel.is_set():
            self._frames.close()
            self._finish(False, "cancelled")
            return
        try:
            self.done = next(self._frames)
            self.progress.setValue(min(self.done, self.total - 1))
        except StopIteration:
            self._finish(True, f"Exported {self.total} frames of {self.request.size[0]} × "
                               f"{self.request.size[1]} px to {self.path}")
        except Exception as error:
            traceback.print_exc()
            self._frames.close()
            self._finish(False, f"{type(error).__name__}: {error}")

    # -- the end ------------------------------------------------------------------------------------

    def _finish(self, ok: bool, message: str) -> None:
        self._timer.stop()
        if self._temporary is not None:
            if ok:
                try:
                    put_in_place(self._temporary, self.path)   # synced, renamed or removed
                except TreedynError as error:
                    ok, message = False, str(error)
            if not ok:
                Path(self._temporary).unlink(missing_ok=True)
        self.progress.reset()
        self.progress.hide()
        self.result = (ok, message)
        self.finished.emit(ok, message)
