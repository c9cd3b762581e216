"""Hardening, second step (docs/hardening.md): no study row, film or pull result that lies, no
unbounded study, every broken file one line. One test per item of the probe that found them
(the item's number first in each docstring); each fails on the code before the fix.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from test_hardening import (EXIT_BAD_INPUT, EXIT_DIVERGED, EXIT_OK, check_contract, server,  # noqa: F401
                            start, treedyn)
from treedyn_core.errors import SimulationDiverged, TreedynError
from treedyn_core.model.preset import apply_overrides, load_preset
from treedyn_core.simulation import Simulation

# The storm of the probe: the willow at the schema's limits, generalized-α, which runs away.
STORM = ["--set", "wind.speed=60", "--set", "wind.turbulence_intensity=1.0",
         "--set", "simulation.dt=0.1", "--set", "simulation.integrator=galpha"]


def _storm_data():
    data = load_preset("weeping_willow").data
    return apply_overrides(data, [s for s in STORM if s != "--set"])


# -- 1. a study row that lies ----------------------------------------------------------------------

def test_a_study_records_a_runaway_as_diverged():
    """1: `treedyn run` stops this storm with status 3; the study's row said `ok` with a base
    moment of 5.6e9 N·m."""
    from treedyn_core.studies.study_run import RunSpec, run_row

    spec = RunSpec(0, "k", "weeping_willow", "{}", {"wind.speed": 60.0,
                   "wind.turbulence_intensity": 1.0, "simulation.integrator": "galpha"},
                   2.0, 0.1)
    row = run_row(spec)
    assert row["status"] == "diverged", row
    assert "diverged" in row["error"]
    assert math.isnan(row["peak_base_moment_Nm"])


def test_every_path_that_steps_is_checked():
    """1, 2: the check is the simulation's own: stepping it one step at a time (a study's
    recorder, a film's frames, a pull's release) stops the runaway as `run` does."""
    sim = Simulation.from_data(_storm_data())
    with pytest.raises(SimulationDiverged):
        for _ in range(100):   # 10 s of simulated time; the willow runs away by 0.3 s
            sim.step(1)
    assert sim.time < 5.0


def test_a_film_of_a_runaway_is_not_written(tmp_path):
    """2: the storm wrote a 91-frame film of the blow-up with exit 0."""
    process = start(["render", "weeping_willow", "--duration", "3", "--size", "64x64", "--out",
                     "storm.mp4", *STORM], tmp_path)
    process.before = set(os.listdir(tmp_path))
    err = check_contract(process, tmp_path, EXIT_DIVERGED, seconds=120)
    assert "diverged" in err


def test_the_bounds_are_made_anew_when_the_loads_change():
    """1, 3: a pull set between steps, or a state changed in place, gives bounds of its own
    (the energy it puts in counted); the bounds before it stay for the loads before it."""
    sim = Simulation(load_preset("two_limbs"))
    sim.step(1)
    guard = sim._guard
    sim.set_external_loads(np.full((sim.tree.n, 3), 10.0))
    assert sim._guard is None
    sim.step(1)
    assert sim._guard is not guard and sim._guard.energy_max > guard.energy_max


# -- 3. an energetic initial state -----------------------------------------------------------------

@pytest.mark.parametrize("assignment", [
    "initial_state[0].angular_velocity=[0,1e5,0]",
    "initial_state[0].rotation_deg=[0,180,0]",
    "tree.limbs[0].rest_rotation_deg=[1e300,0,0]",
])
def test_an_energetic_or_wrapped_initial_state_is_refused(treedyn, assignment):
    """3: 1e5 rad/s ran with exit 0 at 1.6e4 rad/s; 180° wrapped the spring's potential."""
    err = treedyn(["run", "two_limbs", "--duration", "0.1", "--set", assignment])
    assert "must be" in err


def test_a_quarter_turn_does_not_gain_energy():
    """3: at the initial rotation's limit the spring's potential is the turn's, not wrapped:
    in still air the damped tree only loses energy (180° gained 8 J in the first frame)."""
    data = apply_overrides(load_preset("two_limbs").data,
                           ["initial_state=[{limb: A, rotation_deg: [0, 90, 0]}]"])
    sim = Simulation.from_data(data)
    energy = [sim.energy()]
    for _ in range(30):
        sim.step(4)
        energy.append(sim.energy())
    assert max(energy[1:]) <= energy[0] + 1e-6 * abs(energy[0])


