"""The simulation worker: a thread that owns the `Simulation` and publishes frames.

The GUI never steps physics and the worker never touches a widget (vispy's
real-time examples, docs/design.md §9). They meet in three places, all thread-safe:

- commands: the GUI calls the worker's verbs (`set_wind_speed`, `play`,
  `reset`, `load`, ...); each puts a command in a queue that the worker drains
  between steps, so a change reaches the running simulation within one frame.
- `latest`: an immutable `Frame` (a copy of positions and energies plus the
  settings in force), replaced by a single attribute assignment; the GUI reads
  it at its own rate.
- `events()`: one-off news for the user (compiling, ready, loaded, diverged, refused).

Before it builds a simulation, the worker has its kernels compiled in a child process
(`treedyn_core.warm_up`, at once when they are cached) and announces the progress; commands
queued meanwhile (the sliders) apply when the simulation starts, and closing ends the child.

External loads (grabbing a branch) come as a provider, `set_external_load`,
whose ``apply(simulation)`` the worker calls before every single step while it
is set, so a spring's force follows the motion step by step.

Each frame carries a `Probe`: the numbers the live plot draws (crown-top
displacement in the wind's axes, bending moment at the root), computed here;
the GUI only draws them.

Pacing: the simulation advances ``wall-clock time × time_scale``. A batch of
steps never takes more than about one frame of wall time, so stop and other
commands are honoured promptly; when the simulation cannot keep up, the
backlog is dropped (the view stays live) and the real-time factor shows it.
"""

from __future__ import annotations

import math
import os
import queue
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from treedyn_core.dynamics.stability import fastest_rate, rk4_substeps
from treedyn_core.errors import SimulationDiverged, TreedynError
# The integrators stepped live (the compiled ones); dop853, scipy's reference, is for treedyn run.
from treedyn_core.integrators.registry import LIVE_INTEGRATORS

FRAME_TIME = 1.0 / 60.0  # s of wall time: the longest batch of steps, and the GUI's rate
RATE_WINDOW = 1.0  # s of wall time over which the real-time factor is measured
MIN_REALTIME = 0.05  # rk4 is refused when its sub-steps would run slower than this
RK4_COST_RATIO = 3.5  # an rk4 step costs about this many implicit steps (measured: 3.3–3.5)
BEHIND = 0.9  # "can't keep up" below this fraction of the requested time scale


def kernels_of(preset, model: str | None = None) -> tuple[str, str]:
    """(model, integrator) of the kernels the app compiles before simulating `preset` (with
    `model` instead of the preset's, if given): its integrator if the app runs it live, else
    the θ-method."""
    sim = preset.data["simulation"]
    integrator = sim["integrator"] if sim["integrator"] in LIVE_INTEGRATORS else "implicit"
    return model or sim["model"], integrator


def start_compiling(preset) -> None:
    """Start compiling `preset`'s kernels in child processes at once (`warm_up.start`), before
    the window and the worker exist; the worker adopts them."""
    from treedyn_core import warm_up

    warm_up.start(*kernels_of(preset))

PREPARING = "preparing"
COMPILING_TEXT = "compiling physics kernels, first run only"
# The kernels a session may want after its first start (another integrator, the seed model):
# compiled in the background once the simulation runs, so that switching later costs no freeze.
BACKGROUND_KERNELS = (("articulated", "galpha"), ("seed", "implicit"), ("articulated", "rk4"))
BACKGROUND_DELAY_S = 2.0  # after the simulation starts: its first seconds keep both cores
# TREEDYN_BACKGROUND_COMPILE=0 turns the background compile off (the tests do: each of their
# short-lived windows would start children on a cold cache only to end them).
BACKGROUND_SWITCH = "TREEDYN_BACKGROUND_COMPILE"
# The articulated θ-method's kernels on an empty cache (63 counted here, numba 0.60): the "of
# about N" of a very first run, before any warm-up has recorded its count.
FIRST_RUN_KERNELS = {("articulated", "implicit"): 63}
_kernel_locks: dict[tuple[str, str], threading.Lock] = {}
_kernel_locks_guard = threading.Lock()


