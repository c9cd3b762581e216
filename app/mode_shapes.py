"""The mode viewer's model (no Qt): computing modes off the GUI thread, and posing a mode.

`ModesJob` computes `treedyn_core.analysis.modes.modes` of the running tree in a thread
of its own (giant takes tens of seconds); the worker hands it a frozen copy of
the simulation's static model (`ModesJob.start`, run through ``worker.call``),
so the computation never reads a simulation that is being stepped.

`ModeAnimation` poses the tree in one mode for drawing: joint rotations
``R_i exp(a sin(2π f t) ε_i)`` from the static equilibrium (ε the mode's shape),
limb positions by `forward_kinematics`. That is drawing, not physics: no
dynamics is integrated.
"""

from __future__ import annotations

import copy
import math
import threading
import time
import traceback

import numpy as np

from treedyn_core.model.tree import pose_by_levels

MODE_COUNT = 10
# Default amplitude: the largest tip displacement of the mode, as a fraction of the tree's
# height.
DEFAULT_AMPLITUDE = 0.08


# The stamp of a complete warm-up of the modes' own kernels (`warm_modes_kernels`), in the
# kernels' cache folder beside the core's stamps.
MODES_STAMP = "warm-modes"
# The child process that warms them (the background compile, `SimulationWorker`): niced as the
# core's warm-up children are.
WARM_MODES_CODE = ("import os\n"
                   "if hasattr(os, 'nice'): os.nice(5)\n"
                   "from treedyn_app.mode_shapes import warm_modes_kernels\n"
                   "warm_modes_kernels()\n")


def _modes_fingerprint() -> str:
    import sys

    import numba

    from treedyn_core.numerics import kernel

    return (f"modes {kernel.sources_digest()} numba {numba.__version__} "
            f"python {sys.version_info[0]}.{sys.version_info[1]}")


def modes_kernels_warm() -> bool:
    """The kernels' cache holds the modes' own kernels, for these sources (a first Modes…
    compiles two, tree_lowrank's and modes', ~2.5 s of the GIL held in the GUI's process)."""
    from treedyn_core.numerics import kernel

    if not kernel.CACHING:
        return True  # nothing to warm: without a cache every process compiles its own
    try:
        return (kernel.package_cache_folder() / MODES_STAMP).read_text() == _modes_fingerprint()
    except OSError:
        return False


def warm_modes_kernels() -> None:
    """In a child process (`WARM_MODES_CODE`): compile the modes' kernels into the cache by
    computing two modes of two_limbs (a tree's size changes no type), then stamp it."""
    from treedyn_core.analysis.modes import modes
    from treedyn_core.model.preset import load_preset
    from treedyn_core.numerics import kernel
    from treedyn_core.output_file import write_text_atomically
    from treedyn_core.simulation import Simulation

    modes(Simulation.from_data(load_preset("two_limbs").data), 2)
    stamp = kernel.package_cache_folder() / MODES_STAMP
    stamp.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(stamp, _modes_fingerprint())


class ModesJob:
    """The lowest `count` modes of one simulation, computed in a background thread.

    `key` identifies what was asked (the worker's generation and the scales in force);
    `done` is set when `result` (a `ModeResult`) or `error` (a one-line message) is there.
    """

    def __init__(self, key, count: int = MODE_COUNT):
        self.key = key
        self.count = int(count)
        self.result = None
        self.error: str | None = None
        self.seconds = 0.0
        self.requested = time.perf_counter()
        self.done = threading.Event()

    def start(self, sim) -> None:
        """Called in the worker, between steps: copy what `modes` reads and start the thread."""
        frozen = copy.copy(sim)  # shares the tree (never modified); takes the scales in force
        frozen.spring_C_rel = np.array(sim.spring_C_rel, copy=True)
        threading.Thread(target=self._run, args=(frozen,), name="treedyn-modes",
                         daemon=True).start()

    def _run(self, sim) -> None:
        started = time.perf_counter()
        try:
            from treedyn_core.analysis.modes import modes
            from treedyn_core.errors import TreedynError
            try:
                self.result = modes(sim, self.count)
            except TreedynError as exc:
                self.error = str(exc)
        except Exception as exc:
            traceback.print_exc()
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.seconds = time.perf_counter() - started
            self.done.set()


