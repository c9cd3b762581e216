"""`treedyn run`: a headless simulation written to an NPZ file (docs/design.md §7).

Limbs in every output array are in the preset's order (explicit limbs) or the
generator's order. Nothing here imports Qt or vispy.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import TreedynError
from ..output_file import check_writable, write_atomically
from ..resources import check_memory
from ..simulation import Simulation
from .limb_mesh import foliage_form

FRAMES_PER_SECOND = 30      # default output sampling, frames per simulated second
OUTPUT_LIMIT = 1e9          # bytes; larger outputs need an explicit --every
MAX_STEPS = 10**15          # a run's steps: at ~1 µs a step, 30 years
CHUNK_SECONDS = 0.2         # wall time of one compiled call: Ctrl-C is seen between calls
_BYTES_PER_LIMB_FRAME = 8 * (3 + 3 + 9 + 3)  # base, tip, C_IF, omega


@dataclass
class RunResult:
    """What a run produced: the arrays written and the figures of its summary line."""

    arrays: dict[str, np.ndarray]
    steps: int
    wall_seconds: float
    energy_scale: float

    def summary(self) -> str:
        """One line: simulated time, steps, wall time, real-time factor, energy drift, and the
        probes' maxima when probed."""
        t = self.arrays["t"]
        energy = self.arrays["energy"]
        simulated = float(t[-1])
        factor = simulated / self.wall_seconds if self.wall_seconds > 0 else float("inf")
        drift = float(energy[-1] - energy[0])
        line = (f"simulated {simulated:.3f} s in {self.steps} steps, wall {self.wall_seconds:.2f} s "
                f"({factor:.2f}× real time), energy drift {drift:+.4g} J")
        if self.energy_scale > 0:  # m·g·H is 0 without gravity
            line += f" ({drift / self.energy_scale:+.2e} of m·g·H)"
        if "probe_wind" in self.arrays:
            peak = lambda key: float(np.linalg.norm(self.arrays[key], axis=1).max())  # noqa: E731
            line += (f"; max wind at crown top {peak('probe_wind'):.2f} m/s, max aerodynamic "
                     f"force {peak('aero_force') / 1e3:.3g} kN, max base moment "
                     f"{peak('base_moment') / 1e3:.3g} kN·m")
        return line


def default_every(dt: float) -> int:
    """Steps between saved frames for about FRAMES_PER_SECOND frames per simulated second."""
    return max(1, int(round(1.0 / (FRAMES_PER_SECOND * dt))))


