"""The app's commands of the ``treedyn`` command line: the window, films and the frame
benchmark. The core's command line finds this module through the entry point
``treedyn.app: commands`` (pyproject.toml), so that the core never imports the app
(docs/design.md §9); nothing here imports Qt until a command runs.
"""

from __future__ import annotations

from pathlib import Path


def open_window(preset: str | None) -> int:
    """``treedyn [PRESET]``: the app on `preset`; the exit status (`main.run`)."""
    from .main import run

    return run(preset)


def check_film_size(width: int, height: int) -> None:
    """``treedyn render --size``: refuse a frame size the renderer cannot draw (before any
    work)."""
    from .render_video import check_size

    check_size(width, height)


def render_film(preset, duration: float, out: Path, size: tuple[int, int], fps: float) -> str:
    """``treedyn render``: the film of `preset` over `duration` s at `fps` frames per second,
    `size` pixels, into the MP4 `out`; the line to print. Off-screen through EGL where there
    is no display."""
    from .main import display_problem
    from .render_video import render_command, use_headless_egl

    if display_problem():
        use_headless_egl()
    return render_command(preset, duration, out, size, fps)


def bench_frames(sizes: tuple[int, ...] | None, as_json: bool) -> None:
    """``treedyn bench frames``: the app's own canvas drawing trees of `sizes` limbs (default
    `bench_frames.SIZES`) on the current display."""
    from .bench_frames import SIZES, run

    run(sizes or SIZES, as_json=as_json)
