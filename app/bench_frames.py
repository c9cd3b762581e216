"""`treedyn bench frames`: the cost of drawing the tree, and the app's frame rate (docs/performance.md §5).

Under the current display (Xvfb + Mesa llvmpipe on the reference machine), with the app's
own `TreeCanvas` and `TreeVisual` in each render mode (shaded tubes, the default; lines):

1. **Frame time against tree size.** For each mode and size, a `Simulation` of
   ``tree_of_size(size)`` steps 1/60 s between frames (not timed); each frame is then
   timed in two parts:

   - *update*: ``TreeCanvas.set_pose(snapshot.base, snapshot.tip)`` — the visual's
     numpy gathers and the buffer uploads the app does for every new pose;
   - *draw*: the redraw that `set_pose` schedules (``canvas.update()``), run by Qt's
     event loop (``app.processEvents()`` until vispy's draw event has fired), then
     ``glFinish`` on the canvas's context. This is the app's own path: Qt exposes the
     canvas's native GL window (`gl_window`) — vispy's ``paintGL`` draws the whole scene
     (ground, grid, limbs, foliage, wind compass) and Qt swaps it onto the window; llvmpipe
     rasterises when the commands are flushed, so the time includes the rasterising.

   The process CPU time of update + draw (all threads: llvmpipe rasterises on several)
   is reported too: in the app the physics thread takes one of the reference machine's
   two cores, so the drawing's CPU time, not its wall time, bounds the frame rate.

   As a cross-check, ``canvas.render()`` (vispy's offscreen draw into a new framebuffer
   plus a read-back of the pixels, no swap) is timed too.
2. **The app's frame rate.** The real `MainWindow` (its worker thread, its QTimer,
   its canvas) runs ``tree_of_size(limbs)`` in real time (`LIVE_RUNS`: tubes at 1,000 and
   10,000 limbs, lines at 10,000 and 30,000); after a warm-up, the
   canvas's draw events are counted for a few seconds, together with how many of
   them showed a new pose and the real-time factor the worker reached.

Times are wall-clock medians after warm-up frames; on a loaded machine they are noisy
(the load average is printed with the tables).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import sys
import tempfile
import time

import numpy as np

from treedyn_core.errors import TreedynError

SIZES = (100, 1_000, 10_000, 30_000)
MODES = ("tubes", "lines")  # tree_visual.TUBES, LINES (the module imports Qt lazily)
# (mode, limbs); 30,000 limbs: the performance issue's target of real time in the app (the
# drawing may skip frames)
LIVE_RUNS = (("tubes", 1_000), ("tubes", 10_000), ("lines", 10_000), ("lines", 30_000))
LIVE_SECONDS = 5.0  # s of wall time over which the app's frames are counted
LIVE_WARM_UP = 2.0  # s the app runs before counting starts
READY_TIMEOUT = 300.0  # s: the app's first simulation may compile the kernels
CANVAS_SIZE = (900, 700)  # px: about the canvas's share of the app's window
WINDOW_SIZE = (1200, 760)  # px: the app's own default window size
STEPS_BETWEEN_FRAMES = 2  # 1/60 s of simulated time at dt = 1/120 s
WARM_UP_FRAMES = 5  # the first draws compile shaders and allocate GL buffers
TARGET_SECONDS = 1.5  # of timed frames per size: enough frames for a stable median
MIN_FRAMES = 15
MAX_FRAMES = 300
RENDER_TARGET_SECONDS = 0.5
RENDER_MIN_FRAMES = 5
SAMPLE_INTERVAL = 0.25  # s between readings of the worker's real-time factor

DRAW_METHOD = ("canvas.update() run by Qt's event loop (processEvents until vispy's draw "
               "event fired) + glFinish: paintGL draws the scene, Qt swaps it into the "
               "canvas's GL window")
RENDER_METHOD = "canvas.render(): offscreen framebuffer draw + pixel read-back"


# -- Qt and the display ---------------------------------------------------------------------------

def _check_display() -> None:
    """Refuse, with a one-line TreedynError, where Qt would abort the process instead of
    failing (no X display) or could not show vispy's OpenGL canvas (offscreen platform)."""
    platform_name = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
    if platform_name in ("offscreen", "minimal", "vnc"):
        raise TreedynError(f"bench frames needs a real display, not QT_QPA_PLATFORM="
                           f"{platform_name} (vispy's OpenGL canvas cannot draw there); run it "
                           "under X or xvfb-run -s '-screen 0 1280x800x24'")
    if not sys.platform.startswith("linux") or platform_name not in ("", "xcb"):
        return
    if platform_name == "" and os.environ.get("WAYLAND_DISPLAY"):
        return
    display = os.environ.get("DISPLAY")
    if not display:
        raise TreedynError("bench frames needs a display and DISPLAY is not set; run it under "
                           "xvfb-run -s '-screen 0 1280x800x24'")
    name = ctypes.util.find_library("X11")
    if name is None:
        return  # cannot check here: let Qt try
    try:
        xlib = ctypes.CDLL(name)
        xlib.XOpenDisplay.restype = ctypes.c_void_p
        xlib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        xlib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return
    handle = xlib.XOpenDisplay(display.encode())
    if not handle:
        raise TreedynError(f"bench frames cannot open the display DISPLAY={display}; run it "
                           "under xvfb-run -s '-screen 0 1280x800x24'")
    xlib.XCloseDisplay(handle)