def simulate(sim: Simulation, duration: float, every: int | None = None,
             progress: bool = False, probe: bool = False) -> RunResult:
    """Run `sim` for `duration` s, saving a frame every `every` steps, at t = 0 and at the end.

    With `probe`, also per frame: the wind velocity at the top of the crown (m/s), the total
    aerodynamic force (N) and the moment at the root joint (N m), inertial axes.
    """
    if not duration > 0:
        raise TreedynError(f"--duration must be > 0 s, got {duration:g}")
    ratio = duration / sim.dt
    if not ratio <= MAX_STEPS:
        raise TreedynError(f"--duration {duration:g} s is {ratio:.3g} steps of {sim.dt:g} s, "
                           f"more than {MAX_STEPS:.0e}: shorten it or raise --dt")
    steps = int(round(ratio))
    if steps < 1:
        raise TreedynError(f"--duration {duration:g} s is shorter than one step (dt = {sim.dt:g} s)")
    explicit_every = every is not None
    every = default_every(sim.dt) if every is None else every
    if every < 1:
        raise TreedynError(f"--every must be ≥ 1, got {every}")
    # A frame every `every` steps from t = 0, and one at the end when the steps do not
    # divide: the run's last state is always saved (its time is the duration asked for).
    frames = -(-steps // every) + 1
    size = frames * sim.tree.n * _BYTES_PER_LIMB_FRAME
    if size > OUTPUT_LIMIT and not explicit_every:
        raise TreedynError(
            f"the output would take {size / 1e9:.1f} GB ({frames} frames × {sim.tree.n} limbs); "
            f"give --every K to save every K-th step")
    # The arrays, plus one copy of the largest (C_IF, half of them) while they are put in
    # preset order; the simulation itself is already built.
    check_memory(1.5 * size + (frames * 3 * 8 * 3 if probe else 0),
                 f"{frames:,} frames × {sim.tree.n:,} limbs", "give --every K to save every "
                 "K-th step")

    tree = sim.tree
    n = tree.n
    out = {
        "t": np.empty(frames), "base": np.empty((frames, n, 3)), "tip": np.empty((frames, n, 3)),
        "C_IF": np.empty((frames, n, 3, 3)), "omega": np.empty((frames, n, 3)),
        "kinetic": np.empty(frames), "potential": np.empty(frames), "energy": np.empty(frames),
    }
    sim.warm_up()
    if probe:
        for key in ("probe_wind", "aero_force", "base_moment"):
            out[key] = np.empty((frames, 3))
        top = sim.crown_top()
    bar = Progress(steps) if progress else None
    stepper = _ChunkedSteps(sim)
    start = time.perf_counter()
    for frame in range(frames):
        if frame > 0:
            stepper.step(min(every, steps - (frame - 1) * every))
        kinetic, gravity, spring = sim.energies()
        out["t"][frame] = sim.time
        out["base"][frame] = sim.base
        out["tip"][frame] = sim.tip
        out["C_IF"][frame] = sim.C_IF
        out["omega"][frame] = sim.omega
        out["kinetic"][frame] = kinetic
        out["potential"][frame] = gravity + spring
        out["energy"][frame] = kinetic + gravity + spring
        if probe:
            sim.wind.velocity_at(sim.tip[top:top + 1], out["probe_wind"][frame:frame + 1])
            out["aero_force"][frame] = sim.aerodynamic_forces().sum(axis=0)
            out["base_moment"][frame] = sim.root_moment()
        if bar:
            bar.update(frame * every)
    wall = time.perf_counter() - start
    if bar:
        bar.close()
    for key in ("base", "tip", "C_IF", "omega"):
        out[key] = tree.to_preset_order(out[key], axis=1)
    out["names"] = np.array(tree.to_preset_order(np.array(tree.names, dtype=object)), dtype=str)
    out["parent"] = _preset_parents(tree)
    # The limbs' looks, for `treedyn export` (glTF): radii, leaf areas, species form, colours.
    out["radius"] = tree.to_preset_order(tree.radius)
    out["leaf_area"] = tree.to_preset_order(tree.leaf_area)
    form = foliage_form(sim.data)
    out["foliage_form"] = np.array(form.name)
    out["foliage_colour"] = np.array(form.colour)   # (3,) RGB 0..1
    out["bark_colour"] = np.array(form.bark)
    return RunResult(out, steps, wall, sim.energy_scale)


class _ChunkedSteps:
    """`sim.step(n)` in compiled calls of about `CHUNK_SECONDS` of wall time each: a long
    frame (a tiny dt, a large --every) still answers Ctrl-C within a chunk, and a runaway
    is stopped by the simulation's divergence check within one."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.chunk = 1  # steps per call; sized on the time the calls take

    def step(self, n: int) -> None:
        while n > 0:
            k = min(n, self.chunk)
            start = time.perf_counter()
            self.sim.step(k)
            n -= k
            elapsed = time.perf_counter() - start
            per_step = elapsed / k
            self.chunk = max(1, min(10 * self.chunk, int(CHUNK_SECONDS / max(per_step, 1e-9))))


def _preset_parents(tree) -> np.ndarray:
    """Parent indices in preset order (−1 for the root)."""
    parent_preset = np.where(tree.parent >= 0, tree.preset_index[np.maximum(tree.parent, 0)], -1)
    return tree.to_preset_order(parent_preset)


def npz_writer(arrays: dict[str, np.ndarray]):
    """A writer of the arrays as an NPZ file for `output_file.write_atomically`."""
    def write(name: str) -> None:
        with open(name, "wb") as stream:
            np.savez(stream, **arrays)

    return write


def write_npz(arrays: dict[str, np.ndarray], path: str | os.PathLike) -> None:
    """Write the arrays to `path` atomically (`output_file.write_atomically`)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise TreedynError(f"cannot write {path}: folder {folder} does not exist")
    write_atomically(path, npz_writer(arrays))


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int):
        self.total = total
        self.enabled = sys.stderr.isatty()
        self.last = 0.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < 0.2:
            return
        self.last = now
        width = 30
        filled = int(width * done / self.total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * done / self.total:5.1f} %")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 45 + "\r")
            sys.stderr.flush()