def test_joint_rates_are_bounded_whatever_the_energy():
    """3: whatever energy the start holds, no joint turns faster than 1e4 rad/s."""
    from treedyn_core.dynamics.divergence import MAX_JOINT_RATE, DivergenceGuard

    sim = Simulation(load_preset("two_limbs"))
    sim.v[:] = 100.0
    sim.state_changed()
    assert (DivergenceGuard(sim).rate_max <= MAX_JOINT_RATE).all()


# -- 4. pull ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["--direction", "nan"], "finite"),
    (["--direction", "inf"], "finite"),
    (["--force", "1e-9", "--release"], "at least"),
])
def test_pull_refuses_what_it_cannot_measure(treedyn, args, words):
    """4: NaN everywhere and invalid JSON, a math domain error, a release fitted on noise."""
    err = treedyn(["pull", "young_oak", "--height", "1.5", "--json", *args])
    assert words in err


def test_pull_json_is_json():
    """4: a figure that is not finite is null, never NaN."""
    from treedyn_core.analysis.pull import PullResult, format_json

    result = PullResult(1.0, 1.0, 0.0, 1e-3, 0.1, 10.0, 1e6, math.nan, math.inf)
    values = format_json(result)
    assert values["frequency_hz"] is None and values["damping_ratio"] is None


# -- 5. the wind's cap -----------------------------------------------------------------------------

def test_the_profile_cannot_bypass_the_wind_cap(treedyn):
    """5: reference_height 1e-3 m and exponent 1 gave 451,458 m/s at the crown top."""
    err = treedyn(["run", "young_oak", "--duration", "0.1", "--set",
                   "wind.reference_height=1e-3", "--set", "wind.profile_exponent=1"])
    assert "m/s" in err and "highest point" in err


def test_a_slider_cannot_bypass_the_wind_cap():
    """5: the app's speed passes the same check as the preset's."""
    data = apply_overrides(load_preset("young_oak").data,
                           ["wind.reference_height=2", "wind.profile_exponent=1"])
    sim = Simulation.from_data(data)
    with pytest.raises(TreedynError, match="highest point"):
        sim.set_wind_speed(60.0)


# -- 6. a study's folder is held -------------------------------------------------------------------

def test_a_second_study_on_a_held_folder_is_refused(tmp_path):
    """6: two studies on one folder wrote 24 rows for 12 runs."""
    from treedyn_core.studies.study_file import load_study
    from treedyn_core.studies.results import ResultsFolder

    path = tmp_path / "s.yaml"
    path.write_text("study: s\npreset: two_limbs\nduration: 0.1\ngrid:\n  wind.speed: [1, 2]\n")
    study = load_study(path)
    first = ResultsFolder(tmp_path / "out", study)
    first.open()
    try:
        with pytest.raises(TreedynError, match=f"in use by another treedyn study \\(pid {os.getpid()}"):
            ResultsFolder(tmp_path / "out", study).open()
    finally:
        first.close()
    ResultsFolder(tmp_path / "out", study).open()   # free again


# -- 7. limits before allocation -------------------------------------------------------------------

def test_limits_are_checked_before_any_work(treedyn, tmp_path):
    """7: --workers 1e6 grew the client by 6 MB/s; 1e8 samples took 7.8 GB before the limit;
    a film of 1e300 s; Poisson's ratio near −1 ran 42 s into an ARPACK traceback."""
    study = tmp_path / "s.yaml"
    study.write_text("study: s\npreset: two_limbs\nduration: 0.1\nsamples:\n  count: 100000000\n"
                     "  axes:\n    wind.speed: {from: 0, to: 10}\n")
    start_time = time.monotonic()
    assert "samples.count" in treedyn(["study", str(study)], seconds=20)
    study.write_text("study: s\npreset: two_limbs\nduration: 0.1\ngrid:\n  wind.speed: [1]\n")
    assert "--workers" in treedyn(["study", str(study), "--workers", "1000000"], seconds=20)
    assert "frames" in treedyn(["render", "two_limbs", "--duration", "1e300", "--out", "x.mp4"])
    assert "poisson_ratio" in treedyn(["modes", "two_limbs", "--set",
                                       "material.poisson_ratio=-0.9999999999"])
    assert "--repeat" in treedyn(["bench", "--repeat", "1000000"])
    assert time.monotonic() - start_time < 60.0


