"""Compile a simulation's kernels in a child process, with progress, before the simulation starts.

The app calls `compile_kernels` from its worker thread: the compiling happens in another
process (`python -m treedyn_core.warm_up MODEL INTEGRATOR PART`), so the window stays fluid (numba's
compiler is Python code holding the GIL), closing the window ends it at once, and its progress
comes line by line. Two children reach the kernels through the public `Simulation` API (a tiny
tree built, stepped once, read; and one built from the statics a shipped tree starts with), at
once on two cores, so they compile what a simulation of that model and integrator uses, into
the same cache (`kernel.cache_folder`); afterwards the app's own
`Simulation` loads them (well under a second). numba writes each cache file to a temporary
name and renames it, so a child killed midway leaves no file that breaks the next start.

A stamp per (model, integrator) in the package's cache folder records a complete warm-up (with
the sources' digest and the numba and Python versions) and the number of kernels it compiled,
which is the "of N" of the next first run (after an upgrade or an edit).

`treedyn run` has one child of its own on a first run (`start_helper`, part "leaves"): it
compiles the articulated step's own kernels from the bottom while the command compiles the
step from the top, and a second stamp records that a run has stepped.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from .errors import TreedynError
from .numerics import kernel
from .output_file import write_text_atomically

DONE = "compiled"  # the child's progress line: "compiled <module.function>"
POLL = 0.05  # s between looks at the child (and at the stop flag)


def _stamp(model: str, integrator: str) -> Path:
    return kernel.package_cache_folder() / f"warm-{model}-{integrator}"


def _count_file(model: str, integrator: str) -> Path:
    return kernel.package_cache_folder() / f"kernels-{model}-{integrator}.count"


def _fingerprint() -> str:
    import numba

    return (f"{kernel.sources_digest()} numba {numba.__version__} "
            f"python {sys.version_info[0]}.{sys.version_info[1]}")


def is_warm(model: str, integrator: str) -> bool:
    """The cache holds every kernel a (model, integrator) simulation uses, for these sources."""
    if not kernel.CACHING:
        return False
    try:
        return _stamp(model, integrator).read_text() == _fingerprint()
    except OSError:
        return False


def expected_count(model: str, integrator: str) -> int | None:
    """How many kernels the last complete warm-up of (model, integrator) compiled, if known."""
    try:
        return int(_count_file(model, integrator).read_text())
    except (OSError, ValueError):
        return None


def _write(path: Path, text: str) -> None:
    """`text` into the cache's file `path`, atomically; a failure (a full disk, a read-only
    cache) only costs a warm-up the next time."""
    try:
        write_text_atomically(path, text)
    except TreedynError:
        pass


# Children started ahead by `start`, waiting for `compile_kernels` to adopt them.
_started: dict[tuple[str, str], list[subprocess.Popen]] = {}
# Children compiling the step's own kernels beside a command's first run (`start_helper`).
_helpers: list[subprocess.Popen] = []


def child_environment() -> tuple[dict, str]:
    """(environment, working folder) in which a child process imports this very package: its
    kernels' cache subfolder is named after the package's path. `python -m` puts the working
    folder first on sys.path, so the child starts in the folder that holds the package: from
    a clone's folder after `pip install .` (the README's first command) it would otherwise
    import the clone's copy and fill a cache the app never reads."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(kernel.PACKAGE.parent)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env, str(kernel.PACKAGE.parent)


# A child's niceness: the app's own start (Qt, vispy, the first frame of the tree) comes
# before the compiling, which takes the cores whenever the window leaves them idle.
CHILD_NICENESS = 5


def child_command(model: str, integrator: str, part: str) -> list[str]:
    """The command line of a child compiling `part` (`python -m treedyn_core.warm_up ...`,
    niced by CHILD_NICENESS before it imports anything)."""
    code = ("import os, runpy\n"
            f"if hasattr(os, 'nice'): os.nice({CHILD_NICENESS})\n"
            "runpy.run_module('treedyn_core.warm_up', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", code, model, integrator, part]


