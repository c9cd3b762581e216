"""`treedyn render`: the app's view as an H.264 MP4 film, decoded back with imageio."""

from __future__ import annotations

import imageio.v2 as imageio
import numpy as np
import pytest

from treedyn_core.cli import main

SIZE = (640, 360)  # not a multiple of 16 in height: written as it is


def _frames(path):
    reader = imageio.get_reader(str(path), format="FFMPEG")
    try:
        return np.array([frame for frame in reader]), reader.get_meta_data()
    finally:
        reader.close()


def _tree_pixels(frame):
    """Bark brown or leaf green: red or green well above blue (the sky, grid and ground are
    grey-blue or grey-green with the channels within ~30 of each other)."""
    r, g, b = (frame[:, :, k].astype(int) for k in range(3))
    brown = (r > b + 50) & (r > g)
    green = (g > b + 50) & (g > r)
    return brown | green


def _render(tmp_path, name, *extra):
    out = tmp_path / f"{name}.mp4"
    status = main(["render", "sapling", "--duration", "1.5", "--out", str(out), "--size",
                   f"{SIZE[0]}x{SIZE[1]}", *extra])
    assert status == 0
    return out


@pytest.mark.slow
def test_film_has_every_frame_at_its_size_and_the_tree_moves_in_wind(qtbot, tmp_path, capsys):
    windy = _render(tmp_path, "windy", "--set", "wind.speed=12")
    # 1.5 s at 30/s: 45 frames shown 1/30 s each (t = 0, 1/30, …, 1.467 s), as the app's export
    assert "45 frames of 640x360 px" in capsys.readouterr().out
    frames, meta = _frames(windy)
    assert frames.shape == (45, SIZE[1], SIZE[0], 3)
    assert meta["fps"] == 30 and meta["codec"] == "h264"
    tree = np.array([_tree_pixels(f).sum() for f in frames])
    # the tree in every frame: 500–1,700 of its pixels, 496 in the frame where the wind's
    # samples of the slow modes (docs/performance.md §3) leaned it furthest; none is empty
    assert (tree > 400).all(), tree
    windy_change = np.abs(np.diff(frames.astype(int), axis=0)).mean(axis=(1, 2, 3))
    # In still air the prestressed sapling stands still: the frames differ by the encoder's
    # noise only. In a 12 m/s wind the tree sways: far more.
    still = _render(tmp_path, "still", "--set", "wind.speed=0")
    still_frames, _ = _frames(still)
    still_change = np.abs(np.diff(still_frames.astype(int), axis=0)).mean(axis=(1, 2, 3))
    assert windy_change[5:].mean() > 10 * max(still_change[5:].mean(), 0.01), (
        windy_change.mean(), still_change.mean())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["still.mp4", "windy.mp4"]


@pytest.mark.parametrize("args, fragment", [
    (["--size", "641x360"], "even"),
    (["--size", "7682x4320"], "7680x4320"),
    (["--size", "1280*720"], "WxH"),
    (["--fps", "0"], "--fps"),
    (["--out", "{tmp}/film.avi"], ".mp4"),
    (["--out", "{tmp}/missing/film.mp4"], "does not exist"),
])
def test_bad_input_is_one_line_exit_2_and_no_file(args, fragment, tmp_path, capsys):
    argv = ["render", "sapling", "--duration", "1", "--out", str(tmp_path / "film.mp4")]
    argv += [a.format(tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedyn: error:") and fragment in err[0], err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_renders_headless_through_egl_as_under_xvfb(qtbot, tmp_path):
    """Without a display (no DISPLAY) `treedyn render` draws through vispy's EGL backend; its
    frames are the same picture as the ones drawn in a Qt window on Xvfb."""
    import os
    import subprocess
    import sys

    egl = tmp_path / "egl.mp4"
    env = {key: value for key, value in os.environ.items()
           if key not in ("DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY")}
    done = subprocess.run([sys.executable, "-m", "treedyn_core", "render", "sapling",
                           "--duration", "0.5", "--out", str(egl), "--size", "320x240",
                           "--set", "wind.speed=0"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    xvfb = tmp_path / "xvfb.mp4"
    assert main(["render", "sapling", "--duration", "0.5", "--out", str(xvfb), "--size",
                 "320x240", "--set", "wind.speed=0"]) == 0
    headless, _ = _frames(egl)
    windowed, _ = _frames(xvfb)
    assert headless.shape == windowed.shape == (15, 240, 320, 3)   # 0.5 s at 30/s
    assert (np.array([_tree_pixels(f).sum() for f in headless]) > 200).all()
    # Same renderer (Mesa llvmpipe), same scene: equal up to the encoder's rounding.
    assert np.abs(headless.astype(int) - windowed).mean() < 1.0