def rotation_matrices(thetas: np.ndarray) -> np.ndarray:
    """exp(θ^×) (M, 3, 3) of rotation vectors θ (M, 3) rad (Rodrigues)."""
    thetas = np.asarray(thetas, dtype=float)
    angle = np.linalg.norm(thetas, axis=-1)
    small = angle < 1e-8
    safe = np.where(small, 1.0, angle)
    a = np.where(small, 1.0 - angle ** 2 / 6.0, np.sin(safe) / safe)
    b = np.where(small, 0.5 - angle ** 2 / 24.0, (1.0 - np.cos(safe)) / safe ** 2)
    x, y, z = thetas[..., 0], thetas[..., 1], thetas[..., 2]
    K = np.zeros(thetas.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -z, y, -x
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = z, -y, x
    eye = np.broadcast_to(np.eye(3), K.shape)
    return eye + a[..., None, None] * K + b[..., None, None] * (K @ K)


def forward_kinematics(tree, R_rel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(base, tip) (N, 3) m, inertial, of the tree posed with joint rotations R_rel (N, 3, 3),
    child → parent axes, breadth-first order; one vectorised sweep per depth level."""
    C_IF, base = pose_by_levels(tree.parent, tree.level_start, R_rel, tree.base_offset)
    tip = base + tree.length[:, None] * np.einsum("nij,nj->ni", C_IF, tree.u)
    return base, tip


class ModeAnimation:
    """Mode `index` of `result` (a `ModeResult`, preset order) on `tree` (breadth-first),
    oscillating at its frequency × `speed` from wall-clock time `start` s."""

    def __init__(self, tree, result, index: int, amplitude: float = DEFAULT_AMPLITUDE,
                 speed: float = 1.0, start: float | None = None):
        self.tree = tree
        self.result = result
        self.index = int(index)
        self.speed = float(speed)
        self.start = time.perf_counter() if start is None else float(start)
        self._equilibrium = tree.from_preset_order(result.equilibrium)
        self._shape = tree.from_preset_order(result.shapes[self.index])
        tips = result.tip_displacements[self.index]
        self._largest_tip = float(np.max(np.linalg.norm(tips, axis=-1)))
        self.set_amplitude(amplitude)

    @property
    def frequency(self) -> float:
        """Hz, the mode's (damped) natural frequency."""
        return float(self.result.frequencies_hz[self.index])

    def set_amplitude(self, fraction: float) -> None:
        """Largest tip displacement of the mode (linearised) as a fraction of the tree's
        height."""
        self.amplitude_fraction = float(fraction)
        self.amplitude = (fraction * self.tree.height / self._largest_tip
                          if self._largest_tip > 0 else 0.0)

    def set_speed(self, speed: float, now: float | None = None) -> None:
        """Play at `speed` × real time, continuing from the phase shown at `now`."""
        now = time.perf_counter() if now is None else now
        phase_time = (now - self.start) * self.speed
        self.speed = float(speed)
        self.start = now - (phase_time / self.speed if self.speed > 0 else 0.0)

    def phase(self, now: float | None = None) -> float:
        """rad: 2π f (now − start) × speed."""
        now = time.perf_counter() if now is None else now
        return 2.0 * math.pi * self.frequency * self.speed * (now - self.start)

    def pose(self, now: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(base, tip) (N, 3) m, inertial, breadth-first, at wall-clock time `now` s."""
        a = self.amplitude * math.sin(self.phase(now))
        R_rel = self._equilibrium @ rotation_matrices(a * self._shape)
        return forward_kinematics(self.tree, R_rel)
