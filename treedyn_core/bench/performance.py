"""`treedyn bench performance`: time per step against tree size (docs/performance.md §1).

Generated trees of about 10 … 100,000 limbs (the `giant` preset's shape with more or fewer
branching levels), each integrator with the wind on (turbulence 0.2), medians of the
thread's CPU time over repetitions after warm-up; the split between wind + drag, joint forces and the recursion
from timing the compiled stages separately; the real-time factor at dt = 1/120 s; and the
time from process start to the first step with a warm kernel cache, and with an empty one (the
cold start of a first run, every kernel compiled).
"""

from __future__ import annotations

import copy
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from .. import __version__
from ..dynamics.aero import drag_loads, midpoints
from ..dynamics.articulated import forward_kinematics, implicit_accelerations
from ..dynamics.joints import joint_torques
from ..dynamics.partition import partition, thread_count
from ..model.generator import count_limbs
from ..model.preset import load_preset, validate
from ..numerics.kernel import kernel
from ..simulation import Simulation

SIZES = (10, 100, 1_000, 10_000, 30_000, 100_000)
RK4_MAX_LIMBS = 1_000
SIZE_TOLERANCE = 0.05  # a bench tree's limb count within 5 % of its nominal size, if it can
DT = 1.0 / 120.0
TARGET_SECONDS = 0.6  # per measurement: enough repetitions to take a stable median
# Wall time: a step on several threads costs the time from its start to its end (the stepping
# thread's CPU time, used while physics ran on one thread, does not see the others).
clock = time.perf_counter


def tree_of_size(target: int) -> dict:
    """A validated preset dict: `giant`'s tree with (levels, children, segments) chosen so the
    limb count is closest to `target` (and within the generator's max_limbs); wind 6 m/s,
    turbulence 0.2, dt 1/120 s.

    Branches of equal segments first. Where none of those comes within `SIZE_TOLERANCE` of the
    target (the nearest to 100,000 have 88,575 and 118,098 limbs), the branches of the first
    levels get one segment more than the rest (98,415 limbs): a finer scale of sizes, and a tree
    that still holds itself up (more segments make each joint stiffer for the same branch).
    """
    data = copy.deepcopy(load_preset("giant").data)
    gen = data["tree"]["generator"]
    trunk = {**gen["trunk"], "segments": min(gen["trunk"]["segments"], max(1, target))}

    def closest(segment_lists):
        best = None
        for levels in range(0, 10):
            for children in (2, 3, 4):
                for segments in segment_lists(levels):
                    trial = {**gen, "levels": levels, "children": children,
                             "segments": segments, "trunk": trunk}
                    n = count_limbs(trial)
                    score = abs(np.log(n / target))
                    if n <= gen["max_limbs"] and (best is None or score < best[0]):
                        best = (score, trial)
        return best

    score, generator = closest(lambda levels: (1, 2, 3))
    if score > np.log1p(SIZE_TOLERANCE):
        _, generator = closest(lambda levels: [
            [s + 1] * more + [s] * (levels - more) for s in (1, 2, 3) for more in range(levels)])
    data["tree"]["generator"] = generator
    data["wind"].update(speed=6.0, turbulence_intensity=0.2)
    data["simulation"].update(dt=DT)
    return validate(data, "<bench>")


def _median_seconds(call, minimum_repeats: int = 5) -> float:
    call()
    samples = []
    start = time.perf_counter()
    while len(samples) < minimum_repeats or time.perf_counter() - start < TARGET_SECONDS:
        t0 = clock()
        call()
        samples.append(clock() - t0)
        if len(samples) >= 2000:
            break
    return float(np.median(samples))


def _compiled(function, *args):
    """A call of the compiled ``function(*args)`` through its machine code's entry point, as
    the steppers call it: numba's dispatcher would check the types of the named records' ~45
    arrays on every call from Python (several µs, not part of a step)."""
    function(*args)
    entry = function.overloads[tuple(function.typeof_pyval(arg) for arg in args)].entry_point
    return lambda: entry(*args)