def _spawn(model: str, integrator: str) -> list[subprocess.Popen]:
    env, folder = child_environment()
    # One child per part, both at once: the step's kernels and the statics' (equilibrium,
    # modes, damping) are independent chains of compiling, one for each core. Their progress
    # lines wait in the pipes until read.
    return [subprocess.Popen(child_command(model, integrator, part), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=folder)
            for part in PARTS]


def start(model: str, integrator: str) -> None:
    """Start compiling the kernels of a (model, integrator) simulation now, unless they are
    cached: the app calls this as soon as it has read the preset, so that compiling overlaps
    the seconds of starting Qt and opening the window. `compile_kernels` adopts the children
    (and their progress); any not adopted are ended when the process exits."""
    if (model, integrator) in _started or not kernel.CACHING or is_warm(model, integrator):
        return
    _started[(model, integrator)] = _spawn(model, integrator)


def _steps_stamp(model: str, integrator: str) -> Path:
    return kernel.package_cache_folder() / f"warm-{model}-{integrator}-steps"


def steps_are_warm(model: str, integrator: str) -> bool:
    """The cache holds the step kernels of a (model, integrator) simulation, for these
    sources: a complete warm-up, or a command's run that stepped (`note_steps_warm`)."""
    if is_warm(model, integrator):
        return True
    try:
        return _steps_stamp(model, integrator).read_text() == _fingerprint()
    except OSError:
        return False


def note_steps_warm(model: str, integrator: str) -> None:
    """Record that a simulation of (model, integrator) has stepped: its step kernels are
    cached (a command's first run, which needs no helper the next time)."""
    if kernel.CACHING and not steps_are_warm(model, integrator):
        stamp = _steps_stamp(model, integrator)
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            _write(stamp, _fingerprint())
        except OSError:
            pass  # a helper is started once more next time: only a core's worth of waste


