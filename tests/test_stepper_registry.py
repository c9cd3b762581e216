"""The registry of steppers (`integrators.registry`) is the one list of integrator names: the
schema spells it, the command line, the app and `Simulation` take their choices from it, and
every name steps."""

from __future__ import annotations

import numpy as np
import pytest

from treedyn_core.cli import _parsers
from treedyn_core.integrators.registry import (IMPLICIT_INTEGRATORS, INTEGRATORS,
                                               LIVE_INTEGRATORS, STEPPERS)
from treedyn_core.model.preset import load_preset
from treedyn_core.model.schema import SIMULATION
from treedyn_core.simulation import Simulation


def test_the_schema_spells_the_registry():
    field = SIMULATION["integrator"]
    assert field.choices == INTEGRATORS and field.default == INTEGRATORS[0]


def test_the_command_line_offers_the_registry():
    action = next(a for a in _parsers()["run"]._actions if "--integrator" in a.option_strings)
    assert tuple(action.choices) == INTEGRATORS
    for stepper in STEPPERS.values():
        assert stepper.summary in action.help


def test_simulation_dispatches_every_compiled_stepper_and_only_those():
    assert set(Simulation._COMPILED_STEPS) == set(LIVE_INTEGRATORS)
    assert set(IMPLICIT_INTEGRATORS) <= set(LIVE_INTEGRATORS) < set(INTEGRATORS)


@pytest.mark.parametrize("name", INTEGRATORS)
def test_every_registered_stepper_steps(name):
    sim = Simulation(load_preset("two_limbs"), integrator=name, dt=1e-4)  # within rk4's limit
    before = sim.q.copy()
    sim.step(6)
    assert sim.time == pytest.approx(6 * sim.dt) and sim.integrator == name
    assert np.all(np.isfinite(sim.q)) and not np.array_equal(sim.q, before)


def test_the_app_offers_the_live_steppers():
    from treedyn_app.main_window import OFFERED_INTEGRATORS

    assert OFFERED_INTEGRATORS == LIVE_INTEGRATORS