def _split(sim: Simulation) -> dict[str, float]:
    """Seconds per step of each compiled stage, timed on its own."""
    t, w = sim.tree, sim.workspace
    air = sim.air()
    model = sim.articulated_model()
    theta_h = sim.theta_method * sim.dt
    limbs = np.arange(t.n)

    def kinematics():
        forward_kinematics(limbs, t.parent, t.base_offset, sim.q, sim.v, w.C_IF, w.base,
                           w.omega, w.base_vel, w.omega_rel)

    def wind_and_drag():
        midpoints(limbs, w.C_IF, w.base, w.omega, w.base_vel, t.length, t.u, w.mid, w.mid_vel,
                  w.lever)
        sim.wind.velocity_at(w.mid, w.wind_at_mid)
        drag_loads(limbs, w.wind_at_mid, w.mid_vel, w.lever, t.length, t.radius, t.leaf_area,
                   air.air_density, air.drag_coefficient, air.leaf_drag_coefficient,
                   air.vogel_exponent, True, w.aero_force, w.aero_torque, w.drag_jacobian)

    def joint_forces():
        joint_torques(limbs, sim.q, sim.v, sim.spring_q, t.stiffness, t.damping,
                      sim.stiffness_scale, sim.damping_scale, theta_h, w.theta, w.tau)

    recursion = _compiled(implicit_accelerations, limbs, model, w, w.aero_force, w.aero_torque,
                          theta_h ** 2 * sim.stiffness_scale, theta_h * sim.damping_scale,
                          theta_h, sim.dt)

    return {"kinematics": _median_seconds(kinematics), "wind_and_drag": _median_seconds(
        wind_and_drag), "joint_forces": _median_seconds(joint_forces),
        "recursion": _median_seconds(recursion)}


def build(target: int) -> tuple[Simulation, float]:
    """The generated tree closest to ``target`` limbs as a Simulation, and the seconds it took
    to generate and load."""
    t0 = time.perf_counter()
    sim = Simulation.from_data(tree_of_size(target))
    return sim, time.perf_counter() - t0


def measure(sim: Simulation, load_seconds: float, integrators=("implicit", "rk4")) -> list[dict]:
    """Rows of the table for one tree: the implicit step on one thread (with the split into
    stages, timed on one thread) and, where the tree is shared among threads
    (`partition.partition`), on all of them; rk4 on all."""
    rows = []
    shared = sim.partition
    alone = partition(sim.tree.parent, 1)
    for integrator in integrators:
        sim.reset()
        sim.set_integrator(integrator)
        # rk4 costs the same per step at any dt; it is timed below its stability limit and its
        # real-time factor is that of the largest stable step.
        dt = DT if integrator == "implicit" else sim.rk4_stable_dt()
        sim.dt = dt
        sim.warm_up()
        for part in ((alone, shared) if integrator == "implicit" and shared.groups > 1
                     else (shared,)):
            sim.partition = part
            row = {"limbs": sim.tree.n, "integrator": integrator, "threads": max(part.groups, 1),
                   "dt": dt, "seconds_per_step": _median_seconds(lambda: sim.step(1)),
                   "load_seconds": load_seconds}
            if integrator == "implicit":
                if part.groups <= 1:
                    row["split_seconds"] = _split(sim)
                # the same step with the aerodynamics off (no wind field, no drag)
                aerodynamics, sim.aerodynamics = sim.aerodynamics, False
                row["seconds_per_step_no_wind"] = _median_seconds(lambda: sim.step(1))
                sim.aerodynamics = aerodynamics
            rows.append(_with_rates(row))
    sim.partition = shared
    return rows


def _with_rates(row: dict) -> dict:
    """``row`` with the figures that follow from its time per step."""
    per_step = row["seconds_per_step"]
    row.update(steps_per_second=1.0 / per_step, real_time_factor=row["dt"] / per_step,
               microseconds_per_limb_step=1e6 * per_step / row["limbs"])
    return row