def qt_application():
    """The QApplication (the running one, or a new one on the current display)."""
    try:
        from PyQt6.QtWidgets import QApplication
    except ImportError as exc:
        raise TreedynError(f"bench frames needs PyQt6: {exc}") from None
    if QApplication.instance() is None:
        _check_display()
    try:
        from .application import app_instance

        app = app_instance()
    except TreedynError:
        raise
    except Exception as exc:
        raise TreedynError(f"bench frames cannot start Qt: {type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    if app is None:
        raise TreedynError("bench frames cannot start Qt (no QApplication)")
    return app


def _spin(app, seconds: float) -> None:
    """Run the Qt event loop for `seconds` of wall time, as the app's own loop would."""
    from PyQt6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(max(0, int(round(seconds * 1000))), loop.quit)
    loop.exec()


def _spin_until(app, condition, timeout: float, what: str, step: float = 0.05) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TreedynError(f"bench frames: {what} did not happen within {timeout:.0f} s")
        _spin(app, step)


# -- the machine ----------------------------------------------------------------------------------

def _gl_strings(canvas) -> dict:
    """OpenGL renderer and version of the canvas's context (empty where unavailable)."""
    try:
        from vispy.gloo import gl

        canvas.canvas.set_current()
        return {"gl_renderer": str(gl.glGetParameter(gl.GL_RENDERER)),
                "gl_version": str(gl.glGetParameter(gl.GL_VERSION))}
    except Exception:
        return {}


def machine_description(app) -> dict:
    """bench.performance.machine() plus the GUI libraries, the display and the load."""
    import vispy
    from PyQt6.QtCore import PYQT_VERSION_STR, QT_VERSION_STR

    from treedyn_core.bench.performance import machine

    info = dict(machine())
    info.update(vispy=vispy.__version__, pyqt6=PYQT_VERSION_STR, qt=QT_VERSION_STR,
                qt_platform=app.platformName(), display=os.environ.get("DISPLAY", ""))
    screen = app.primaryScreen()
    if screen is not None:
        geometry = screen.geometry()
        info.update(screen=f"{geometry.width()}x{geometry.height()}x{screen.depth()}")
    if os.environ.get("LP_NUM_THREADS"):
        info["lp_num_threads"] = os.environ["LP_NUM_THREADS"]
    try:
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    return info


# -- 1. frame time against tree size --------------------------------------------------------------

def _show_canvas(app, tree, mode: str):
    """A shown TreeCanvas in render `mode` holding `tree`, exposed and drawn once."""
    from .canvas import TreeCanvas

    canvas = TreeCanvas(size=CANVAS_SIZE, render_mode=mode)
    draws = [0]
    canvas.canvas.events.draw.connect(lambda event: draws.__setitem__(0, draws[0] + 1))
    canvas.widget.setWindowTitle("treedyn bench frames")
    canvas.widget.resize(*CANVAS_SIZE)
    canvas.widget.show()
    canvas.set_tree(tree)
    _spin_until(app, lambda: draws[0] > 0, 10.0, "the benchmark canvas's first draw")
    return canvas, draws


def measure_frames(app, size: int, mode: str = MODES[0]) -> tuple[dict, dict]:
    """(row for `size` in render `mode`, the GL strings of the context it drew with)."""
    from treedyn_core.bench.performance import tree_of_size
    from treedyn_core.simulation import Simulation

    t0 = time.perf_counter()
    sim = Simulation.from_data(tree_of_size(size))
    sim.warm_up()
    build_seconds = time.perf_counter() - t0
    canvas, draws = _show_canvas(app, sim.tree, mode)
    try:
        gl_info = _gl_strings(canvas)
        context = canvas.canvas.context

        def frame() -> tuple[float, float, float]:
            sim.step(STEPS_BETWEEN_FRAMES)
            snapshot = sim.snapshot()
            start, cpu_start = time.perf_counter(), time.process_time()
            canvas.set_pose(snapshot.base, snapshot.tip)  # schedules the redraw
            updated = time.perf_counter()
            before = draws[0]
            while draws[0] == before:
                app.processEvents()
                if time.perf_counter() - updated > 10.0:
                    raise TreedynError(f"bench frames: the canvas did not redraw within 10 s "
                                       f"at {sim.tree.n} limbs")
            canvas.canvas.set_current()
            context.finish()
            done = time.perf_counter()
            return updated - start, done - updated, time.process_time() - cpu_start

        for _ in range(WARM_UP_FRAMES):
            frame()
        samples = []
        begin = time.perf_counter()
        while len(samples) < MAX_FRAMES and (len(samples) < MIN_FRAMES
                                             or time.perf_counter() - begin < TARGET_SECONDS):
            samples.append(frame())

        renders = []
        canvas.render()  # warm: the offscreen framebuffer's first use
        begin = time.perf_counter()
        while len(renders) < RENDER_MIN_FRAMES or time.perf_counter() - begin \
                < RENDER_TARGET_SECONDS:
            sim.step(STEPS_BETWEEN_FRAMES)
            snapshot = sim.snapshot()
            canvas.set_pose(snapshot.base, snapshot.tip)
            start = time.perf_counter()
            canvas.render()
            renders.append(time.perf_counter() - start)
            app.processEvents()
            if len(renders) >= MAX_FRAMES:
                break
        leaf_positions = getattr(canvas.tree, "_leaf_pos", None)
        triangles = 0 if leaf_positions is None or not len(getattr(
            canvas.tree, "_leaf_index", ())) else len(leaf_positions) // 3
    finally:
        canvas.close()
        app.processEvents()
        # Collect the closed canvas's visuals now. Left to a later collection, during another
        # canvas's draw, the third canvas's text shader failed to compile and the process
        # crashed (2 runs of 2 at sizes 96, 1,000, 10,000; none of 3 with this collection).
        gc.collect()
        app.processEvents()

    times = np.asarray(samples)
    update = float(np.median(times[:, 0]))
    draw = float(np.median(times[:, 1]))
    frame_seconds = float(np.median(times[:, 0] + times[:, 1]))
    cpu = float(np.median(times[:, 2]))
    render = float(np.median(renders))
    row = {"mode": mode, "target": int(size), "limbs": int(sim.tree.n), "segments": int(sim.tree.n),
           "foliage_triangles": int(triangles),
           "update_ms": 1e3 * update, "draw_ms": 1e3 * draw, "frame_ms": 1e3 * frame_seconds,
           "fps": 1.0 / frame_seconds, "cpu_ms": 1e3 * cpu, "render_ms": 1e3 * render,
           "render_fps": 1.0 / render,
           "frames": len(samples), "renders": len(renders), "build_seconds": build_seconds}
    return row, gl_info


# -- 2. the app's frame rate ----------------------------------------------------------------------

def measure_live(app, limbs: int = 10_000, seconds: float = LIVE_SECONDS,
                 warm_up: float = LIVE_WARM_UP, mode: str = MODES[0]) -> dict:
    """The MainWindow on tree_of_size(limbs) in render `mode`, simulating in real time:
    frames drawn per s."""
    from PyQt6.QtCore import QSettings

    from treedyn_core.bench.performance import tree_of_size
    from treedyn_core.model.preset import Preset

    from .main_window import MainWindow
    from .worker import FAILED, RUNNING

    preset = Preset(tree_of_size(limbs), None, {}, "<bench>")
    with tempfile.TemporaryDirectory(prefix="treedyn-bench-") as folder:
        settings = QSettings(os.path.join(folder, "treedyn.ini"), QSettings.Format.IniFormat)
        started = time.perf_counter()
        window = MainWindow(preset, settings=settings, render_mode=mode, playing=True)
        try:
            window.resize(*WINDOW_SIZE)
            window.show()
            _spin_until(app, lambda: window.worker.latest.state in (RUNNING, FAILED)
                        and getattr(window, "_generation", 1) > 0, READY_TIMEOUT,
                        "the app's simulation start")
            ready_seconds = time.perf_counter() - started
            if window.worker.latest.state == FAILED:
                raise TreedynError(f"bench frames: the app's simulation failed: "
                                   f"{window.worker.latest.error}")
            _spin(app, warm_up)

            stamps: list[float] = []
            shown: list[object] = [None]
            new_poses = [0]

            def on_draw(event=None) -> None:
                stamps.append(time.perf_counter())
                snapshot = getattr(window, "_drawn_snapshot", None)
                if snapshot is not shown[0]:
                    shown[0] = snapshot
                    new_poses[0] += 1

            window.canvas.canvas.events.draw.connect(on_draw)
            factors = []
            behind = 0
            first = window.worker.latest
            sim_start, wall_start = first.snapshot.time, time.perf_counter()
            cpu_start = time.process_time()
            new_poses[0] = 0
            shown[0] = getattr(window, "_drawn_snapshot", None)
            while time.perf_counter() - wall_start < seconds:
                _spin(app, min(SAMPLE_INTERVAL, seconds - (time.perf_counter() - wall_start)))
                latest = window.worker.latest
                if latest.state == FAILED:
                    raise TreedynError(f"bench frames: the app's simulation failed: "
                                       f"{latest.error}")
                if latest.realtime_factor > 0:
                    factors.append(latest.realtime_factor)
                    behind += bool(latest.behind)
            wall = time.perf_counter() - wall_start
            cpu = time.process_time() - cpu_start
            last = window.worker.latest
            window.canvas.canvas.events.draw.disconnect(on_draw)
            sim = window.worker.simulation
            n = int(sim.tree.n) if sim is not None else int(last.tree.n)
            integrator = sim.integrator if sim is not None else ""
            dt = float(sim.dt) if sim is not None else float("nan")
        finally:
            window.shutdown()
            window.close()
            window.deleteLater()
            _spin(app, 0.05)

    intervals = np.diff(stamps)
    return {"mode": mode, "limbs": n, "target": int(limbs), "integrator": integrator, "dt": dt,
            "seconds": wall, "warm_up_seconds": float(warm_up),
            "ready_seconds": ready_seconds, "frames": len(stamps),
            "fps": len(stamps) / wall,
            "fps_median_interval": float(1.0 / np.median(intervals)) if len(intervals)
            else 0.0,
            "new_poses_per_second": new_poses[0] / wall,
            "real_time_factor": (last.snapshot.time - sim_start) / wall,
            "worker_real_time_factor_median": float(np.median(factors)) if factors else 0.0,
            "behind_fraction": behind / len(factors) if factors else 0.0,
            "process_cpu_cores": cpu / wall}


# -- the command ----------------------------------------------------------------------------------

def _header(info: dict) -> str:
    lines = [
        f"treedyn {info.get('treedyn', '?')} bench frames on {info.get('cpu', '?')} "
        f"({info.get('cpus', '?')} CPUs), {info.get('platform', '')}",
        f"Python {info.get('python')}, numpy {info.get('numpy')}, numba {info.get('numba')}, "
        f"vispy {info.get('vispy')}, PyQt6 {info.get('pyqt6')} (Qt {info.get('qt')})",
        f"OpenGL: {info.get('gl_renderer', 'unknown renderer')}"
        + (f", {info['gl_version']}" if info.get("gl_version") else "")
        + f"; Qt platform {info.get('qt_platform')}, display {info.get('display') or '-'}"
        + (f" {info['screen']}" if info.get("screen") else ""),
    ]
    if "load_average" in info:
        lines.append("load average (1, 5, 15 min) at start: "
                     + ", ".join(f"{x:.2f}" for x in info["load_average"]))
    return "\n".join(lines)


def _frames_table(rows: list[dict]) -> str:
    lines = [
        f"Frame time, canvas {CANVAS_SIZE[0]}×{CANVAS_SIZE[1]} px. Between frames the "
        f"simulation steps {STEPS_BETWEEN_FRAMES} × 1/120 s (not timed).",
        "  update = TreeCanvas.set_pose(snapshot); draw = " + DRAW_METHOD + ";",
        "  cpu = process CPU time of update + draw, all threads (llvmpipe rasterises on "
        "several);",
        "  render() = " + RENDER_METHOD + " (a cross-check).",
        f"  Wall-clock medians over the frames counted, after {WARM_UP_FRAMES} warm-up frames.",
        "",
        f"{'mode':>6} {'limbs':>8} {'segments':>9} {'foliage':>8} {'update':>8} {'draw':>8} {'frame':>8} "
        f"{'fps':>7} {'cpu':>7} {'render()':>9} {'frames':>7}",
        f"{'':>6} {'':>8} {'':>9} {'tris':>8} {'ms':>8} {'ms':>8} {'ms':>8} {'':>7} {'ms':>7} {'ms':>9} "
        f"{'':>7}",
    ]
    for row in rows:
        lines.append(f"{row['mode']:>6} {row['limbs']:>8,} {row['segments']:>9,} {row['foliage_triangles']:>8,} "
                     f"{row['update_ms']:>8.2f} {row['draw_ms']:>8.2f} {row['frame_ms']:>8.2f} "
                     f"{row['fps']:>7.1f} {row['cpu_ms']:>7.2f} {row['render_ms']:>9.2f} "
                     f"{row['frames']:>7}")
    return "\n".join(lines)


def _live_text(live: dict) -> str:
    return "\n".join([
        f"The app (MainWindow {WINDOW_SIZE[0]}×{WINDOW_SIZE[1]}, {live['mode']} mode) simulating "
        f"{live['limbs']:,} limbs ({live['integrator']}, dt = {live['dt']:.4g} s) in real time, "
        f"{live['seconds']:.1f} s counted after {live['warm_up_seconds']:.1f} s of warm-up:",
        f"  frames drawn per second   {live['fps']:7.1f}   (median interval → "
        f"{live['fps_median_interval']:.1f} fps; {live['frames']} frames)",
        f"  new poses shown per second {live['new_poses_per_second']:6.1f}",
        f"  real-time factor          {live['real_time_factor']:7.2f}   (worker's own, median: "
        f"{live['worker_real_time_factor_median']:.2f}; \"can't keep up\" "
        f"{100 * live['behind_fraction']:.0f} % of readings)",
        f"  process CPU               {live['process_cpu_cores']:7.2f} cores "
        f"(physics thread + GUI thread + llvmpipe's rasteriser threads)",
        f"  window created to simulation running {live['ready_seconds']:.1f} s (tree built, "
        f"kernels loaded)",
    ])


def run(sizes=SIZES, as_json: bool = False, out=None, *, live_seconds: float = LIVE_SECONDS,
        live_runs=LIVE_RUNS, live_warm_up: float = LIVE_WARM_UP, modes=MODES) -> dict:
    """Measure and print the frame tables (`as_json`: JSON instead) for every render mode in
    `modes` and size in `sizes`, then the app live for each (mode, limbs) in `live_runs`;
    returns the results.

    Raises TreedynError (one line) when Qt cannot start on the current display.
    """
    out = sys.stdout if out is None else out
    sizes = tuple(int(s) for s in sizes)
    if any(s < 1 for s in sizes):
        raise TreedynError(f"bench frames: tree sizes must be ≥ 1 limb, got {sizes}")
    app = qt_application()
    info = machine_description(app)
    rows = []
    printed_header = False
    for mode, size in [(mode, size) for mode in modes for size in sizes]:
        row, gl_info = measure_frames(app, size, mode)
        if gl_info and "gl_renderer" not in info:
            info.update(gl_info)
        rows.append(row)
        if not as_json:
            if not printed_header:
                print(_header(info), file=out)
                print("", file=out)
                table = _frames_table([row]).splitlines()
                print("\n".join(table), file=out, flush=True)
                printed_header = True
            else:
                print(_frames_table([row]).splitlines()[-1], file=out, flush=True)
    if not as_json and not printed_header:
        print(_header(info), file=out)
    live = [measure_live(app, limbs, live_seconds, live_warm_up, mode)
            for mode, limbs in live_runs]
    result = {"machine": info, "canvas_size": list(CANVAS_SIZE), "window_size": list(WINDOW_SIZE),
              "draw_method": DRAW_METHOD, "render_method": RENDER_METHOD,
              "steps_between_frames": STEPS_BETWEEN_FRAMES, "frames": rows, "app": live}
    try:
        result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    if as_json:
        print(json.dumps(result, indent=2, allow_nan=False, default=_json_value), file=out)
    else:
        for one in live:
            print("", file=out)
            print(_live_text(one), file=out)
        if "load_average_end" in result:
            print("load average (1, 5, 15 min) at the end: "
                  + ", ".join(f"{x:.2f}" for x in result["load_average_end"]), file=out)
        out.flush()
    return result


def _json_value(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


if __name__ == "__main__":  # python -m treedyn_app.bench_frames [--json] [N,N,...]
    arguments = sys.argv[1:]
    wanted = next((a for a in arguments if not a.startswith("-")), None)
    try:
        run(tuple(int(s) for s in wanted.split(",")) if wanted else SIZES,
            as_json="--json" in arguments)
    except TreedynError as error:
        print(f"treedyn: error: {error}", file=sys.stderr)
        sys.exit(2)
