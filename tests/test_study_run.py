"""One study run without Dask: its outputs against `treedyn run --probe`'s arrays, and
failures that become rows."""

import json
import math

import numpy as np
import pytest

from treedyn_core.preset import apply_overrides, load_preset
from treedyn_core.run import simulate
from treedyn_core.simulation import Simulation
from treedyn_core.study_run import OUTPUTS, RunSpec, run_row, sway_frequency


def _spec(params, duration=0.5, fixed=None, dt=None, preset="sapling"):
    path = str(load_preset(preset).path)
    return RunSpec(0, "k", path, json.dumps(fixed or {}), params, duration, dt)


def test_peaks_are_those_of_run_probe_at_every_step():
    params = {"wind.speed": 18.0, "wind.seed": 3}
    row = run_row(_spec(params))
    assert row["status"] == "ok" and row["error"] is None
    data = apply_overrides(load_preset("sapling").data, ["wind.speed=18", "wind.seed=3"])
    probed = simulate(Simulation.from_data(data), 0.5, every=1, probe=True).arrays
    moment = np.linalg.norm(probed["base_moment"], axis=1)
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


def test_sway_frequency_finds_the_dominant_oscillation():
    dt = 1 / 120
    t = np.arange(0, 240, dt)
    signal = 0.3 + 0.2 * np.sin(2 * np.pi * 0.35 * t) + 0.02 * np.sin(2 * np.pi * 2.1 * t)
    assert sway_frequency(signal, dt) == pytest.approx(0.35, abs=1 / 60)
    assert math.isnan(sway_frequency(np.zeros(100), dt))