def combine(passes: list[dict]) -> dict:
    """One row from the same row of several passes: medians of the times, and the range (min,
    max) of the times per step over the passes, which shows how much the machine drifts."""
    row = dict(passes[0])
    for key in ("seconds_per_step", "seconds_per_step_no_wind"):
        if key in row:
            times = [p[key] for p in passes]
            row[key] = float(np.median(times))
            row[key.replace("seconds_per_step", "range_seconds_per_step")] = [min(times),
                                                                               max(times)]
    if "split_seconds" in row:
        row["split_seconds"] = {key: float(np.median([p["split_seconds"][key] for p in passes]))
                                for key in row["split_seconds"]}
    row["passes"] = len(passes)
    return _with_rates(row)


@kernel
def _calibration_field(points, k, amp, phase, out):
    """The calibration kernel (docs/performance.md §6): 64 Fourier modes at 10,000 points, math.cos."""
    for p in range(points.shape[0]):
        x, y, z = points[p, 0], points[p, 1], points[p, 2]
        total = 0.0
        for j in range(k.shape[0]):
            total += amp[j] * math.cos(k[j, 0] * x + k[j, 1] * y + k[j, 2] * z + phase[j])
        out[p] = total


CALIBRATION_REFERENCE_MS = 6.7  # ms, the same kernel on the reference machine (docs/performance.md §6)


def calibration_ms() -> float:
    """Milliseconds of the math.cos field kernel (10,000 points × 64 modes) here: the ratio
    to CALIBRATION_REFERENCE_MS says how much faster or slower this machine is right now."""
    rng = np.random.default_rng(0)
    points = rng.normal(size=(10_000, 3)) * 10.0
    k, amp, phase = rng.normal(size=(64, 3)), rng.random(64), rng.random(64)
    out = np.empty(10_000)
    return 1e3 * _median_seconds(lambda: _calibration_field(points, k, amp, phase, out))


def time_to_first_step() -> float:
    """Seconds from process start to the end of a first step of `two_limbs` (warm cache)."""
    code = ("import time; t0 = time.perf_counter()\n"
            "from treedyn_core.model.preset import load_preset\n"
            "from treedyn_core.simulation import Simulation\n"
            "s = Simulation(load_preset('two_limbs')); s.step(1)\n"
            "print(time.perf_counter() - t0)")
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)  # warm cache
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    return time.perf_counter() - start


def cold_start() -> float:
    """Seconds of `treedyn run two_limbs --duration 0.1` with an empty (temporary) kernel
    cache: a first run's wall time, every kernel it uses compiled."""
    with tempfile.TemporaryDirectory(prefix="treedyn-cold-") as folder:
        env = {**os.environ, "TREEDYN_CACHE_DIR": folder}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "treedyn_core", "run", "two_limbs", "--duration",
                        "0.1", "--out", os.path.join(folder, "run.npz")], env=env,
                       capture_output=True, check=True)
        return time.perf_counter() - start


def machine() -> dict:
    import numba
    import scipy

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cpus": os.cpu_count(), "threads": thread_count(),
            "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__, "scipy": scipy.__version__,
            "treedyn": __version__, "platform": platform.platform()}


def _print_row(row: dict, out, ranged: bool) -> None:
    split = row.get("split_seconds")
    no_wind = (f"{1e3 * row['seconds_per_step_no_wind']:>8.3f}"
               if "seconds_per_step_no_wind" in row else "")
    parts = (f"{1e3 * split['wind_and_drag']:>10.3f} {1e3 * split['joint_forces']:>8.3f} "
             f"{1e3 * split['recursion']:>10.3f}" if split else f"{'':>10} {'':>8} {'':>10}")
    spread = ""
    if ranged:
        low, high = row["range_seconds_per_step"]
        spread = f"{f'{1e3 * low:.3f}–{1e3 * high:.3f}':>13} "
    print(f"{row['limbs']:>8,} {row['integrator']:>10} {row['threads']:>7} {row['dt']:>9.2e} "
          f"{1e3 * row['seconds_per_step']:>9.3f} {spread}"
          f"{row['steps_per_second']:>9.0f} {row['real_time_factor']:>8.3g} "
          f"{row['microseconds_per_limb_step']:>8.3f} {parts} "
          f"{row['load_seconds']:>7.2f} {no_wind}", file=out, flush=True)


