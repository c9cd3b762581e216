"""The main window: layout, menus, status bar, and the one place that wires signals.

The window reads the worker's latest frame at its own rate (a QTimer, ~60 Hz)
and hands positions to the canvas and probe samples to the live plot; widgets
send their changes to the worker as commands. The GUI thread never steps
physics: a grabbed branch's spring is applied by the worker (`grab`), modes are
computed in a thread of their own (`mode_shapes`), and a mode's animation only
poses the tree for drawing.
"""

from __future__ import annotations

import copy
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

from PyQt6.QtCore import QEvent, QSettings, Qt, QTimer
from PyQt6.QtGui import QAction, QActionGroup, QKeySequence
from PyQt6.QtWidgets import (QApplication, QDockWidget, QFileDialog, QLabel, QMainWindow,
                             QMessageBox, QProgressBar, QScrollArea, QSplitter)

from treedyn_core.dynamics.expand import expanded_data
from treedyn_core.dynamics.static_model import build_tree
from treedyn_core.errors import TreedynError
from treedyn_core.io.limb_mesh import foliage_form
from treedyn_core.model.preset import load_preset, shipped_presets
from treedyn_core.model.qsm_read import SCAN_SUFFIXES
from treedyn_core.model.recipe import save_recipe
from treedyn_core.simulation import INTEGRATORS, MODELS

from .canvas import TreeCanvas
from .controls import MODEL_NOTES, Controls
from .dialogs import ImageSizeDialog
from .export_animation import AnimationExport, ExportAnimationDialog
from .grab import GrabTool
from .keyboard import KeyRouter
from .mode_highlight import ModeHighlight, moving_limbs
from .mode_shapes import ModeAnimation, ModesJob
from .modes_panel import ModesPanel
from .plots import LivePlot, PlotHistory
from .smooth_pose import between
from .stand_visual import stand_of
from .status_line import StatusLine
from .summary import plain_text, summary
from .tree_visual import LINES, TUBES
from .worker import FAILED, LIVE_INTEGRATORS, PAUSED, PREPARING, RUNNING, SimulationWorker

TICK_MS = 16  # ~60 Hz: how often the window reads the worker's latest frame
# The live plot scrolls ~40 px per second: 20 repaints a second look smooth, and each
# repaint (three polylines of ~1,200 points, antialiased) costs the GUI thread ~2 ms.
PLOT_INTERVAL_S = 0.05
STATUS_INTERVAL = 0.25  # s between status-bar refreshes
# States that come further apart than this (wall time: slow motion, ×0.1 gives 83 ms) are
# drawn in between at every tick (`smooth_pose`), a state's interval behind the simulation.
SMOOTH_GAP_S = 1.5 * TICK_MS / 1000.0
MAX_RECENT = 8
DEFAULT_SIZE = (1280, 800)  # px, a first window (afterwards the one the user left)
MINIMUM_SIZE = (960, 600)   # px: the controls, a 3-D view of half the window, a plot
SIDE_PANEL_WIDTH = 330      # px, the controls' first width (the splitter keeps the user's)
PLOT_SHARE = 0.22           # of the view area's height, the live plot's first share
# The settings' names in the unsaved-changes question.
UNSAVED_NAMES = {"wind.speed": "wind speed", "wind.direction_deg": "wind direction",
                 "wind.turbulence_intensity": "turbulence", "tuning.stiffness_scale": "stiffness",
                 "tuning.damping_scale": "damping", "simulation.integrator": "integrator",
                 "simulation.model": "model"}
ADJUSTED_MESSAGE_MS = 8000  # a typed value brought into range: how long the status bar says so
PREPARING_TEXT = "Preparing the simulation…"
COMPILE_BAR_CELLS = 20  # the view's compile progress bar, in characters
MOUSE_HELP = "drag a branch: pull it · Ctrl+drag or middle-drag: orbit · wheel: zoom · " \
             "Shift+drag: pan"
# What the status line says in each of the worker's states (a message may cover it a while).
STATE_TEXT = {RUNNING: f"Running · {MOUSE_HELP}", PAUSED: f"Paused (Space plays) · {MOUSE_HELP}",
              PREPARING: PREPARING_TEXT}
MOUSE_HELP_FULL = ("Left-drag a branch to pull it with a spring; release and it swings back.\n"
                   "Orbit: left-drag the sky, Ctrl + left-drag or middle-drag anywhere.\n"
                   "Zoom: wheel or right-drag.  Pan: Shift + left-drag.  Home: frame the tree.")
ENERGY_TIP = ("Mechanical energy E = kinetic + potential.\n"
              "Potential: gravity's, Σ m·g·z over the limbs' centres of mass with z measured\n"
              "from z = 0 (the ground the shipped trees stand on), plus the springs' strain\n"
              "energy, measured from each joint's spring rest rotation.\n"
              "So E is not zero at rest: the wood's weight sits above the ground and the\n"
              "springs of a prestressed tree hold it up. Wind adds energy, damping takes it out.")
PRESET_SUFFIXES = (".yaml", ".yml")
# What File → Open and a drop onto the window open: a preset, or a TreeQSM scan (docs/scans.md)
# as the preset of that scan.
OPENABLE_SUFFIXES = PRESET_SUFFIXES + tuple(SCAN_SUFFIXES)
OPEN_FILTER = ";;".join((
    f"Presets and scans ({' '.join('*' + s for s in OPENABLE_SUFFIXES)})",
    f"treedyn presets ({' '.join('*' + s for s in PRESET_SUFFIXES)})",
    f"TreeQSM scans ({' '.join('*' + s for s in SCAN_SUFFIXES)})",
    "All files (*)"))
DROP_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop)
# The integrators the app offers: those of the core that the worker steps live.
OFFERED_INTEGRATORS = tuple(name for name in INTEGRATORS if name in LIVE_INTEGRATORS)


def format_energy(joules: float) -> str:
    """'7.91 kJ' and the like."""
    size = abs(joules)
    for factor, unit in ((1e9, "GJ"), (1e6, "MJ"), (1e3, "kJ")):
        if size >= factor:
            return f"{joules / factor:.3g} {unit}"
    return f"{joules:.3g} J"


def _is_shipped(path) -> bool:
    """`path` is one of the shipped presets' files."""
    if path is None:
        return False
    shipped = shipped_presets().get(Path(path).stem)
    return shipped is not None and Path(shipped).resolve() == Path(path).resolve()


def dropped_file(mime) -> str | None:
    """The first local file among the dragged `mime` data (a QMimeData) that the app opens (a
    preset or a scan, by its suffix), else None."""
    if mime is None or not mime.hasUrls():
        return None
    for url in mime.urls():
        if url.isLocalFile() and Path(url.toLocalFile()).suffix.lower() in OPENABLE_SUFFIXES:
            return url.toLocalFile()
    return None


