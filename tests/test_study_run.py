"""One study run without Dask: its outputs against `treedyn run --probe`'s arrays, and
failures that become rows."""

import json
import math

import numpy as np
import pytest
from scipy import signal

from treedyn_core.model.preset import apply_overrides, load_preset
from treedyn_core.io.run import simulate
from treedyn_core.simulation import Simulation
from treedyn_core.studies.study_run import OUTPUTS, RunSpec, run_row, sway_frequency


def _spec(params, duration=0.5, fixed=None, dt=None, preset="sapling"):
    path = str(load_preset(preset).path)
    return RunSpec(0, "k", path, json.dumps(fixed or {}), params, duration, dt)


def test_peaks_are_those_of_run_probe_at_every_step():
    params = {"wind.speed": 18.0, "wind.seed": 3}
    row = run_row(_spec(params))
    assert row["status"] == "ok" and row["error"] is None
    data = apply_overrides(load_preset("sapling").data, ["wind.speed=18", "wind.seed=3"])
    probed = simulate(Simulation.from_data(data), 0.5, every=1, probe=True).arrays
    # Each step's moment vector normed as run_row norms it: norm(axis=1) may round the last
    # bit differently from the norm of one vector.
    moment = np.array([np.linalg.norm(vector) for vector in probed["base_moment"]])
    assert row["peak_base_moment_Nm"] == moment.max()          # the same numbers, bit for bit
    assert row["p99_base_moment_Nm"] == np.percentile(moment, 99)
    assert row["peak_aero_force_N"] <= np.linalg.norm(probed["aero_force"], axis=1).max()
    tree = Simulation.from_data(data).tree
    top = int(np.argmax(tree.rest_tip[:, 2]))
    crown = tree.from_preset_order(probed["tip"], axis=1)[:, top]
    distance = np.linalg.norm(crown - tree.rest_tip[top], axis=1)
    assert row["peak_crown_displacement_m"] == pytest.approx(distance.max(), rel=1e-12)
    assert row["wind.speed"] == 18.0 and row["wind.seed"] == 3


def test_a_run_is_a_pure_function_of_its_spec():
    spec = _spec({"wind.speed": 12.0})
    first, second = run_row(spec), run_row(spec)
    assert [first[k] for k in OUTPUTS] == [second[k] for k in OUTPUTS]


def test_a_diverging_run_is_a_row():
    row = run_row(_spec({"simulation.integrator": "rk4"}, duration=0.2, dt=0.05))
    assert row["status"] == "diverged" and "diverged" in row["error"]
    assert all(math.isnan(row[k]) for k in OUTPUTS) and row["wall_s"] > 0


def test_a_failing_run_is_a_row():
    row = run_row(_spec({"wind.speed": 12.0}, preset="sapling",
                        fixed={"tree.limbs[0].parent": "nobody"}))
    assert row["status"] == "failed" and "nobody" in row["error"]


def test_sway_frequency_is_the_resonance_of_an_oscillator_driven_by_slow_gusts():
    # x'' + 2ζω x' + ω² x = F(t)/m, F an Ornstein-Uhlenbeck gust of 8 s time scale: the
    # displacement's spectrum peaks at the gusts' low frequencies, the velocity's at f_n.
    f_n, zeta, dt = 0.4, 0.1, 1 / 120  # ζ: with aerodynamic damping
    omega = 2 * np.pi * f_n
    rng = np.random.default_rng(5)
    n = int(600 / dt)
    gust = np.empty(n)
    gust[0] = 0.0
    decay = np.exp(-dt / 8.0)
    kicks = rng.standard_normal(n) * np.sqrt(1 - decay ** 2)
    for i in range(1, n):
        gust[i] = decay * gust[i - 1] + kicks[i]
    system = signal.lti([1.0], [1.0, 2 * zeta * omega, omega ** 2])
    t = np.arange(n) * dt
    _, x, _ = signal.lsim(system, gust, t)
    f, p = signal.welch(x, fs=1 / dt, nperseg=int(60 / dt))
    assert f[1:][np.argmax(p[1:])] < f_n / 2          # the trap the velocity avoids
    assert sway_frequency(x, dt) == pytest.approx(f_n, abs=1 / 60)
    both = np.column_stack([x, 0.1 * x])
    assert sway_frequency(both, dt) == pytest.approx(f_n, abs=1 / 60)
    assert math.isnan(sway_frequency(np.zeros(100), dt))


def test_series_are_written_when_asked(tmp_path):
    spec = _spec({"wind.speed": 10.0}, duration=0.1)
    row = run_row(RunSpec(**{**spec.__dict__, "series_dir": str(tmp_path)}))
    series = np.load(tmp_path / "k.npz")
    assert row["status"] == "ok"
    assert series["base_moment"].max() == row["peak_base_moment_Nm"]
    assert series["t"].shape == (13,) and series["crown"].shape == (13, 3)  # t = 0 and 12 steps