# -- 8. export trusts its NPZ ----------------------------------------------------------------------

def _broken_runs(arrays: dict) -> dict:
    """name → arrays of a run broken in one way each (the probe's list)."""
    t, C = arrays["t"], arrays["C_IF"]

    def but(**changes):
        return {**arrays, **changes}

    return {
        "zero frames": but(t=t[:0], C_IF=C[:0], base=arrays["base"][:0], tip=arrays["tip"][:0]),
        "C_IF shape": but(C_IF=C[:, :, :2]),
        "NaN in C_IF": but(C_IF=np.where(True, np.nan, C)),
        "NaN in t": but(t=np.where(np.arange(t.size) == 1, np.nan, t)),
        "NaN in radius": but(radius=np.full_like(arrays["radius"], np.nan)),
        "t decreasing": but(t=t[::-1].copy()),
        "t constant": but(t=np.zeros_like(t)),
        "t short": but(t=t[:-1]),
        "parent cycle": but(parent=np.array([1, 0])),
        "self-parent": but(parent=np.array([-1, 1])),
        "parent out of range": but(parent=np.array([-1, 7])),
        "not a rotation": but(C_IF=2.0 * C),
        "negative radius": but(radius=-arrays["radius"]),
        "NaN colour": but(foliage_colour=np.array([np.nan, 0.0, 0.0])),
    }


