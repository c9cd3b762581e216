"""A simulation rendered frame by frame to an H.264 MP4: the app's 3-D view, offscreen.

Frame k shows the simulation at simulated time k/fps (`treedyn_core.io.frame_clock`), whatever
the wall-clock time the rendering takes. Frames are drawn by the app's
own `TreeCanvas` (the app's default look, shaded tubes and the wind compass, the tree
framed as the app frames it) into an offscreen
framebuffer at exactly the requested size, and encoded by ffmpeg's libx264 through imageio
and imageio-ffmpeg (whose wheels carry the ffmpeg binary). H.264 in 4:2:0 colour needs even
widths and heights; any even size is written as it is (ffmpeg's macro_block_size=1: no
rounding up to a multiple of 16).

With a display (a desktop, or Xvfb: ``xvfb-run -a treedyn render …``) the canvas lives in a Qt
OpenGL window kept out of sight. Without one, `use_headless_egl` selects vispy's EGL backend
on Mesa's surfaceless platform: no X server, no Qt window, the same canvas and pixels.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from treedyn_core.io.frame_clock import advance_to_frames, film_frame_count

MAX_SIZE = (7680, 4320)  # px: 8K UHD, the largest size libx264's levels describe
MIN_SIDE = 16  # px
CONTEXT_TIMEOUT_MS = 10000
# libx264's constant rate factor: 18 is visually lossless for this scene
# (a 10 s 720p young_oak film is a few MB).
CRF = 18


@dataclass
class VideoJob:
    """What to render: `frames` frames at `fps` frames per second of simulated time, each
    `size` = (width, height) px."""

    frames: int
    fps: float
    size: tuple[int, int]


def check_size(width: int, height: int) -> None:
    """TreedynError (one line) unless width × height px can be encoded."""
    from treedyn_core.errors import TreedynError

    if not (MIN_SIDE <= width <= MAX_SIZE[0] and MIN_SIDE <= height <= MAX_SIZE[1]):
        raise TreedynError(f"--size must be between {MIN_SIDE}x{MIN_SIDE} and "
                           f"{MAX_SIZE[0]}x{MAX_SIZE[1]} px, got {width}x{height}")
    if width % 2 or height % 2:
        raise TreedynError(f"--size must have an even width and height (H.264 stores colour "
                           f"at half resolution), got {width}x{height}")


def use_headless_egl() -> None:
    """Draw without a display: vispy's EGL app backend, PyOpenGL through EGL, Mesa's
    surfaceless platform (set before vispy or PyOpenGL load; the caller checks that nothing
    selected another backend). TreedynError (one line) when EGL cannot start."""
    from treedyn_core.errors import TreedynError

    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    os.environ.setdefault("EGL_PLATFORM", "surfaceless")
    import vispy

    try:
        vispy.use(app="egl", gl="gl+")
        vispy.app.use_app().create()
    except Exception as error:
        raise TreedynError(f"no display (DISPLAY is not set) and no headless OpenGL through "
                           f"EGL ({str(error).splitlines()[-1]}): run it in a desktop "
                           f"session or under xvfb-run -a") from None


def open_writer(path: str, job: VideoJob):
    """An imageio writer of H.264 MP4 frames ((height, width, 3) uint8 RGB) at `path`."""
    import imageio.v2 as imageio

    return imageio.get_writer(path, format="FFMPEG", mode="I", fps=job.fps, codec="libx264",
                              pixelformat="yuv420p", macro_block_size=1,
                              output_params=["-crf", str(CRF), "-movflags", "+faststart"],
                              ffmpeg_log_level="error")


class FilmCanvas:
    """An offscreen `TreeCanvas` showing one tree, framed as the app frames it."""

    def __init__(self, sim, size: tuple[int, int]):
        from treedyn_core.io.limb_mesh import foliage_form

        from .canvas import TreeCanvas

        self.size = size
        self.canvas = TreeCanvas(size=size)
        if self.canvas.widget is not None:  # a Qt window, not headless EGL
            self._show_out_of_sight()
        from .stand_visual import stand_of

        self.canvas.set_stand(stand_of(sim.data))
        self.canvas.set_tree(sim.tree, form=foliage_form(sim.data))
        top = sim.wind.canopy_top_speed  # in a stand, the compass gives u_h at the canopy top
        self.canvas.set_wind(sim.wind_speed if top is None else top, sim.wind_direction_deg,
                             top is not None)

    def _show_out_of_sight(self) -> None:
        """Qt creates a window's OpenGL context when the window is first shown: show it,
        frameless, outside the screen, and wait for the context. (The frames are drawn
        into an offscreen framebuffer of their own size, `TreeCanvas.render_image`.)"""
        from PyQt6.QtCore import QCoreApplication, QDeadlineTimer, Qt

        widget = self.canvas.widget
        widget.setWindowFlags(Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint
                              | Qt.WindowType.WindowDoesNotAcceptFocus)
        widget.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        widget.resize(*self.size)  # the film's aspect ratio: the tree framed for it
        widget.move(-2 * self.size[0] - 100, -2 * self.size[1] - 100)
        widget.show()
        deadline = QDeadlineTimer(CONTEXT_TIMEOUT_MS)
        while not self.canvas.window.isValid() and not deadline.hasExpired():
            QCoreApplication.processEvents()
        if not self.canvas.window.isValid():
            raise RuntimeError("no OpenGL context for the film's canvas")

    def draw(self, base: np.ndarray, tip: np.ndarray) -> np.ndarray:
        """(height, width, 3) uint8 RGB of the tree at base → tip ((N, 3) m, inertial)."""
        self.canvas.set_pose(base, tip)
        image = self.canvas.render_image(*self.size)
        return np.ascontiguousarray(image[:, :, :3])

    def close(self) -> None:
        self.canvas.close()


def film_frames(sim, job: VideoJob, path: str, duration: float) -> Iterator[int]:
    """Simulate `sim` from its present state, writing each frame to the MP4 `path` (as it
    goes: the caller renames a temporary file); yields the number of frames written after
    each. Closing the generator early leaves an incomplete file."""
    with _signals_held():
        canvas = FilmCanvas(sim, job.size)
        writer = open_writer(path, job)
    try:
        for k in advance_to_frames(sim, duration, job.fps):
            writer.append_data(canvas.draw(sim.base, sim.tip))
            yield k + 1
    finally:
        writer.close()
        canvas.close()


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM held back (blocked) in this thread while the block runs; one that
    arrived meanwhile is delivered when it ends, to Python's handlers."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def render_command(preset, duration: float, out: Path, size: tuple[int, int],
                   fps: float) -> str:
    """`treedyn render`: the film of `preset` written atomically to `out` (checked by the
    caller); returns the summary line."""
    import time

    import vispy.app

    from treedyn_core.errors import TreedynError
    from treedyn_core.io.run import Progress
    from treedyn_core.output_file import write_atomically
    from treedyn_core.simulation import Simulation

    with _signals_held():   # a Ctrl-C inside Qt's or EGL's start-up would abort the process
        if vispy.app.use_app().backend_name.lower() == "egl":
            from .canvas import configure_vispy

            configure_vispy()
        else:
            from .application import app_instance

            app_instance(["treedyn"])
    sim = Simulation(preset)
    sim.warm_up()
    # d s at f frames/s: d·f frames, each shown 1/f s, as File → Export animation makes them
    job = VideoJob(film_frame_count(duration, fps), fps, size)
    bar = Progress(job.frames)
    start = time.perf_counter()

    def write(name: str) -> None:
        try:
            for done in film_frames(sim, job, name, (job.frames - 1) / fps):
                bar.update(done)
        except (OSError, RuntimeError) as error:   # ffmpeg's own words: its last line
            lines = [line for line in str(error).splitlines() if line.strip()]
            reason = next((line for line in reversed(lines) if "rror" in line),
                          lines[-1] if lines else type(error).__name__)
            raise TreedynError(f"cannot write {out}: the encoder failed: "
                               f"{reason.strip()[:200]}") from None

    write_atomically(out, write)
    bar.close()
    wall = time.perf_counter() - start
    return (f"wrote {out}: {job.frames} frames of {size[0]}x{size[1]} px at {fps:g} frames "
            f"per second ({(job.frames - 1) / fps:.3f} s simulated), "
            f"{os.path.getsize(out) / 1e6:.1f} MB, in {wall:.1f} s")