def start_helper(model: str, integrator: str) -> None:
    """On a command's first run (`treedyn run`), compile the articulated step's own kernels
    in a child process at once, from the other end of the step (`_step_leaves`): the command
    compiles the step from the top and loads each of these from the cache once the child has
    written it. Cuts a cold `treedyn run two_limbs` from ~16.9 s to ~13 s on 2 cores
    (docs/kernel_cache.md). The child is ended when the command exits."""
    if not kernel.CACHING or model != "articulated" or steps_are_warm(model, integrator):
        return
    env, folder = child_environment()
    _helpers.append(subprocess.Popen(
        [sys.executable, "-m", "treedyn_core.warm_up", model, integrator, "leaves"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=folder))


@atexit.register
def _end_unadopted() -> None:
    for child in [c for children in _started.values() for c in children] + _helpers:
        child.kill()
        child.wait()
    _started.clear()
    _helpers.clear()


def compile_kernels(model: str, integrator: str,
                    progress: Callable[[int, int | None], None] | None = None,
                    stop: threading.Event | None = None) -> bool:
    """Compile (or find compiled) the kernels of a (model, integrator) simulation in child
    processes (`PARTS`, at once). `progress(done, expected)` is called after each compiled
    kernel (expected None when not known yet). Returns True when the cache is complete, False
    when `stop` was set (the children are ended) or a child failed (the simulation then
    compiles what it lacks itself)."""
    if is_warm(model, integrator) or not kernel.CACHING:
        return kernel.CACHING
    expected = expected_count(model, integrator)
    if progress is not None:
        progress(0, expected)
    children = _started.pop((model, integrator), None) or _spawn(model, integrator)
    done = [0]
    lock = threading.Lock()

    def read_progress(child) -> None:
        for line in child.stdout:
            if line.startswith(DONE):
                with lock:
                    done[0] += 1
                    if progress is not None:
                        progress(done[0], expected)

    readers = [threading.Thread(target=read_progress, args=(child,), daemon=True,
                                name="treedyn-warm-up-progress") for child in children]
    for reader in readers:
        reader.start()
    while any(child.poll() is None for child in children):
        if stop is not None and stop.wait(POLL):
            for child in children:
                child.kill()
                child.wait()
            return False
        if stop is None:
            time.sleep(POLL)
    for reader in readers:
        reader.join(1.0)
    for child in children:
        if child.returncode != 0:
            error = child.stderr.read().strip().splitlines()
            print(f"treedyn: compiling the kernels in a child process failed "
                  f"({error[-1] if error else f'exit status {child.returncode}'}); compiling "
                  f"here", file=sys.stderr)
            return False
    _write(_count_file(model, integrator), str(done[0]))
    _write(_stamp(model, integrator), _fingerprint())
    return True


def _warm(model: str, integrator: str, part: str) -> None:
    """A child's work: a tiny simulation of (model, integrator) built, stepped once and read
    the way `treedyn run` and the app read it ("steps"), or built from the statics a shipped
    tree starts with ("statics": the stiffness-proportional damping's lowest mode, the
    prestress, the balance under the mean wind), or built and its step's own kernels called
    ("leaves", `_step_leaves`); each compiled kernel announced on stdout."""
    from numba.core import event

    from .model.preset import load_preset
    from .simulation import Simulation

    class Announce(event.Listener):
        def on_start(self, e) -> None:
            pass

        def on_end(self, e) -> None:
            name = e.data["dispatcher"].py_func
            # (numba's own generated functions, e.g. a structref's constructor, have none)
            if (name.__module__ or "").startswith(__package__):
                print(f"{DONE} {name.__module__}.{name.__qualname__}", flush=True)

    event.register("numba:compile", Announce())
    # two_limbs: prestressed, with an initial rotation and drag coefficients, so every branch
    # of building, stepping and reading a simulation is typed; a tree's size changes no type.
    data = load_preset("two_limbs").data
    data["wind"]["speed"] = 5.0
    if part == "statics":
        data["initial_state"] = []
        data["material"]["damping_model"] = "stiffness_proportional"
        data["simulation"]["start"] = "mean_wind"
        Simulation.from_data(data, model=model, integrator=integrator)
        return
    sim = Simulation.from_data(data, model=model, integrator=integrator)
    if part == "leaves":
        for call in _step_leaves(sim):
            call()
        return
    sim.step(1)
    sim.snapshot()
    sim.root_moment()
    sim.aerodynamic_forces()


def _step_leaves(sim) -> list[Callable[[], object]]:
    """The articulated step's own kernels (the stages of `systems._articulated` and
    `articulated.linearised_accelerations`), called as the step calls them (the same argument
    types), in the reverse of the order the step's compile reaches them: a process compiling
    the step from the top meets these from the other end, each loaded from the cache once
    this one has written it. The seed model's step has none of its own."""
    from .dynamics.aero import drag_loads, midpoints
    from .dynamics.articulated import (ImplicitTerms, articulated_inward, articulated_outward,
                                       implicit_joint_blocks, limb_inertias, subtree_sums)
    from .dynamics.wind import plan_samples, wind_at

    if sim.model != "articulated":
        return []
    system = sim.system()
    model, w, air = system.model, system.work, system.air
    terms = ImplicitTerms(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, False)
    limbs = system.partition.top
    return [
        lambda: articulated_outward(limbs, model, w),
        lambda: articulated_inward(limbs, model, w),
        lambda: implicit_joint_blocks(limbs, model, w, terms, w.vdot, w.vdot),
        lambda: subtree_sums(limbs, model, w, False, False),
        lambda: limb_inertias(limbs, model, w, w.total_force, w.total_torque, 0.0, False, w.vdot,
                              w.vdot),
        lambda: drag_loads(limbs, w.wind_at_mid, w.mid_vel, w.lever, air.length, air.radius,
                           air.leaf_area, air.air_density, air.drag_coefficient,
                           air.leaf_drag_coefficient, air.vogel_exponent, False, w.aero_force,
                           w.aero_torque, w.drag_jacobian),
        lambda: wind_at(limbs, w.mid, air.wind, w.wind_at_mid),
        lambda: plan_samples(air.wind),
        lambda: midpoints(limbs, w.C_IF, w.base, w.omega, w.base_vel, air.length, air.limb_u, w.mid,
                          w.mid_vel, w.lever),
    ]


PARTS = ("steps", "statics")

if __name__ == "__main__":
    _warm(*sys.argv[1:4])