def test_export_refuses_every_broken_run(treedyn, tmp_path):
    """8: these gave tracebacks, or an invalid glTF with exit 0."""
    treedyn(["run", "two_limbs", "--duration", "0.2", "--out", "r.npz"], EXIT_OK, leave={"r.npz"})
    arrays = dict(np.load(tmp_path / "r.npz"))
    for name, broken in _broken_runs(arrays).items():
        np.savez(tmp_path / "b.npz", **broken)
        err = treedyn(["export", "b.npz", "out.glb"], leave={"r.npz", "b.npz"})
        assert "b.npz" in err, (name, err)
    whole = (tmp_path / "r.npz").read_bytes()
    for name, blob in {"truncated": whole[:len(whole) // 2], "empty": b""}.items():
        (tmp_path / "b.npz").write_bytes(blob)
        err = treedyn(["export", "b.npz", "out.glb"], leave={"r.npz", "b.npz"})
        assert "cannot read" in err, (name, err)


# -- 9. tracebacks ---------------------------------------------------------------------------------

LONG = "a" * 300


@pytest.mark.parametrize("args", [
    ["run", f"{LONG}.yaml", "--duration", "1"],
    ["run", "two_limbs", "--duration", "0.1", "--out", f"{LONG}.npz"],
    ["modes", f"{LONG}.yaml"],
    ["expand", "two_limbs", f"{LONG}.yaml"],
    ["render", "two_limbs", "--duration", "0.1", "--out", f"{LONG}.mp4"],
    ["study", f"{LONG}.yaml"],
])
def test_a_name_too_long_is_one_line(treedyn, args):
    """9: ENAMETOOLONG was a traceback in every command; the name is shown clipped."""
    err = treedyn(args)
    assert LONG not in err and "characters" in err


def test_a_broken_study_folder_is_one_line(treedyn, tmp_path):
    """9: a corrupt study.json, a foreign part file."""
    study = tmp_path / "s.yaml"
    study.write_text("study: s\npreset: two_limbs\nduration: 0.1\ngrid:\n  wind.speed: [1]\n")
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "study.json").write_text("{not json")
    assert "study.json" in treedyn(["study", "s.yaml", "--out", "o"])
    (tmp_path / "o" / "study.json").unlink()
    treedyn(["study", "s.yaml", "--out", "o", "--workers", "1"], EXIT_OK, seconds=120)
    (tmp_path / "o" / "results.parquet" / "part-0.parquet").write_bytes(b"PAR1 not parquet")
    assert "part-0.parquet" in treedyn(["study", "s.yaml", "--out", "o"])


def test_closed_standard_output_is_one_line(tmp_path):
    """9: `treedyn modes two_limbs >&-` was a traceback."""
    process = subprocess.Popen([sys.executable, "-m", "treedyn_core", "modes", "two_limbs"],
                               cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                               stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    process.before = set(os.listdir(tmp_path))
    assert "standard output" in check_contract(process, tmp_path, EXIT_BAD_INPUT)


def test_a_juvenile_core_without_stiffness_is_refused(treedyn):
    """9: a modulus ratio of 1e-300 divided by zero."""
    err = treedyn(["modes", "sapling", "--set", "tree.generator.stem_form=0.5", "--set",
                   "tree.generator.juvenile_radius=0.01", "--set",
                   "tree.generator.juvenile_modulus_ratio=1e-300"])
    assert "juvenile_modulus_ratio" in err


# -- 10. wrong or unclear words --------------------------------------------------------------------

def test_the_last_state_is_saved(treedyn, tmp_path):
    """10: --every 100 on a 1 s run said "simulated 0.833 s"."""
    err = treedyn(["run", "two_limbs", "--duration", "1", "--every", "100", "--out", "r.npz"],
                  EXIT_OK, leave={"r.npz"})
    assert err == ""
    t = np.load(tmp_path / "r.npz")["t"]
    assert t[-1] == pytest.approx(1.0) and t[0] == 0.0


@pytest.mark.parametrize("args, words", [
    (["--atol", "5e-324", "--integrator", "dop853"], "--atol"),
    (["--out", "d.npz"], "folder"),
    (["--set", "tree.generator.fork_height=2"], "stem_form"),
])
def test_bad_options_are_refused_before_the_run(treedyn, tmp_path, args, words):
    """10: --atol 5e-324 read as divergence, a folder as --out refused after the run,
    fork_height without a tapered stem silently ignored."""
    (tmp_path / "d.npz").mkdir()
    preset = "sapling" if "fork_height" in " ".join(args) else "two_limbs"
    assert words in treedyn(["run", preset, "--duration", "0.1", *args], leave={"d.npz"})


def test_a_far_root_is_not_a_divergence(treedyn, tmp_path):
    """10: a legal root_position of 5e5 m was reported as divergence at t = 0."""
    treedyn(["run", "two_limbs", "--duration", "0.2", "--set", "root_position=[0,0,5e5]",
             "--out", "r.npz"], EXIT_OK, leave={"r.npz"})


def test_both_outputs_or_neither(tmp_path, monkeypatch):
    """10: `--out ok.npz --gltf` into a full disk exited 2 but left ok.npz: the second file's
    failure (here its sync, as a full disk's) leaves neither, nor a temporary file."""
    from treedyn_core import output_file

    syncs = iter([None, OSError(28, "No space left on device")])

    def sync(name):
        error = next(syncs)
        if error:
            raise error

    monkeypatch.setattr(output_file, "_sync", sync)
    with pytest.raises(TreedynError, match="No space"):
        output_file.write_together([(tmp_path / "ok.npz", lambda n: open(n, "wb").close()),
                                    (tmp_path / "x.glb", lambda n: open(n, "wb").close())])
    assert os.listdir(tmp_path) == []


def test_a_sigterm_after_the_run_is_not_a_silent_kill(tmp_path):
    """10: a SIGTERM just after a finished run exited −15 with no message."""
    process = start(["run", "two_limbs", "--duration", "0.3", "--out", "t.npz"], tmp_path)
    line = process.stdout.readline()
    assert line.startswith("simulated")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode in (EXIT_OK, 143), (process.returncode, err)
    assert process.returncode == EXIT_OK or "terminated" in err


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    """10: a SIGKILL mid-write left .out.npz.*.tmp that later runs never cleaned."""
    from treedyn_core.output_file import temporary_name, write_bytes_atomically

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / temporary_name(tmp_path / "out.npz").replace(str(os.getpid()),
                                                                    str(dead.pid), 1)
    stale.write_bytes(b"half")
    mine = tmp_path / temporary_name(tmp_path / "other.npz")   # this process's: in progress
    mine.write_bytes(b"busy")
    write_bytes_atomically(tmp_path / "out.npz", b"whole")
    assert sorted(os.listdir(tmp_path)) == sorted([mine.name, "out.npz"])