def run(sizes=SIZES, as_json: bool = False, out=sys.stdout, repeat: int = 1) -> dict:
    """Measure and print the performance tables; returns the results.

    With repeat > 1 the sizes are measured in that many passes (each tree built once) and
    each row holds the medians over the passes and the range of its time per step: on a
    shared machine that range, not the last digit, says how far a figure can be trusted.
    """
    info = machine()
    ranged = repeat > 1
    if not as_json:
        print(f"treedyn {info['treedyn']} on {info['cpu']} ({info['cpus']} CPUs; the step may use "
              f"{info['threads']} threads, TREEDYN_THREADS), Python "
              f"{info['python']}, numpy {info['numpy']}, numba {info['numba']}", file=out)
        print("implicit at dt = 1/120 s, rk4 at its largest stable dt; wind 6 m/s, turbulence "
              "0.2 (last column: implicit with the aerodynamics off); medians of the wall time "
              "per step after warm-up; the split into stages timed on one thread"
              + (f", then over {repeat} passes (range: their lowest and highest ms/step)"
                 if ranged else "") + "\n", file=out)
        print(f"{'limbs':>8} {'integrator':>10} {'threads':>7} {'dt s':>9} {'ms/step':>9} "
              + (f"{'range':>13} " if ranged else "")
              + f"{'steps/s':>9} {'× real':>8} {'µs/limb':>8} {'wind+drag':>10} {'joints':>8} "
              f"{'recursion':>10} {'load s':>7} {'no wind':>8}", file=out)
        print(f"{'':>8} {'':>10} {'':>7} {'':>9} {'':>9} " + (f"{'ms':>13} " if ranged else "")
              + f"{'':>9} {'':>8} {'':>8} {'ms':>10} {'ms':>8} {'ms':>10} {'':>7} "
              f"{'ms/step':>8}", file=out)
    trees, passes = [], [[] for _ in sizes]
    for k in range(repeat):
        for j, size in enumerate(sizes):
            if k == 0:
                trees.append(build(size))
            integrators = ("implicit", "rk4") if size <= RK4_MAX_LIMBS else ("implicit",)
            passes[j].append(measure(*trees[j], integrators))
            if ranged:
                print(f"pass {k + 1} of {repeat}: {trees[j][0].tree.n:,} limbs measured",
                      file=sys.stderr, flush=True)
                continue
            trees[j] = None  # measured once: let it go before building the next
            if not as_json:
                for row in passes[j][0]:
                    _print_row(row, out, ranged)
    rows = [combine([p[r] for p in size_passes]) if ranged else size_passes[0][r]
            for size_passes in passes for r in range(len(size_passes[0]))]
    if ranged and not as_json:
        for row in rows:
            _print_row(row, out, ranged)
    first = time_to_first_step()
    cold = cold_start()
    calibration = calibration_ms()
    result = {"machine": info, "dt": DT, "rows": rows, "time_to_first_step_seconds": first,
              "cold_start_seconds": cold,
              "calibration_ms": calibration,
              "calibration_reference_ms": CALIBRATION_REFERENCE_MS}
    if as_json:
        print(json.dumps(result, indent=2), file=out)
    else:
        print(f"\nprocess start to first step (two_limbs, warm kernel cache): {first:.2f} s",
              file=out)
        print(f"cold start (treedyn run two_limbs --duration 0.1, empty temporary kernel cache): "
              f"{cold:.1f} s", file=out)
        print(f"calibration (math.cos field, 10,000 points × 64 modes): {calibration:.2f} "
              f"ms here, {CALIBRATION_REFERENCE_MS} ms on the reference machine "
              f"(this machine is {calibration / CALIBRATION_REFERENCE_MS:.2f}× slower now)",
              file=out)
    return result