def kernel_lock(model: str, integrator: str) -> threading.Lock:
    """The lock held while a (model, integrator)'s kernels compile in this process's children:
    the background compile and a switch that needs them never compile them twice at once."""
    with _kernel_locks_guard:
        return _kernel_locks.setdefault((model, integrator), threading.Lock())


def compiling_words(model: str, integrator: str, first_run: bool, done: int,
                    expected: int | None) -> tuple[str, int | None]:
    """The compile progress in words, and the total it counts toward (None: not known):
    "compiling physics kernels, first run only: 12 of 63", "compiling the galpha
    integrator's kernels (once; the simulation waits): 2 of 3"."""
    guess = expected is None
    if guess and first_run:
        expected = FIRST_RUN_KERNELS.get((model, integrator))
    what = f"{integrator} integrator" if model == "articulated" else f"{model} model"
    head = (COMPILING_TEXT if first_run
            else f"compiling the {what}'s kernels (once; the simulation waits)")
    if expected and done <= expected:
        return f"{head}: {done} of {'about ' if guess else ''}{expected}", expected
    return (f"{head}: {done} done" if done else f"{head}…"), None


RUNNING = "running"
PAUSED = "paused"
FAILED = "failed"


@dataclass(frozen=True)
class Settings:
    """What the running simulation has in force (read from it, not from the widgets).

    Scales are unit-free; wind speed m/s at the reference height, direction deg
    (0 = +x, 90 = +y), turbulence intensity σ_u/U (0..1) — their current,
    possibly ramping, values; dt s per step (the preset's), substeps per step
    (rk4), time_scale simulated s per wall s requested. In a forest stand (``wind.canopy``),
    canopy_height m and canopy_top_speed, the mean speed u_h m/s at the canopy top now (the
    turbulence intensity is then σ_u/U_h there); both None on open ground.
    """

    stiffness_scale: float
    damping_scale: float
    wind_speed: float
    wind_direction_deg: float
    turbulence_intensity: float
    integrator: str
    model: str
    dt: float
    substeps: int
    time_scale: float
    canopy_height: float | None = None
    canopy_top_speed: float | None = None


@dataclass(frozen=True)
class Probe:
    """What the live plot shows, at simulated `time` s.

    crown_displacement : (3,) m, inertial: the crown-top limb's tip (`Simulation.crown_top`)
        from its rest position;  downwind, crosswind : m, that displacement along the
        direction the wind blows toward and 90° to its left (horizontal), with the wind
        direction in force at `time`;  base_moment : (3,) N m, inertial, the moment of the
        root joint on the tree (`Simulation.root_moment`).
    """

    time: float
    crown_displacement: np.ndarray
    downwind: float
    crosswind: float
    base_moment: np.ndarray

    @property
    def base_moment_magnitude(self) -> float:
        """|base_moment|, N m."""
        return math.hypot(*self.base_moment)  # no overflow warning on a diverging tree


def measure_probe(sim, crown: int) -> Probe:
    """The `Probe` of `sim` now; `crown` is its crown-top limb."""
    displacement = sim.tip[crown] - sim.tree.rest_tip[crown]
    heading = math.radians(sim.wind_direction_deg)
    downwind = displacement[0] * math.cos(heading) + displacement[1] * math.sin(heading)
    crosswind = -displacement[0] * math.sin(heading) + displacement[1] * math.cos(heading)
    moment = np.array(sim.root_moment(), dtype=float)
    displacement.setflags(write=False)
    moment.setflags(write=False)
    return Probe(float(sim.time), displacement, float(downwind), float(crosswind), moment)


@dataclass(frozen=True)
class Frame:
    """One published state of the worker; never modified after publication.

    seq counts frames; generation counts simulations (a load or a model change
    makes a new one, with a new tree). snapshot is the last good one (it stays
    when the simulation fails), probe its `Probe`. realtime_factor: simulated s
    per wall s over the last second.
    """

    seq: int
    generation: int
    state: str
    preset: Any = None
    tree: Any = None
    snapshot: Any = None
    settings: Settings | None = None
    error: str | None = None
    realtime_factor: float = 0.0
    behind: bool = False
    probe: Probe | None = None


# When the default start in the mean wind's balance finds none (Simulation.start_notice).
START_FROM_REST = ("No balance found for the tree in this wind's mean force (too strong): it "
                   "starts from rest, so the first seconds show a start-up swing")


