"""Frames at simulated time: frame k of a film or an animation shows t = k/fps.

A film `duration` s long shows each frame for 1/fps and plays for `duration` s
(`film_frame_count`: 3 s at 30 frames per second is 90 frames, the last at t = 2.967 s); an
animation's keys span `duration` s with both ends included (`frame_count`: 91).

A simulation advances in steps of dt; frame k shows the state after the step nearest to
k/fps, within dt/2 of it (exactly k/fps when fps·dt divides 1, as 30 frames per second at the
default dt = 1/120 s do).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np


def frame_count(duration: float, fps: float) -> int:
    """Frames at t = 0, 1/fps, … up to `duration` s (inclusive; a duration summed from
    steps may fall short of a frame time by round-off, hence the 1e-6 frame of slack)."""
    return int(np.floor(duration * fps + 1e-6)) + 1


def film_frame_count(duration: float, fps: float) -> int:
    """Frames of a film `duration` s long at `fps` frames per second, each shown 1/fps s; at
    least one."""
    return max(1, int(round(duration * fps)))


def advance_to_frames(sim, duration: float, fps: float) -> Iterator[int]:
    """Step `sim` (from its present state) to each frame of `duration` s at `fps` in turn,
    yielding the frame's number k when `sim` shows it; stop early by not asking for more."""
    done = 0
    for k in range(frame_count(duration, fps)):
        target = int(round(k / (fps * sim.dt)))
        if target > done:
            sim.step(target - done)
            done = target
        yield k
