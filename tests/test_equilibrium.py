"""Start in balance (docs/design.md §6.7): the static equilibrium under gravity and the mean
wind's drag, checked against the Euler–Bernoulli cantilever under a uniform load, against the
dynamics' own accelerations, and by the release transient it removes."""

import copy
import math

import numpy as np
import pytest

from builders import preset_data
from treedyn_core.dynamics.equilibrium import MeanDrag, mean_wind_equilibrium, start_of
from treedyn_core.dynamics.linearise import Configuration
from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation

RADIUS = 0.01            # m
LENGTH = 5.0             # m
YOUNGS_MODULUS = 1.0e10  # Pa (the material default)
DRAG_COEFFICIENT = 1.2
AIR_DENSITY = 1.225      # kg/m³
WIND_SPEED = 0.5         # m/s: tip deflection 0.1 % of the length, the linear beam's range


def _column_in_uniform_wind(n: int) -> Simulation:
    """n equal limbs stacked vertically, no gravity, a uniform wind (no profile, no turbulence)
    along +x: a uniform load q = ½ ρ C_d (2r) U² per metre."""
    limbs = [{"name": f"s{i}", "parent": None if i == 0 else f"s{i - 1}",
              "length": LENGTH / n, "radius": RADIUS} for i in range(n)]
    data = preset_data(limbs, simulation={"gravity": [0.0, 0.0, 0.0], "start": "mean_wind"},
                       wind={"speed": WIND_SPEED, "profile_exponent": 0.0,
                             "turbulence_intensity": 0.0, "drag_coefficient": DRAG_COEFFICIENT,
                             "air_density": AIR_DENSITY})
    return Simulation.from_data(data)


def test_column_in_uniform_wind_bends_as_the_euler_bernoulli_cantilever():
    """Tip deflection q L⁴ / (8 EI), approached at second order in 1/n (docs/design.md §6.4's
    joint stiffness; the lumped drags at the midpoints give each joint its exact moment)."""
    EI = YOUNGS_MODULUS * math.pi * RADIUS**4 / 4.0
    q = 0.5 * AIR_DENSITY * DRAG_COEFFICIENT * 2.0 * RADIUS * WIND_SPEED**2
    exact = q * LENGTH**4 / (8.0 * EI)
    errors = []
    for n in (10, 20, 40):
        sim = _column_in_uniform_wind(n)
        errors.append(sim.tip[-1, 0] / exact - 1.0)
    errors = np.array(errors)
    print("relative errors of the tip deflection, n = 10, 20, 40:", errors)
    assert abs(errors[1]) < 0.005
    orders = np.log2(errors[:-1] / errors[1:])
    print("measured orders:", orders)
    assert np.all(np.abs(orders - 2.0) < 0.3), orders


def _still_air_copy(name: str, **wind) -> dict:
    data = copy.deepcopy(load_preset(name).data)
    data["wind"].update(turbulence_intensity=0.0, **wind)
    return data


def _tip_motion(sim: Simulation, steps: int = 240) -> float:
    """The limbs' tips' largest displacement, m, over `steps` steps of sim from its start."""
    start = sim.tip.copy()
    sim.step(steps)
    return float(np.abs(sim.tip - start).max())


@pytest.mark.parametrize("name", ["young_oak", "conifer", "weeping_willow"])
def test_mean_wind_start_is_an_equilibrium_of_the_dynamics(name):
    """The articulated dynamics (an independent formulation of the same forces: the ABA's
    accelerations, not the statics' generalized forces) hold the start still in a steady wind,
    while the same tree started at rest swings."""
    data = _still_air_copy(name)
    sim = Simulation.from_data(data)
    assert sim.start == "mean_wind"
    still = _tip_motion(sim)
    data["simulation"]["start"] = "rest"
    swing = _tip_motion(Simulation.from_data(data))
    print(f"{name}: largest tip motion in 2 s from the equilibrium {still:.3g} m, "
          f"from rest {swing:.3g} m")
    assert swing > 1e-2 * sim.tree.height
    assert still < 1e-6 * sim.tree.height


def test_equilibrium_residual_is_round_off():
    sim = Simulation(load_preset("old_oak"))
    equilibrium = mean_wind_equilibrium(sim)
    config = Configuration(sim, equilibrium.R_rel)
    drag = MeanDrag(sim).generalized_forces(config)
    residual = config.generalized_forces() + drag
    assert np.abs(residual).max() < 1e-9 * np.abs(drag).max()


def _lurch_ratio(data: dict) -> float:
    """Crown top's largest excursion from its start in the first 1.5 s over its rms about its
    mean after 5 s, of a 20 s run (sampled every 1/30 s)."""
    sim = Simulation.from_data(data)
    top = sim.crown_top()
    times, tops = [], []
    while sim.time < 20.0 - 1e-9:
        times.append(sim.time)
        tops.append(sim.tip[top])
        sim.step(4)
    times, tops = np.array(times), np.array(tops)
    early = np.linalg.norm(tops[times <= 1.5] - tops[0], axis=1).max()
    late = tops[times >= 5.0]
    rms = math.sqrt(((late - late.mean(axis=0)) ** 2).sum(axis=1).mean())
    return early / rms


@pytest.mark.parametrize("model", ["articulated", "seed"])
def test_young_oak_starts_without_a_lurch(model):
    """`treedyn run young_oak --duration 20 [--model seed]`: the first 1.5 s' largest
    excursion ≤ 3.5× the rms after 5 s (from rest: 6.9× articulated, 5.6× seed), each model
    started in its own balance (the seed model's: `seed_equilibrium`)."""
    data = copy.deepcopy(load_preset("young_oak").data)
    data["simulation"]["model"] = model
    balanced = _lurch_ratio(data)
    data["simulation"]["start"] = "rest"
    from_rest = _lurch_ratio(data)
    print(f"{model}: excursion / rms from its mean-wind equilibrium {balanced:.2f}, from rest "
          f"{from_rest:.2f}")
    assert balanced <= 3.5 < from_rest


def test_start_defaults_to_mean_wind_only_for_prestressed_trees_without_initial_state():
    assert start_of(load_preset("young_oak").data) == "mean_wind"
    assert start_of(load_preset("two_limbs").data) == "rest"     # it has an initial_state
    data = copy.deepcopy(load_preset("young_oak").data)
    data["simulation"]["prestress"] = False
    assert start_of(data) == "rest"
    data["simulation"]["start"] = "mean_wind"
    assert start_of(data) == "mean_wind"