@dataclass(frozen=True)
class Event:
    """News for the user. kind: compiling (message: its progress) | ready | loaded | load_failed
    | failed | refused (rk4 refused, implicit kept) | notice."""

    kind: str
    message: str = ""
    preset: Any = None
    done: int = 0  # compiling: kernels compiled so far, of `total` (None: not known)
    total: int | None = None


class SimulationWorker(threading.Thread):
    """Owns and steps a `Simulation` of `preset` (a `Preset`, or anything with ``.data``).

    Start it with `start()`; stop it with `close()`. All public methods may be
    called from any thread.
    """

    def __init__(self, preset, *, playing: bool = True, time_scale: float = 1.0,
                 simulation_factory: Callable[..., Any] | None = None):
        super().__init__(name="treedyn-simulation", daemon=True)
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._news: queue.SimpleQueue = queue.SimpleQueue()
        self._halt = threading.Event()
        self._factory = simulation_factory
        self._initial_preset = preset
        self._sim = None
        self._preset = None
        self._generation = 0
        self._seq = 0
        self._published_at = 0.0  # perf_counter() of the last publication
        self._playing = playing
        self._time_scale = float(time_scale)
        self._base_dt = 0.0
        self._substeps = 1
        self._failure: str | None = None
        self._wind_wanted: tuple[float, float, float] | None = None
        self._step_cost = 0.0  # s of wall time per step, smoothed
        self._rk4_measured = False
        self._implicit_cost = 0.0
        self._owed = 0.0  # simulated s owed to the wall clock
        self._last_wall = time.perf_counter()
        self._samples: deque[tuple[float, float]] = deque()
        self._snapshot = None
        self._probe = None
        self._crown = 0
        self._external_load = None
        self._background: threading.Thread | None = None
        self._background_progress: tuple | None = None  # ((model, integrator), done, expected)
        # Wall-clock s between successive publications while running (the last ones): how long
        # the view went without a new state (a switch that compiled would show as a gap).
        self.gaps: deque[float] = deque(maxlen=2000)
        self.latest = Frame(seq=0, generation=0, state=PREPARING)

    # -- read by the GUI (any thread) ------------------------------------------------------------

    @property
    def simulation(self):
        """The Simulation being stepped (None while preparing). Read it, don't drive it: its
        state changes under the worker's feet."""
        return self._sim

    def events(self) -> list[Event]:
        """Every event since the last call, oldest first."""
        out = []
        while True:
            try:
                out.append(self._news.get_nowait())
            except queue.Empty:
                return out

    # -- verbs (any thread): each queues a command applied between steps -------------------------

    def post(self, name: str, *args) -> None:
        """Queue command `name` (the worker's ``_do_<name>``) with `args`."""
        if not hasattr(self, f"_do_{name}"):
            raise ValueError(f"unknown worker command {name!r}")
        self._commands.put((name, args))

    def set_stiffness_scale(self, value: float) -> None:
        self.post("stiffness_scale", float(value))

    def set_damping_scale(self, value: float) -> None:
        self.post("damping_scale", float(value))

    def set_wind_speed(self, speed: float) -> None:
        self.post("wind_speed", float(speed))

    def set_wind_direction(self, degrees: float) -> None:
        self.post("wind_direction", float(degrees))

    def set_turbulence_intensity(self, fraction: float) -> None:
        self.post("turbulence_intensity", float(fraction))

    def set_integrator(self, name: str) -> None:
        self.post("integrator", str(name))

    def set_model(self, name: str) -> None:
        self.post("model", str(name))

    def set_time_scale(self, value: float) -> None:
        self.post("time_scale", float(value))

    def set_dt(self, dt: float) -> None:
        """Change the step (s); for tests and experiments, the app has no control for it."""
        self.post("dt", float(dt))

    def play(self) -> None:
        self.post("play")

    def pause(self) -> None:
        self.post("pause")

    def step(self) -> None:
        """Pause, then advance one step of the preset's dt."""
        self.post("single_step")

    def reset(self) -> None:
        self.post("reset")

    def load(self, preset) -> None:
        """Replace the simulation by one of `preset` (validated); on failure keep the old one."""
        self.post("load", preset)

    def set_external_load(self, provider) -> None:
        """Apply ``provider.apply(simulation)`` before every step from now on (it sets the
        simulation's external loads); None calls the previous one's ``release(simulation)``
        and stops. A new simulation (a load) drops the provider."""
        self.post("external_load", provider)

    def call(self, function: Callable[[Any], None]) -> None:
        """Run ``function(simulation)`` in the worker between steps (extensions: external loads)."""
        self.post("call", function)

    def close(self, timeout: float = 1.0) -> bool:
        """Stop stepping and join; True when the thread ended within `timeout` s."""
        self._halt.set()
        self._commands.put(None)
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
        return not self.is_alive()

    # -- the thread ------------------------------------------------------------------------------

    def run(self) -> None:
        listener = self._compile_listener
        notice = _compile_notice_module()
        if notice is not None:
            notice.add_listener(listener)
        try:
            self._publish(PREPARING)
            if self._build(self._initial_preset, first=True):
                self._start_background_compile()
                self._loop()
        except BaseException as exc:  # never die silently: the GUI must show it
            traceback.print_exc()
            self._fail(f"internal error in the simulation worker: {type(exc).__name__}: {exc}")
        finally:
            if notice is not None:
                notice.remove_listener(listener)

    def _compile_listener(self, message: str) -> None:
        self._news.put(Event("compiling", message))

    def _compile_kernels(self, preset, model: str | None) -> bool:
        """Have the kernels of `preset`'s simulation compiled in a child process (at once when
        they are cached), announcing the progress; False when the worker was closed meanwhile."""
        return self._ensure_kernels(*kernels_of(preset, model), first_run=self._sim is None)

    def _ensure_kernels(self, model: str, integrator: str, first_run: bool = False) -> bool:
        """Have a (model, integrator)'s kernels compiled in child processes before this thread
        steps them (compiled here, numba would hold the simulation, and the GIL, for seconds
        with no word), announcing the progress ("compiling" events with done and total);
        waits for the background compile if it has them under way. False when the worker was
        closed meanwhile."""
        if self._factory is not None:
            return True
        from treedyn_core import warm_up
        from treedyn_core.numerics import kernel

        if not kernel.CACHING or warm_up.is_warm(model, integrator):
            return True  # without a cache the simulation compiles what it lacks itself
        told = [None]

        def progress(done: int, expected: int | None) -> None:
            text, total = compiling_words(model, integrator, first_run, done, expected)
            if text != told[0]:
                told[0] = text
                self._news.put(Event("compiling", text, done=done, total=total))

        lock = kernel_lock(model, integrator)
        progress(0, warm_up.expected_count(model, integrator))
        while not lock.acquire(timeout=0.1):  # the background compile has them under way
            if self._halt.is_set():
                return False
            under_way = self._background_progress
            if under_way is not None and under_way[0] == (model, integrator):
                progress(*under_way[1:])
        try:
            warm_up.compile_kernels(model, integrator, progress, self._halt)
        except Exception:  # the simulation then compiles what it lacks itself
            traceback.print_exc()
        finally:
            lock.release()
        return not self._halt.is_set()

    def _start_background_compile(self) -> None:
        """Compile BACKGROUND_KERNELS in child processes, one pair after another, in a thread
        of their own (the simulation runs meanwhile; closing the worker ends it)."""
        if self._factory is not None or os.environ.get(BACKGROUND_SWITCH, "1") == "0":
            return
        from treedyn_core.numerics import kernel

        if not kernel.CACHING:
            return

        def compile_all() -> None:
            from treedyn_core import warm_up

            if self._halt.wait(BACKGROUND_DELAY_S):
                return
            for pair in BACKGROUND_KERNELS:
                if self._halt.is_set():
                    return
                with kernel_lock(*pair):
                    if warm_up.is_warm(*pair) or self._halt.is_set():
                        continue
                    self._background_progress = (pair, 0, warm_up.expected_count(*pair))

                    def progress(done: int, expected: int | None, pair=pair) -> None:
                        self._background_progress = (pair, done, expected)

                    try:
                        warm_up.compile_kernels(*pair, progress, self._halt)
                    except Exception:
                        traceback.print_exc()
                    self._background_progress = None
            self._load_in_process()
            self._warm_modes()

        self._background = threading.Thread(target=compile_all, daemon=True,
                                            name="treedyn-background-compile")
        self._background.start()

    def _load_in_process(self) -> None:
        """In the background compile's thread: load BACKGROUND_KERNELS from the disk cache
        into this process by warming a throwaway simulation of each pair, and switching a
        throwaway to and from each other model (`Simulation.take_over`). A child's compile
        fills the cache, but numba still reads and links each kernel on its first call here,
        and compiles the few that Python calls with their own types (the switch's rotations):
        the first switch to the seed model took 0.25 s when the machine is quiet, 0.65 s
        under load; done now, a later switch takes ~15 ms (docs/design.md §9)."""
        from treedyn_core import warm_up

        preset = self._preset
        if preset is None:
            return
        try:
            home = self._make_simulation(preset)   # the preset's own model, as the app starts
        except Exception:
            return
        for model, integrator in BACKGROUND_KERNELS:
            if self._halt.is_set() or not warm_up.is_warm(model, integrator):
                continue
            try:
                sim = self._make_simulation(preset, model=model, integrator=integrator)
                sim.warm_up()
                if model != home.model:   # what a switch of model does, both ways
                    sim.take_over(home)
                    home.take_over(sim)
            except Exception:  # e.g. a preset the other model refuses: the switch will say so
                continue

    def _warm_modes(self) -> None:
        """In the background compile's thread: the modes' own kernels compiled in a child
        process (`mode_shapes.warm_modes_kernels`, ~2.5 s of one core once per version),
        so that a first View → Modes… does not hold the GUI's process compiling them."""
        from treedyn_core import warm_up

        from .mode_shapes import WARM_MODES_CODE, modes_kernels_warm

        if self._halt.is_set() or modes_kernels_warm():
            return
        env, folder = warm_up.child_environment()
        child = subprocess.Popen([sys.executable, "-c", WARM_MODES_CODE], env=env, cwd=folder,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while child.poll() is None:
            if self._halt.wait(0.1):
                child.kill()
                child.wait()
                return

    def background_compile_done(self) -> bool:
        """The background compile has ended (or never started)."""
        return self._background is None or not self._background.is_alive()

    def _loop(self) -> None:
        while not self._halt.is_set():
            self._apply_commands(block_for=0.0)
            if self._halt.is_set():
                return
            if not self._playing or self._failure is not None:
                self._apply_commands(block_for=0.1)
                self._last_wall = time.perf_counter()
                self._owed = 0.0
                continue
            now = time.perf_counter()
            self._owed += (now - self._last_wall) * self._time_scale
            self._last_wall = now
            dt = self._sim.dt
            if self._owed < dt:
                self._apply_commands(block_for=min((dt - self._owed) / self._time_scale,
                                                   FRAME_TIME))
                continue
            batch_limit = max(1, int(FRAME_TIME / max(self._step_cost, 1e-7)))
            n = min(int(self._owed / dt), batch_limit)
            if self._advance(n):
                self._owed -= n * dt
                if self._owed > batch_limit * dt:  # can't keep up: drop the backlog
                    self._owed = math.fmod(self._owed, dt)
                # A snapshot costs ~0.8 ms at 10,000 limbs: publish at the GUI's rate, not
                # after every step (at dt = 1/120 s that would be twice as often).
                if time.perf_counter() - self._published_at >= FRAME_TIME:
                    self._publish(RUNNING)

    def _apply_commands(self, block_for: float) -> None:
        """Apply every queued command; wait up to `block_for` s for the first one."""
        deadline = time.perf_counter() + block_for
        while not self._halt.is_set():
            remaining = deadline - time.perf_counter()
            try:
                item = (self._commands.get(timeout=remaining) if remaining > 0
                        else self._commands.get_nowait())
            except queue.Empty:
                return
            if item is None:
                return
            name, args = item
            try:
                getattr(self, f"_do_{name}")(*args)
                # The loads may have changed: the divergence check's bounds anew.
                self._sim.loads_changed()
            except TreedynError as exc:
                self._news.put(Event("notice", str(exc)))
            except Exception as exc:
                traceback.print_exc()
                self._news.put(Event("notice", f"{name} failed: {type(exc).__name__}: {exc}"))
            self._publish(self._state())
            deadline = time.perf_counter()  # after one command, only drain what is queued

    def _advance(self, n: int) -> bool:
        """n steps; False (and the failure published) if the simulation failed."""
        start = time.perf_counter()
        try:
            # The simulation checks its own bounds (`divergence`); a pull, whose force follows
            # the cursor, makes them anew for the force in force at each step.
            if self._external_load is None:
                self._sim.step(n)
            else:
                for _ in range(n):
                    self._external_load.apply(self._sim)
                    self._sim.step(1)
        except SimulationDiverged as exc:
            self._fail(str(exc))
            return False
        except Exception as exc:
            traceback.print_exc()
            self._fail(f"the simulation stopped: {type(exc).__name__}: {exc}")
            return False
        cost = (time.perf_counter() - start) / n
        first_batch = self._step_cost == 0.0
        self._step_cost = cost if first_batch else 0.8 * self._step_cost + 0.2 * cost
        if self._sim.integrator != "rk4":   # the implicit steps cost about the same
            self._implicit_cost = self._step_cost
        elif not self._rk4_measured and not first_batch:
            # The choice of sub-steps used an estimated cost; check it once against the real one
            # (the first batch may include compiling the rk4 kernels).
            self._rk4_measured = True
            realtime = self._base_dt / (self._substeps * self._step_cost)
            if realtime < MIN_REALTIME:
                self._refuse_rk4(self._substeps, None, realtime)
        return True

    def _fail(self, message: str) -> None:
        self._failure = message
        self._news.put(Event("failed", message))
        self._publish(FAILED)

    def _state(self) -> str:
        if self._sim is None:
            return PREPARING
        if self._failure is not None:
            return FAILED
        return RUNNING if self._playing else PAUSED

    # -- building ----------------------------------------------------------------------------

    def _make_simulation(self, preset, **options):
        if self._factory is not None:
            return self._factory(preset, **options)
        from treedyn_core.dynamics.partition import thread_count
        from treedyn_core.simulation import Simulation
        # One thread for the live step unless TREEDYN_THREADS says otherwise: the drawing
        # (llvmpipe where there is no GPU) needs the other core. The giant (10,926 limbs) on
        # this 2-core machine ran at 0.34× real time with the step on two threads, 0.99× on one.
        threads = thread_count() if os.environ.get("TREEDYN_THREADS", "").strip() else 1
        return Simulation(preset, threads=threads, **options)

    def _build(self, preset, first: bool = False, model: str | None = None,
               announce: bool = True, prepare=None) -> bool:
        """Make and warm up a simulation of `preset`; keep the old one if that fails.
        `prepare(sim)`, if given, runs on the new simulation before it takes over (so no
        frame shows it half set up). Announces "ready" (first) or "loaded" unless `announce`
        is False."""
        try:
            if not self._compile_kernels(preset, model):
                return False
            sim = self._make_simulation(preset, **({"model": model} if model else {}))
            start = time.perf_counter()
            sim.warm_up()
            self._implicit_cost = self._step_cost = (
                time.perf_counter() - start if sim.integrator == "implicit" else 0.0)
            if prepare is not None:
                prepare(sim)
        except TreedynError as exc:
            self._news.put(Event("load_failed", str(exc), preset))
            if first:
                self._fail(str(exc))
            return False
        except Exception as exc:
            traceback.print_exc()
            message = f"cannot build the simulation: {type(exc).__name__}: {exc}"
            self._news.put(Event("load_failed", message, preset))
            if first:
                self._fail(message)
            return False
        self._crown = int(sim.crown_top())
        self._external_load = None
        self._sim, self._preset = sim, preset
        self._generation += 1
        self._failure = None
        self._base_dt = float(sim.dt)
        self._substeps = 1
        wind = preset.data["wind"]
        self._wind_wanted = (float(wind["speed"]), float(wind["direction_deg"]),
                             float(wind["turbulence_intensity"]))
        self._samples.clear()
        self._owed = 0.0
        self._last_wall = time.perf_counter()
        if sim.integrator != "implicit":
            self._do_integrator(sim.integrator)
        self._rk4_measured = False
        self._publish(self._state())
        if announce:
            self._news.put(Event("ready" if first else "loaded", "", preset))
        self._tell_start(sim)
        return True

    def _tell_start(self, sim) -> None:
        """A tree that was to start bent by the mean wind but found no balance in it starts
        from rest: say so (the run's `start_notice`) in words a user understands."""
        if sim.start_notice:
            self._news.put(Event("notice", START_FROM_REST))

    # -- commands (worker thread only) ---------------------------------------------------------

    def _do_stiffness_scale(self, value: float) -> None:
        self._sim.set_stiffness_scale(value)
        self._check_rk4()

    def _do_damping_scale(self, value: float) -> None:
        self._sim.set_damping_scale(value)
        self._check_rk4()

    def _do_wind_speed(self, speed: float) -> None:
        self._sim.set_wind_speed(speed)
        self._remember_wind(0, speed)

    def _do_wind_direction(self, degrees: float) -> None:
        self._sim.set_wind_direction(degrees)
        self._remember_wind(1, degrees)

    def _do_turbulence_intensity(self, fraction: float) -> None:
        self._sim.set_turbulence_intensity(fraction)
        self._remember_wind(2, fraction)

    def _remember_wind(self, index: int, value: float) -> None:
        wanted = list(self._wind_wanted)
        wanted[index] = value
        self._wind_wanted = tuple(wanted)

    def _do_time_scale(self, value: float) -> None:
        if not value > 0:
            raise TreedynError(f"time scale must be > 0, got {value}")
        self._time_scale = value
        self._samples.clear()

    def _do_dt(self, dt: float) -> None:
        if not dt > 0:
            raise TreedynError(f"dt must be > 0 s, got {dt}")
        self._base_dt = dt
        self._sim.dt = dt / self._substeps
        self._check_rk4()

    def _do_play(self) -> None:
        self._playing = True
        self._last_wall = time.perf_counter()
        self._owed = 0.0

    def _do_pause(self) -> None:
        self._playing = False
        self._samples.clear()

    def _do_single_step(self) -> None:
        self._playing = False
        if self._failure is None:
            self._advance(self._substeps)

    def _do_reset(self) -> None:
        self._sim.reset()
        self._tell_start(self._sim)
        self._failure = None
        self._samples.clear()
        self._owed = 0.0
        self._last_wall = time.perf_counter()
        # Simulation.reset restores the preset's wind; the controls may say otherwise.
        speed, direction, intensity = self._wind_wanted
        if speed != self._sim.wind_speed:
            self._sim.set_wind_speed(speed)
        if abs((direction - self._sim.wind_direction_deg + 180.0) % 360.0 - 180.0) > 1e-9:
            self._sim.set_wind_direction(direction)
        if intensity != self._sim.turbulence_intensity:
            self._sim.set_turbulence_intensity(intensity)

    def _do_load(self, preset) -> None:
        self._publish(PREPARING)
        if not self._build(preset):
            self._publish(self._state())

    def _do_model(self, name: str) -> None:
        """The other model goes on from the current motion: same time, state, wind and
        sliders (`Simulation.take_over`)."""
        if name == self._sim.model:
            return
        old = self._sim
        wind = self._wind_wanted
        if self._build(self._preset, model=name, announce=False, prepare=lambda sim:
                       sim.take_over(old)):
            self._wind_wanted = wind
            if old.integrator != self._sim.integrator:
                self._do_integrator(old.integrator)

    def _do_integrator(self, name: str) -> None:
        if name not in LIVE_INTEGRATORS:
            self._sim.set_integrator("implicit")
            self._use_substeps(1)
            self._news.put(Event("refused", f"{name} is an offline reference integrator "
                                            "(treedyn run); the app steps with implicit"))
            return
        # The kernels are compiled (or waited for) after the integrator is accepted and before
        # the next step, which would compile them here.
        if name != "rk4":
            try:
                self._sim.set_integrator(name)
            except TreedynError as exc:   # galpha with the seed model
                self._sim.set_integrator("implicit")
                self._news.put(Event("refused", f"{exc}; the app steps with implicit"))
            self._use_substeps(1)
            self._ensure_kernels(self._sim.model, self._sim.integrator)
            return
        self._sim.set_integrator("rk4")
        if not self._check_rk4():   # refused before anything is compiled for it
            return
        self._ensure_kernels(self._sim.model, "rk4")
        self._news.put(Event("notice", f"rk4: {self._substeps} sub-steps of "
                                       f"{self._sim.dt:.3g} s per {self._base_dt:.3g} s step"))

    def _check_rk4(self) -> bool:
        """With rk4 in force, choose its sub-steps, or fall back to implicit (False) when they
        would make it slower than MIN_REALTIME."""
        sim = self._sim
        if sim.integrator != "rk4":
            return True
        rate = fastest_rate(sim.tree, sim.inertia_base, sim.stiffness_scale, sim.damping_scale)
        substeps = rk4_substeps(self._base_dt, rate)
        cost = RK4_COST_RATIO * max(self._implicit_cost, 1e-7)
        realtime = self._base_dt / (substeps * cost)
        if realtime < MIN_REALTIME:
            self._refuse_rk4(substeps, rate, realtime)
            return False
        self._use_substeps(substeps)
        self._rk4_measured = False
        return True

    def _refuse_rk4(self, substeps: int, rate: float | None, realtime: float) -> None:
        self._sim.set_integrator("implicit")
        self._use_substeps(1)
        fastest = f" (fastest joint mode {rate:.3g}/s)" if rate else ""
        self._news.put(Event(
            "refused",
            f"rk4 refused: it needs {substeps:,} sub-steps per {self._base_dt * 1e3:.3g} ms "
            f"step to stay stable{fastest} and would run at {realtime:.2g}× real time "
            f"(< {MIN_REALTIME}×); keeping implicit"))

    def _use_substeps(self, substeps: int) -> None:
        self._substeps = substeps
        self._sim.dt = self._base_dt / substeps
        self._step_cost = 0.0

    def _do_external_load(self, provider) -> None:
        if provider is None and self._external_load is not None:
            self._external_load.release(self._sim)
        self._external_load = provider

    def _do_call(self, function: Callable[[Any], None]) -> None:
        function(self._sim)

    # -- publishing ----------------------------------------------------------------------------

    def _settings(self) -> Settings:
        sim = self._sim
        field = getattr(sim, "wind", None)
        flow = getattr(field, "flow", None)
        return Settings(
            stiffness_scale=float(sim.stiffness_scale),
            damping_scale=float(sim.damping_scale),
            wind_speed=float(sim.wind_speed),
            wind_direction_deg=float(sim.wind_direction_deg),
            turbulence_intensity=float(sim.turbulence_intensity),
            integrator=sim.integrator, model=sim.model, dt=self._base_dt,
            substeps=self._substeps, time_scale=self._time_scale,
            canopy_height=None if flow is None else float(flow.height),
            canopy_top_speed=None if flow is None else field.canopy_top_speed)

    def _publish(self, state: str) -> None:
        self._seq += 1
        now = time.perf_counter()
        if state == RUNNING and self.latest.state == RUNNING:
            self.gaps.append(now - self._published_at)
        self._published_at = now
        if self._sim is None:
            self.latest = replace(self.latest, seq=self._seq, state=state, error=self._failure)
            return
        if state != FAILED:
            self._snapshot = self._sim.snapshot()
            self._probe = measure_probe(self._sim, self._crown)
        now = time.perf_counter()
        samples = self._samples
        if state == RUNNING:
            samples.append((now, self._snapshot.time))
            while len(samples) > 2 and now - samples[0][0] > RATE_WINDOW:
                samples.popleft()
        realtime = 0.0
        if state == RUNNING and len(samples) >= 2 and samples[-1][0] - samples[0][0] > 0.2:
            realtime = (samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0])
        behind = (state == RUNNING and realtime > 0.0 and now - samples[0][0] > 0.5 * RATE_WINDOW
                  and realtime < BEHIND * self._time_scale)
        self.latest = Frame(seq=self._seq, generation=self._generation, state=state,
                            preset=self._preset, tree=self._sim.tree, snapshot=self._snapshot,
                            settings=self._settings(), error=self._failure,
                            realtime_factor=realtime, behind=behind, probe=self._probe)


def _compile_notice_module():
    """treedyn_core's "compiling kernels" announcer, if this version of the core has one."""
    try:
        from treedyn_core.numerics import compile_notice
    except ImportError:
        return None
    return compile_notice if hasattr(compile_notice, "add_listener") else None