def scan_file(preset) -> str | None:
    """The scan file (absolute path) of a preset whose tree is a scan (``tree.scan``), else
    None."""
    scan = preset.data.get("tree", {}).get("scan")
    return str(scan["file"]) if isinstance(scan, dict) and scan.get("file") else None


def opened_scan(preset) -> str | None:
    """The scan file of a scan opened directly (no preset file of its own), else None."""
    return scan_file(preset) if getattr(preset, "path", None) is None else None


def default_settings() -> QSettings:
    """The user's settings; a file of its own when TREEDYN_SETTINGS names one (the tests: a
    window opened by a test must not leave its geometry or recent files to the user's app)."""
    path = os.environ.get("TREEDYN_SETTINGS")
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings("treedyn", "treedyn")


def preset_entries() -> list[tuple[str, str]]:
    """The preset picker's shipped entries: (each preset's name, its key), by name."""
    entries = []
    for key, path in shipped_presets().items():
        try:
            name = load_preset(path).name
        except TreedynError:
            name = key
        entries.append((name, key))
    return sorted(entries, key=lambda entry: entry[0].lower())


class MainWindow(QMainWindow):
    """The treedyn desktop app on one preset (a validated `Preset`)."""

    def __init__(self, preset, *, settings: QSettings | None = None, render_mode: str = TUBES,
                 playing: bool = True):
        super().__init__()
        self._settings = settings if settings is not None else default_settings()
        self._preset = preset
        self._generation = 0
        self._seq = -1
        self._drawn_snapshot = None
        self._shown_wind = None
        self._playing = playing
        self._failure_box: QMessageBox | None = None
        self._draws = 0
        self._fps = 0.0
        self._fps_since = time.perf_counter()
        self._status_at = 0.0
        self._compiling_at = None
        self._compiling_text = None  # the kernels' compile progress, while it lasts
        self._framed_preset = None
        self._modes_job: ModesJob | None = None
        self._modes_shown = None  # the key of the job whose modes the panel lists
        self._animation: ModeAnimation | None = None
        self._resume_after_modes: bool | None = None
        self.mode_pose = None  # (base, tip) of the mode drawn last (tests read it)
        self._last_export = None  # the export dialog's last answer: its next defaults
        self.unsaved_box: QMessageBox | None = None  # the Save / Discard / Cancel question
        self._close_asked = False  # the user answered the question on closing

        self.canvas = TreeCanvas(render_mode=render_mode)
        self.controls = Controls(OFFERED_INTEGRATORS, MODELS)
        self.history = PlotHistory()
        self.plot = LivePlot(self.history)
        self.modes_panel = ModesPanel()
        self.grab_tool = GrabTool(self.canvas, lambda: self.worker, self._show_grab)
        self.highlight = ModeHighlight(self.canvas.view.scene)
        self._pose = None  # (base, tip) drawn last
        # The last two snapshots of the running simulation as (snapshot, wall time it came),
        # the older first (None before the second), and the fraction between them drawn last.
        self._states: tuple = (None, None)
        self._alpha_drawn = None
        self._build_layout()
        self._build_status_bar()
        self._build_menus()
        self.keys = KeyRouter(self, [a.shortcut() for a in (
            self.play_action, self.step_action, self.reset_action, self.frame_action)],
            self.focus_view)
        self.keys.install(QApplication.instance())
        self._shown_settings: dict = {}  # the controls' settings when the preset was shown
        self.controls.set_presets(preset_entries())
        self._show_preset(preset, self._show_at_rest(preset))
        self.setMinimumSize(*MINIMUM_SIZE)
        self._restore_geometry()
        # A preset or scan file dropped onto the window opens; the view is a native window of
        # its own (`gl_window`), which gets its drags itself: they come here through a filter.
        self.setAcceptDrops(True)
        if self.canvas.window is not None and hasattr(self.canvas.window, "installEventFilter"):
            self.canvas.window.installEventFilter(self)

        self.worker = self._start_worker(preset)
        # The view's message waits for the first frame: vispy renders each new glyph of a text
        # on the CPU (~10 ms each, measured 2.5 s for a first message on a busy machine), and
        # the tree at rest should be on screen first.
        self._drawn_once = False
        self._wire()
        self.canvas.canvas.events.draw.connect(self._count_draw)
        self._plot_stale = False
        self._plot_painted_at = 0.0
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    # -- layout ---------------------------------------------------------------------------------

    def _build_layout(self) -> None:
        # The view area is a vertical splitter so that panels (plots) can go under the view.
        self.view_area = QSplitter(Qt.Orientation.Vertical)
        self.view_area.addWidget(self.canvas.widget)
        self.view_area.addWidget(self.plot)
        self.view_area.setStretchFactor(0, 1)
        self.view_area.setStretchFactor(1, 0)
        self.view_area.setChildrenCollapsible(False)

        self.side_panel = scroll = QScrollArea()
        scroll.setWidget(self.controls)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(self.controls.minimumSizeHint().width() + 24)
        self.splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setObjectName("side")
        splitter.addWidget(self.view_area)
        splitter.addWidget(scroll)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 0)
        splitter.setChildrenCollapsible(False)
        self.setCentralWidget(splitter)
        width, height = DEFAULT_SIZE
        splitter.setSizes([width - SIDE_PANEL_WIDTH, SIDE_PANEL_WIDTH])
        self.view_area.setSizes([round(height * (1 - PLOT_SHARE)), round(height * PLOT_SHARE)])
        self.modes_dock = QDockWidget("Modes", self)
        self.modes_dock.setObjectName("modes")
        self.modes_dock.setWidget(self.modes_panel)
        self.modes_dock.setAllowedAreas(Qt.DockWidgetArea.LeftDockWidgetArea
                                        | Qt.DockWidgetArea.RightDockWidgetArea
                                        | Qt.DockWidgetArea.BottomDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.modes_dock)
        self.modes_dock.hide()

    def _build_status_bar(self) -> None:
        bar = StatusLine()
        self.setStatusBar(bar)
        bar.set_state(PREPARING_TEXT, MOUSE_HELP_FULL)
        self.compile_bar = QProgressBar()
        self.compile_bar.setMaximumWidth(160)
        self.compile_bar.setToolTip("Compiling the physics kernels (numba): once per version")
        self.compile_bar.hide()
        bar.addPermanentWidget(self.compile_bar)
        self.time_label = QLabel()
        self.realtime_label = QLabel()
        self.fps_label = QLabel()
        self.limbs_label = QLabel()
        self.energy_label = QLabel()
        tips = ("Simulated time", "Real-time factor: simulated seconds per wall-clock second",
                "Frames drawn per second", "Number of limbs", ENERGY_TIP)
        widest = ("t = 8888.88 s", "×8.88 real time (can't keep up)", "888 fps",
                  "88,888 limbs", "E = -888 MJ")
        for label, tip, text in zip((self.time_label, self.realtime_label, self.fps_label,
                                     self.limbs_label, self.energy_label), tips, widest):
            label.setToolTip(tip)
            label.setMinimumWidth(label.fontMetrics().horizontalAdvance(text) + 12)
            label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            bar.addPermanentWidget(label)

    def _build_menus(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self.open_action = self._action(file_menu, "&Open…", QKeySequence.StandardKey.Open,
                                        self.open_dialog, "Ctrl+O")
        self.save_action = self._action(file_menu, "&Save", None, self.save, "Ctrl+S")
        self.save_as_action = self._action(file_menu, "Save &As…", None, self.save_as_dialog,
                                           "Ctrl+Shift+S")
        self.export_action = self._action(file_menu, "&Export image…", None,
                                          self.export_image_dialog, "Ctrl+E")
        self.export_animation_action = self._action(file_menu, "Export &animation…", None,
                                                    self.export_animation_dialog, "Ctrl+Shift+E")
        self.recent_menu = file_menu.addMenu("Recent &files")
        file_menu.addSeparator()
        self.quit_action = self._action(file_menu, "&Quit", None, self.close, "Ctrl+Q")
        self._rebuild_recent_menu()

        sim_menu = menu.addMenu("&Simulation")
        self.play_action = self._action(sim_menu, "&Play / Pause", None, self.toggle_play,
                                        "Space")
        self.step_action = self._action(sim_menu, "&Step", None, self.single_step, ".")
        self.reset_action = self._action(sim_menu, "&Reset", None, self.reset, "Ctrl+R")

        view_menu = menu.addMenu("&View")
        group = QActionGroup(self)
        group.setExclusive(True)
        self.lines_action = QAction("&Lines (fastest)", self, checkable=True)
        self.tubes_action = QAction("Shaded &tubes", self, checkable=True)
        for action, mode in ((self.lines_action, LINES), (self.tubes_action, TUBES)):
            group.addAction(action)
            view_menu.addAction(action)
            action.triggered.connect(lambda checked, m=mode: self.set_render_mode(m))
        self.lines_action.setChecked(self.canvas.tree.mode == LINES)
        self.tubes_action.setChecked(self.canvas.tree.mode == TUBES)
        view_menu.addSeparator()
        self.frame_action = self._action(view_menu, "&Frame the tree", None,
                                         self.canvas.frame_tree, "Home")
        view_menu.addSeparator()
        self.modes_action = self._action(view_menu, "&Modes…", None, self.show_modes, "Ctrl+M")
        self.plot_action = QAction("Live &plot", self, checkable=True)
        self.plot_action.setChecked(True)
        self.plot_action.toggled.connect(self.plot.setVisible)
        view_menu.addAction(self.plot_action)

    def _action(self, menu, text, standard, slot, shortcut: str) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda checked=False: slot())
        menu.addAction(action)
        return action

    def _wire(self) -> None:
        c = self.controls
        c.wind_speed.valueChanged.connect(lambda v: self.worker.set_wind_speed(v))
        c.wind_direction.valueChanged.connect(lambda v: self.worker.set_wind_direction(v))
        c.turbulence.valueChanged.connect(
            lambda v: self.worker.set_turbulence_intensity(v / 100.0))
        c.stiffness.valueChanged.connect(lambda v: self.worker.set_stiffness_scale(v))
        c.damping.valueChanged.connect(lambda v: self.worker.set_damping_scale(v))
        c.time_scale.valueChanged.connect(lambda v: self.worker.set_time_scale(v))
        c.integrator.currentTextChanged.connect(lambda name: self.worker.set_integrator(name))
        c.model.currentTextChanged.connect(self._model_picked)
        c.play_button.clicked.connect(self.toggle_play)
        c.step_button.clicked.connect(self.single_step)
        c.reset_button.clicked.connect(self.reset)
        c.preset.activated.connect(self._preset_picked)
        for slider in (c.wind_speed, c.wind_direction, c.turbulence, c.stiffness, c.damping):
            slider.valueChanged.connect(self._show_title)
        for slider in c.sliders():
            slider.adjusted.connect(
                lambda text: self.statusBar().showMessage(text, ADJUSTED_MESSAGE_MS))
        for combo in (c.integrator, c.model):
            combo.currentTextChanged.connect(self._show_title)
        events = self.canvas.canvas.events
        events.mouse_press.connect(self.grab_tool.press)  # before the camera: it may block
        events.mouse_move.connect(self.grab_tool.move)
        events.mouse_release.connect(self.grab_tool.release)
        m = self.modes_panel
        m.modeChosen.connect(self._mode_chosen)
        m.modeHovered.connect(self._show_moving_limbs)
        m.amplitudeChanged.connect(self._mode_amplitude)
        m.speedChanged.connect(self._mode_speed)
        self.modes_dock.visibilityChanged.connect(self._modes_visibility)

    def _model_picked(self, name: str) -> None:
        self.worker.set_model(name)
        self.statusBar().showMessage(MODEL_NOTES.get(name, name), 15000)

    def _start_worker(self, preset) -> SimulationWorker:
        worker = SimulationWorker(preset, playing=self._playing,
                                  time_scale=self.controls.time_scale.value())
        worker.start()
        return worker

    # -- transport ------------------------------------------------------------------------------

    def toggle_play(self) -> None:
        if self._animation is not None:  # back to the simulation; playing is what was asked
            self._stop_mode(resume=False)
        self._playing = not self._playing
        (self.worker.play if self._playing else self.worker.pause)()
        self.controls.show_playing(self._playing)

    def single_step(self) -> None:
        if self._animation is not None:
            self._stop_mode(resume=False)
        self._playing = False
        self.controls.show_playing(False)
        self.worker.step()

    def reset(self) -> None:
        if self._failure_box is not None:
            self._failure_box.close()
            self._failure_box = None
        # The controls are the truth: a value forced past them (a test, a script) is undone.
        self.worker.set_stiffness_scale(self.controls.stiffness.value())
        self.worker.set_damping_scale(self.controls.damping.value())
        if self._animation is not None:
            self._stop_mode(resume=False)
        self.worker.reset()
        self.history.clear()
        self.canvas.set_message(None)
        self.statusBar().showMessage(self._reset_text(), 3000)

    def _reset_text(self) -> str:
        """What Reset went back to: the tree's start at t = 0 (`Simulation.start`)."""
        sim = self.worker.simulation
        if sim is not None and getattr(sim, "start", None) == "mean_wind":
            return "Reset to t = 0: the tree bent in its balance in the mean wind"
        return "Reset to t = 0: the rest pose"

    def focus_view(self) -> None:
        """Give the keyboard focus to the view (where every key is a shortcut)."""
        if self.canvas.widget is not None:
            self.canvas.widget.setFocus(Qt.FocusReason.OtherFocusReason)

    def set_render_mode(self, mode: str) -> None:
        try:
            self.canvas.set_render_mode(mode)
        except Exception as exc:
            self.statusBar().showMessage(f"Cannot draw {mode}: {exc}", 8000)
            self.lines_action.setChecked(True)
            self.canvas.set_render_mode(LINES)

    # -- image export ---------------------------------------------------------------------------

    def export_image_dialog(self) -> None:
        size = ImageSizeDialog.get_size(self, *self.canvas.physical_size())
        if size is None:
            return
        name = (self._preset.data.get("name") or "treedyn").replace(" ", "_") + ".png"
        path, _ = QFileDialog.getSaveFileName(self, "Export image", name,
                                              "PNG images (*.png)")
        if path:
            if not Path(path).suffix:
                path += ".png"
            self.export_image(path, *size)

    def export_image(self, path: str | os.PathLike, width: int, height: int) -> bool:
        """Write the view at width × height px to the PNG file `path`."""
        from vispy.io import write_png

        from treedyn_core.output_file import write_atomically

        try:
            image = self.canvas.render_image(int(width), int(height))
            write_atomically(path, lambda temporary: write_png(temporary, image))
        except Exception as exc:
            traceback.print_exc()
            self._warn("Cannot export the image", f"{type(exc).__name__}: {exc}")
            return False
        self.statusBar().showMessage(f"Exported {width} × {height} px to {path}", 5000)
        return True

    # -- animation export -------------------------------------------------------------------------

    def export_animation_dialog(self) -> None:
        """File → Export animation…: format and length, then the file."""
        request = ExportAnimationDialog.ask(self, self._last_export)
        if request is None:
            return
        self._last_export = request
        name = (self._preset.data.get("name") or "treedyn").replace(" ", "_") + f".{request.kind}"
        kinds = {"glb": "glTF binary (*.glb)", "mp4": "MP4 films (*.mp4)"}
        path, _ = QFileDialog.getSaveFileName(self, "Export animation", name, kinds[request.kind])
        if path:
            if not Path(path).suffix:
                path += f".{request.kind}"
            self.export_animation(path, request)

    def export_animation(self, path: str | os.PathLike, request) -> AnimationExport:
        """Start exporting the next `request.duration` s of the live simulation, at the
        settings in force, to `path`."""
        job = AnimationExport(self.current_preset_data(), path, request, self)
        self.export_animation_action.setEnabled(False)

        def finished(ok: bool, message: str) -> None:
            self.export_animation_action.setEnabled(True)
            if ok:
                self.statusBar().showMessage(message, 8000)
            elif message != "cancelled":
                self._warn("Cannot export the animation", message)

        job.finished.connect(finished)
        self.worker.call(job.take_live_state)
        job.start()
        return job

    # -- mode viewer ------------------------------------------------------------------------------

    def show_modes(self) -> None:
        """View → Modes…: show the panel and compute the modes of the tree running now."""
        self.modes_dock.show()
        self.modes_dock.raise_()
        self._request_modes()

    def _modes_key(self):
        frame = self.worker.latest
        if frame.settings is None or frame.tree is None or frame.generation == 0:
            return None
        return (frame.generation, frame.settings.stiffness_scale, frame.settings.damping_scale)

    def _request_modes(self) -> None:
        """Start computing the modes if the panel shows none of the running tree."""
        key = self._modes_key()
        job = self._modes_job
        if key is None or (job is not None and job.key == key):
            return
        if job is not None and not job.done.is_set():
            return  # one at a time; asked again when it ends
        self._modes_job = job = ModesJob(key)
        if self._modes_shown is None or self._modes_shown[0] != key[0]:
            self.modes_panel.show_computing(self._tree_name())
        else:
            self.modes_panel.status.setText("Recomputing the modes (stiffness or damping "
                                            "changed)…")
        self.worker.call(job.start)

    def _tree_name(self) -> str:
        preset = self.worker.latest.preset
        return preset.name if preset is not None else "the tree"

    def _poll_modes(self) -> None:
        job = self._modes_job
        if not self.modes_dock.isVisible():
            return
        if job is None:  # asked while the simulation was still being prepared
            self._request_modes()
            return
        if not job.done.is_set() and (self._modes_shown is None
                                      or self._modes_shown[0] != job.key[0]):
            self.modes_panel.show_computing(self._tree_name(),
                                            time.perf_counter() - job.requested)
        if job.done.is_set() and self._modes_shown != job.key:
            self._modes_shown = job.key
            if job.key[0] != self.worker.latest.generation:
                pass  # a stale tree: the next request replaces it
            elif job.error is not None:
                self._stop_mode(resume=True)
                self.modes_panel.show_error(job.error)
            else:
                note = ("(The seed model's tree is linearised with the exact dynamics.)"
                        if self.worker.latest.settings.model == "seed" else "")
                self.modes_panel.show_modes(job.result, job.seconds, note)
                if self._animation is not None:
                    self._start_mode(self._animation.index)
        if job.done.is_set():
            self._request_modes()

    def _modes_visibility(self, visible: bool) -> None:
        if not visible and self.modes_dock.isHidden():  # closed, not merely covered
            self.modes_panel.choose(-1, emit=False)
            self._stop_mode(resume=True)

    def _mode_chosen(self, index: int) -> None:
        if index < 0:
            self._stop_mode(resume=True)
        else:
            self._start_mode(index)

    def _start_mode(self, index: int) -> None:
        job = self._modes_job
        frame = self.worker.latest
        if job is None or job.result is None or job.key[0] != frame.generation \
                or index >= job.result.count:
            return
        self.grab_tool.cancel()
        self.grab_tool.enabled = False
        if self._resume_after_modes is None:
            self._resume_after_modes = self._playing
            if self._playing:
                self._playing = False
                self.worker.pause()
                self.controls.show_playing(False)
        previous = self._animation
        self._animation = ModeAnimation(frame.tree, job.result, index,
                                        self.modes_panel.amplitude_fraction(),
                                        self.modes_panel.speed_factor())
        if previous is not None and previous.index == index:
            self._animation.start = previous.start  # recomputed: keep the phase going
        result = job.result
        self.statusBar().showMessage(
            f"Mode {index + 1}: {result.frequencies_hz[index]:.4g} Hz, "
            f"{result.descriptions[index]} — simulation paused (close the panel or Stop to "
            f"go back)")

    def _stop_mode(self, resume: bool) -> None:
        """Back from the mode viewer to the simulation (playing again if `resume` and it was
        playing when a mode was chosen)."""
        if self._animation is None and self._resume_after_modes is None:
            return
        self._animation = None
        self.mode_pose = None
        self.grab_tool.enabled = True
        self.modes_panel.choose(-1, emit=False)
        snapshot = self.worker.latest.snapshot
        if snapshot is not None:
            self._drawn_snapshot = snapshot
            self._set_pose(snapshot.base, snapshot.tip)
        if resume and self._resume_after_modes and not self._playing:
            self._playing = True
            self.worker.play()
            self.controls.show_playing(True)
        self._resume_after_modes = None
        self.statusBar().clearMessage()

    def _set_pose(self, base, tip) -> None:
        """Draw the tree (and the highlighted limbs) posed base → tip."""
        self._pose = (base, tip)
        self.canvas.set_pose(base, tip)
        self.highlight.follow(base, tip)

    def _show_moving_limbs(self, index: int) -> None:
        """Highlight the limbs mode `index` moves (−1: none) on the tree drawn."""
        job, tree = self._modes_job, self.worker.latest.tree
        if (index < 0 or job is None or job.result is None or tree is None
                or job.key[0] != self.worker.latest.generation or index >= job.result.count
                or self._pose is None):
            self.highlight.show(None)
        else:
            self.highlight.show(moving_limbs(tree, job.result, index), *self._pose)
        self.canvas.update()

    def _mode_amplitude(self, fraction: float) -> None:
        if self._animation is not None:
            self._animation.set_amplitude(fraction)

    def _mode_speed(self, speed: float) -> None:
        if self._animation is not None:
            self._animation.set_speed(speed)

    def _animate_mode(self) -> None:
        base, tip = self._animation.pose()
        self.mode_pose = (base, tip)
        self._set_pose(base, tip)

    # -- grabbing -------------------------------------------------------------------------------

    def _show_grab(self, text: str | None) -> None:
        if text is None:
            self.statusBar().clearMessage()
        else:
            self.statusBar().showMessage(text)

    # -- drag and drop ----------------------------------------------------------------------------

    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self._drag(event)

    def dragMoveEvent(self, event) -> None:  # noqa: N802
        self._drag(event)

    def dropEvent(self, event) -> None:  # noqa: N802
        self._drop(event)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        """Drags over the 3-D view (a native window of its own) are the window's."""
        if watched is self.canvas.window and event.type() in DROP_EVENTS:
            (self._drop if event.type() == QEvent.Type.Drop else self._drag)(event)
            return True
        return super().eventFilter(watched, event)

    def _drag(self, event) -> None:
        if dropped_file(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def _drop(self, event) -> None:
        """Open a dropped preset or scan, asking first about unsaved changes (as Open does);
        after the drop has returned, so that the file manager is not held by a question."""
        path = dropped_file(event.mimeData())
        if path is None:
            event.ignore()
            return
        event.acceptProposedAction()
        QTimer.singleShot(0, lambda: self.confirm_unsaved(lambda: self.open_preset(path)))

    # -- presets ----------------------------------------------------------------------------------

    @property
    def preset(self):
        """The preset of the running simulation."""
        return self._preset

    def open_dialog(self) -> None:
        where = getattr(self._preset, "path", None) or opened_scan(self._preset)
        start = str(Path(where).parent) if where else ""
        path, _ = QFileDialog.getOpenFileName(self, "Open preset or scan", start, OPEN_FILTER)
        if path:
            self.confirm_unsaved(lambda: self.open_preset(path))

    def open_preset(self, source: str | os.PathLike) -> bool:
        """Load a preset file or shipped name; on an invalid one show the one-line error and
        leave the running simulation as it is. True if loading started."""
        try:
            preset = load_preset(source)
        except TreedynError as exc:
            self._warn("Cannot open preset", str(exc))
            return False
        except Exception as exc:  # an unexpected failure is shown, not swallowed
            traceback.print_exc()
            self._warn("Cannot open preset", f"{type(exc).__name__}: {exc}")
            return False
        self.canvas.set_message(f"Loading {preset.name}…")
        if self.worker.is_alive():
            self.worker.load(preset)
        else:  # the first preset failed to build: start afresh
            self._preset = preset
            self._generation, self._seq = 0, -1
            self.worker = self._start_worker(preset)
        return True

    def save(self) -> bool:
        """File → Save: write the recipe back to its file (Save As… for a shipped preset or
        one without a file); True if saved."""
        path = getattr(self._preset, "path", None)
        if path is None or _is_shipped(path):
            return self.save_as_dialog()
        return self.save_as(path)

    def confirm_unsaved(self, then: Callable[[], None],
                        cancelled: Callable[[], None] | None = None) -> None:
        """Run `then` at once if no setting is unsaved; else ask Save / Discard / Cancel (a
        window-modal box, `unsaved_box`, that does not block the event loop) and run it after
        a Save that saved or a Discard; `cancelled` after Cancel."""
        if not self.unsaved_settings():
            then()
            return
        if self.unsaved_box is not None:
            self.unsaved_box.close()
        name = self._preset.data.get("name") or "untitled"
        changed = ", ".join(UNSAVED_NAMES.get(key, key) for key in self.unsaved_settings())
        box = QMessageBox(QMessageBox.Icon.Question, "Unsaved changes",
                          f"{name}: {changed} changed since it was loaded. Save the changes?",
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        box.setWindowModality(Qt.WindowModality.WindowModal)

        def answered(result: int) -> None:
            self.unsaved_box = None
            button = box.standardButton(box.clickedButton()) if box.clickedButton() else None
            if button == QMessageBox.StandardButton.Save:
                if self.save():
                    then()
                elif cancelled is not None:
                    cancelled()
            elif button == QMessageBox.StandardButton.Discard:
                then()
            elif cancelled is not None:
                cancelled()

        box.finished.connect(answered)
        self.unsaved_box = box
        box.open()

    def save_as_dialog(self) -> bool:
        start = ""
        if getattr(self._preset, "path", None) is not None:
            start = str(Path(self._preset.path).with_suffix("").name) + "_tuned.yaml"
        elif opened_scan(self._preset) is not None:  # beside the scan, named after it
            start = str(Path(opened_scan(self._preset)).with_suffix(".yaml"))
        path, _ = QFileDialog.getSaveFileName(self, "Save preset as", start,
                                              "treedyn presets (*.yaml *.yml)")
        if not path:
            return False
        if not Path(path).suffix:
            path += ".yaml"
        return self.save_as(path)

    def save_as(self, path: str | os.PathLike) -> bool:
        """Write the preset's recipe with the settings the user changed (`unsaved_settings`)
        to `path` (docs/design.md §6.6); the window then shows that file."""
        settings = self.unsaved_settings()
        scan = scan_file(self._preset)
        if scan is not None:
            # The preset names its scan relative to its own folder (as load_preset reads it),
            # wherever it is saved: not the absolute path a scan opened directly has, nor a
            # relative path that was right only from the folder it was loaded from.
            try:
                settings["tree.scan.file"] = Path(os.path.relpath(
                    scan, Path(path).resolve().parent)).as_posix()
            except ValueError:  # another drive (Windows): no relative path exists
                settings["tree.scan.file"] = scan
        try:
            save_recipe(self._preset, path, settings)
            saved = load_preset(path)
        except TreedynError as exc:
            self._warn("Cannot save preset", str(exc))
            return False
        except Exception as exc:
            traceback.print_exc()
            self._warn("Cannot save preset", f"{type(exc).__name__}: {exc}")
            return False
        self._preset = saved
        self._show_preset(saved)  # the values it holds are the controls' own
        self._add_recent(path)
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def _control_settings(self) -> dict:
        """The settings the controls show, as preset key paths → values in the preset's
        units."""
        c = self.controls
        return {"wind.speed": c.wind_speed.value(),
                "wind.direction_deg": c.wind_direction.value() % 360.0,
                "wind.turbulence_intensity": c.turbulence.value() / 100.0,
                "tuning.stiffness_scale": c.stiffness.value(),
                "tuning.damping_scale": c.damping.value(),
                "simulation.integrator": c.integrator.currentText(),
                "simulation.model": c.model.currentText()}

    def unsaved_settings(self) -> dict:
        """The settings the user changed since the preset was loaded or saved (key path →
        value): compared with what the controls showed then, so a preset's value the
        controls round (6.25 m/s shown as 6.2) does not count as a change."""
        return {key: value for key, value in self._control_settings().items()
                if value != self._shown_settings.get(key)}

    def current_preset_data(self) -> dict:
        """The running preset's data with the controls' current values written in."""
        data = copy.deepcopy(self._preset.data)
        c = self.controls
        data["tuning"]["stiffness_scale"] = c.stiffness.value()
        data["tuning"]["damping_scale"] = c.damping.value()
        data["wind"]["speed"] = c.wind_speed.value()
        data["wind"]["direction_deg"] = c.wind_direction.value() % 360.0
        data["wind"]["turbulence_intensity"] = c.turbulence.value() / 100.0
        data["simulation"]["model"] = c.model.currentText()
        sim = self.worker.simulation
        if (sim is not None and sim.prestressed
                and sim.prestress_stiffness_scale != data["tuning"]["stiffness_scale"]):
            # The stiffness moved since the prestress was computed: bake the springs' rest
            # rotations in force (explicit limbs, prestress: false) so the file loads to the
            # same, sagged or sprung, tree (docs/design.md §6).
            data = expanded_data(data, sim.tree, sim.spring_C_rel.copy())
        return data

    def _preset_picked(self, index: int) -> None:
        source = self.controls.preset_source(index)
        if source is None or source == self._preset_source(self._preset):
            return

        def back() -> None:  # cancelled: the picker shows the running preset again
            self.controls.show_preset(self._preset_label(self._preset),
                                      self._preset_source(self._preset),
                                      self.controls.description.text(),
                                      self.controls.full_description.text())

        self.confirm_unsaved(lambda: self.open_preset(source), back)

    def _show_preset(self, preset, tree=None) -> None:
        """Show `preset` in the controls: its entry in the picker, its summary (with its built
        `tree`'s size, built here if not given) and its settings."""
        if tree is None:
            try:
                tree = build_tree(preset.data, getattr(preset, "error", None),
                                  damping_model=False)
            except TreedynError:
                tree = None
        self.controls.show_preset(
            self._preset_label(preset), self._preset_source(preset),
            summary(preset.data, tree), plain_text(preset.data.get("description", "") or ""))
        wind, tuning = preset.data["wind"], preset.data["tuning"]
        self.controls.show_stand(stand_of(preset.data), float(wind["reference_height"]))
        self.controls.show_values(
            wind_speed=wind["speed"], wind_direction_deg=wind["direction_deg"],
            turbulence_intensity=wind["turbulence_intensity"],
            stiffness_scale=tuning["stiffness_scale"], damping_scale=tuning["damping_scale"])
        self._show_choices(preset.data["simulation"]["integrator"],
                           preset.data["simulation"]["model"])
        self._shown_settings = self._control_settings()
        self._show_title()

    @staticmethod
    def _preset_label(preset) -> str:
        """The preset picker's entry: the preset's name, and a file's name after it."""
        name = preset.data.get("name") or "untitled"
        path = getattr(preset, "path", None) or opened_scan(preset)
        if path is None or _is_shipped(path):
            return name
        return f"{name} ({Path(path).name})"

    @staticmethod
    def _preset_source(preset) -> str | None:
        """What opens `preset` again: a shipped preset's key, else its file's path (a scan's,
        for a scan opened directly)."""
        path = getattr(preset, "path", None)
        if path is None:
            return opened_scan(preset)
        return Path(path).stem if _is_shipped(path) else str(Path(path).resolve())

    def _show_title(self, *_) -> None:
        """'Young oak — tuned.yaml* (in /home/ann/trees) — treedyn': the preset's name, its
        file, and a * while settings differ from the file's."""
        preset = self._preset
        path = getattr(preset, "path", None)
        name = preset.data.get("name") or "untitled"
        if path is None and opened_scan(preset) is not None:
            where = f"{Path(opened_scan(preset)).name}[*] (a scan; Save As writes its preset)"
        elif path is None:
            where = "not saved[*]"
        elif _is_shipped(path):
            where = f"{Path(path).name}[*] (shipped)"
        else:
            where = f"{Path(path).name}[*] (in {Path(path).resolve().parent})"
        self.setWindowTitle(f"{name} — {where} — treedyn")
        self.setWindowModified(bool(self.unsaved_settings()))

    def _show_at_rest(self, preset):
        """Draw the preset's tree at rest and its wind at once, before the simulation exists
        (the tree is built with plain numpy: on a first run the kernels are still compiling);
        returns the tree (None if it cannot be built)."""
        try:
            tree = build_tree(preset.data, getattr(preset, "error", None), damping_model=False)
        except TreedynError:
            return None  # the worker reports it
        stand = stand_of(preset.data)
        self.canvas.set_stand(stand)
        self.canvas.set_tree(tree, form=foliage_form(preset.data))  # its form and colours
        self._framed_preset = preset
        wind = preset.data["wind"]
        # In a stand the compass gives u_h at the canopy top: the preset's speed where it is
        # given there (a forest species tree's), else the worker's once the field exists.
        at_top = stand is not None and float(wind["reference_height"]) == stand[0]
        self.canvas.set_wind(float(wind["speed"]), float(wind["direction_deg"]), at_top)
        return tree

    def _show_choices(self, integrator: str, model: str) -> None:
        """Integrator and model as the running simulation has them (the worker may have
        refused the preset's integrator); the preset's own until it runs."""
        settings = self.worker.latest.settings if hasattr(self, "worker") else None
        if settings is not None:
            integrator, model = settings.integrator, settings.model
        self.controls.show_choice(self.controls.integrator, integrator)
        self.controls.show_choice(self.controls.model, model)

    # -- recent files ---------------------------------------------------------------------------

    def recent_files(self) -> list[str]:
        value = self._settings.value("recent_files", [], type=list)
        return [str(v) for v in value if v]

    def _add_recent(self, path) -> None:
        path = str(Path(path).resolve())
        files = [path] + [f for f in self.recent_files() if f != path]
        self._settings.setValue("recent_files", files[:MAX_RECENT])
        self._settings.sync()
        self._rebuild_recent_menu()

    def _rebuild_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for path in files:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda checked=False, p=path: self.confirm_unsaved(
                lambda: self.open_preset(p)))
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)

    # -- reading the worker ----------------------------------------------------------------------

    def _tick(self) -> None:
        try:
            for event in self.worker.events():
                self._handle(event)
            frame = self.worker.latest
            if frame.seq != self._seq:
                self._seq = frame.seq
                self._show_frame(frame)
            elif self._animation is None:
                self._smooth(frame, time.perf_counter())
            self._repaint_plot()
            if self.modes_dock.isVisible():
                self._poll_modes()
            if self._animation is not None:
                self._animate_mode()
            self._update_status(frame)
        except Exception:  # keep the window alive; the trace goes to stderr
            traceback.print_exc()

    def _repaint_plot(self) -> None:
        """Repaint the live plot when it has new samples, at most every `PLOT_INTERVAL_S`."""
        now = time.perf_counter()
        if (self._plot_stale and self.plot.isVisible()
                and now - self._plot_painted_at >= PLOT_INTERVAL_S):
            self._plot_stale = False
            self._plot_painted_at = now
            self.plot.update()

    def _show_frame(self, frame) -> None:
        """Show what is new in `frame`."""
        if self._compiling_at is not None and frame.state == RUNNING \
                and frame.seq > self._compiling_at + 1:
            self._compiling_at = None  # kernels compiled mid-run (rk4 chosen): steps go on
            self._compiling_text = None
            self.compile_bar.hide()
            self.canvas.set_message(None)
        if frame.tree is not None and frame.generation != self._generation:
            self._generation = frame.generation
            self.grab_tool.cancel()
            if self._animation is not None:
                self._stop_mode(resume=True)
            # A new preset is framed afresh; the same one rebuilt (another model) keeps the
            # user's camera.
            self.canvas.set_stand(stand_of(frame.preset.data))
            self.canvas.set_tree(frame.tree, reframe=frame.preset is not self._framed_preset,
                                 form=foliage_form(frame.preset.data))
            self._framed_preset = frame.preset
            self._drawn_snapshot = None
            self._states = (None, None)
            self._pose = None
            self.highlight.show(None)
        if frame.snapshot is not None and frame.snapshot is not self._drawn_snapshot \
                and self._animation is None:
            self._drawn_snapshot = frame.snapshot
            now = time.perf_counter()
            older = self._states[1]
            if older is not None and not 0 < frame.snapshot.time - older[0].time:
                older = None  # a reset or another simulation: nothing to draw in between
            self._states = (older, (frame.snapshot, now))
            self._alpha_drawn = None
            if not self._smooth(frame, now):
                self._set_pose(frame.snapshot.base, frame.snapshot.tip)
                self.grab_tool.follow(frame.snapshot.base, frame.snapshot.tip)
        if frame.probe is not None and self.history.add(frame.probe, frame.generation):
            self._plot_stale = True
        if frame.settings is not None:
            top = frame.settings.canopy_top_speed  # in a stand: u_h, what the compass gives
            wind = (round(frame.settings.wind_speed, 3),
                    round(frame.settings.wind_direction_deg, 2),
                    None if top is None else round(top, 3))
            if wind != self._shown_wind:
                self._shown_wind = wind
                self.canvas.set_wind(frame.settings.wind_speed if top is None else top,
                                     frame.settings.wind_direction_deg, top is not None)
                self.plot.set_wind(frame.settings.wind_speed, frame.settings.wind_direction_deg)

    def _smooth(self, frame, now: float) -> bool:
        """Draw the pose between the last two states at wall time `now` when they came more
        than SMOOTH_GAP_S apart (slow motion); False when they did not (drawn as they come)."""
        older, newer = self._states
        if older is None or newer is None or frame.settings is None \
                or frame.state != RUNNING:
            return False
        (a, _), (b, came) = older, newer
        scale = frame.settings.time_scale
        gap = (b.time - a.time) / scale  # wall s between the two states
        if gap < SMOOTH_GAP_S:
            return False
        alpha = min((now - came) / gap, 1.0)
        if alpha != self._alpha_drawn:
            self._alpha_drawn = alpha
            base, tip = between(a.base, a.tip, b.base, b.tip, alpha)
            self._set_pose(base, tip)
            self.grab_tool.follow(base, tip)
        return True

    def _handle(self, event) -> None:
        kind = event.kind
        if kind == "compiling":
            self._compiling_at = self.worker.latest.seq
            self._compiling_text = event.message[:1].upper() + event.message[1:]
            bar = self.compile_bar
            if event.total:
                bar.setRange(0, event.total)
                bar.setValue(min(event.done, event.total))
            else:
                bar.setRange(0, 0)  # busy: the total is not known
            bar.show()
            if self._drawn_once:
                self.canvas.set_message(self._view_compiling_text(event))
            self._show_state(self.worker.latest)
        elif kind == "ready":
            self._compiling_at = self._compiling_text = None
            self.compile_bar.hide()
            self.canvas.set_message(None)
        elif kind == "loaded":
            self._preset = event.preset
            self._compiling_at = self._compiling_text = None
            self.compile_bar.hide()
            self._show_preset(event.preset)
            path = getattr(event.preset, "path", None) or opened_scan(event.preset)
            if path is not None and not _is_shipped(path):
                self._add_recent(path)
            self.canvas.set_message(None)
            self.statusBar().showMessage(f"Loaded {event.preset.name}", 4000)
        elif kind == "load_failed":
            self.canvas.set_message(None)
            self._show_preset(self._preset)
            self._warn("Cannot open preset", event.message)
        elif kind == "failed":
            self._show_failure(event.message)
        elif kind == "refused":
            self.controls.show_choice(self.controls.integrator, "implicit")
            # Not the user's change: the file keeps its integrator (refused again on reopening).
            self._shown_settings["simulation.integrator"] = "implicit"
            self._show_title()
            self.statusBar().showMessage(event.message, 15000)
        elif kind == "notice":
            self.statusBar().showMessage(event.message, 10000)

    def _view_compiling_text(self, event) -> str:
        """The compile progress as the view shows it: the words, and a bar when the total is
        known."""
        if not event.total:
            return self._compiling_text
        filled = round(COMPILE_BAR_CELLS * min(event.done, event.total) / event.total)
        return (f"{self._compiling_text}\n"
                f"{'█' * filled}{'░' * (COMPILE_BAR_CELLS - filled)}")

    def _show_failure(self, message: str) -> None:
        self.canvas.set_message("Simulation stopped — Reset (Ctrl+R) to start again")
        self.statusBar().showMessage(message, 10000)
        if self._failure_box is not None:
            self._failure_box.close()
        box = QMessageBox(QMessageBox.Icon.Warning, "Simulation stopped", message,
                          QMessageBox.StandardButton.Close, self)
        reset = box.addButton("Reset", QMessageBox.ButtonRole.AcceptRole)
        reset.clicked.connect(self.reset)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.open()
        self._failure_box = box

    def _warn(self, title: str, message: str) -> None:
        QMessageBox.warning(self, title, message)

    def _count_draw(self, event=None) -> None:
        self._draws += 1
        if not self._drawn_once:
            self._drawn_once = True
            QTimer.singleShot(0, self._message_after_first_frame)

    def _message_after_first_frame(self) -> None:
        if self.worker.latest.state == PREPARING and not self.canvas.message:
            self.canvas.set_message(self._compiling_text or PREPARING_TEXT)

    def _update_status(self, frame) -> None:
        now = time.perf_counter()
        if now - self._status_at < STATUS_INTERVAL:
            return
        elapsed = now - self._fps_since
        self._fps = self._draws / elapsed if elapsed > 0 else 0.0
        self._draws, self._fps_since, self._status_at = 0, now, now
        snapshot = frame.snapshot
        self.time_label.setText(f"t = {snapshot.time:.2f} s" if snapshot is not None
                                else "t = –")
        if frame.state == RUNNING and frame.realtime_factor > 0:
            text = f"×{frame.realtime_factor:.2f} real time"
            if frame.behind:
                text += " (can't keep up)"
            self.realtime_label.setText(text)
            self.realtime_label.setStyleSheet("color: #b03020;" if frame.behind else "")
        else:
            self.realtime_label.setText({PAUSED: "paused", FAILED: "stopped",
                                         PREPARING: "preparing"}.get(frame.state, "–"))
            self.realtime_label.setStyleSheet("")
        self.fps_label.setText(f"{self._fps:.0f} fps")
        self.limbs_label.setText(f"{frame.tree.n:,} limbs" if frame.tree is not None else "")
        self.energy_label.setText(f"E = {format_energy(snapshot.kinetic + snapshot.potential)}"
                                  if snapshot is not None else "")
        self._show_state(frame)

    def _show_state(self, frame) -> None:
        """The status line's text when no message covers it: what the app is doing."""
        if self._compiling_text is not None and frame.state == PREPARING:
            text = f"{self._compiling_text} — the sliders apply when it starts"
        elif self._compiling_text is not None and frame.state == RUNNING:
            text = self._compiling_text  # a switch waits for its kernels
        elif frame.state == FAILED:
            what = "Diverged" if "diverged" in (frame.error or "") else "Stopped"
            text = f"{what}: Reset (Ctrl+R) to start again"
        elif self._animation is not None:
            text = "Showing a mode (simulation paused)"
        else:
            text = STATE_TEXT.get(frame.state, "")
        self.statusBar().set_state(text, MOUSE_HELP_FULL)

    # -- window geometry --------------------------------------------------------------------------

    def _restore_geometry(self) -> None:
        """The size, place and splitters the user left (QSettings), else DEFAULT_SIZE."""
        geometry = self._settings.value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            width, height = DEFAULT_SIZE
            screen = QApplication.primaryScreen()
            if screen is not None:  # a smaller screen: all of it that is free
                room = screen.availableGeometry()
                width, height = min(width, room.width()), min(height, room.height())
            self.resize(max(width, MINIMUM_SIZE[0]), max(height, MINIMUM_SIZE[1]))
        for name, splitter in (("window/side_splitter", self.splitter),
                               ("window/view_splitter", self.view_area)):
            state = self._settings.value(name)
            if state is not None:
                splitter.restoreState(state)

    def save_geometry(self) -> None:
        """Remember the window's size, place and splitters for the next start."""
        self._settings.setValue("window/geometry", self.saveGeometry())
        self._settings.setValue("window/side_splitter", self.splitter.saveState())
        self._settings.setValue("window/view_splitter", self.view_area.saveState())
        self._settings.sync()

    # -- closing ----------------------------------------------------------------------------------

    def shutdown(self, timeout: float = 1.0) -> bool:
        """Stop the timer and the worker; True if the worker ended within `timeout` s."""
        self.timer.stop()
        self.keys.remove(QApplication.instance())
        return self.worker.close(timeout)

    def close_without_asking(self) -> None:
        """Close even with unsaved settings (a signal, SIGTERM or Ctrl-C, ends the app)."""
        self._close_asked = True
        self.close()

    def closeEvent(self, event) -> None:
        # An exception escaping a PyQt6 closeEvent aborts the process: never let one out.
        try:
            if not self._close_asked and self.timer.isActive() and self.unsaved_settings():
                event.ignore()

                def close() -> None:
                    self._close_asked = True
                    QTimer.singleShot(0, self.close)

                self.confirm_unsaved(close)
                return
            if self.timer.isActive():
                self.save_geometry()
            if not self.shutdown(1.0):
                print("treedyn: the simulation thread did not stop within 1 s", file=sys.stderr)
        except Exception:
            traceback.print_exc()
        event.accept()

