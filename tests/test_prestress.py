"""Prestress (docs/design.md §6): the rest pose is the static equilibrium under gravity, so a
prestressed tree in still air does not move; softened after load, it sags."""

import copy

import numpy as np
import pytest

from treedyn_core.model.preset import load_preset, shipped_presets
from treedyn_core.simulation import Simulation

DURATION = 5.0  # s
# Equilibrium is solved to round-off per joint; 1e-6 of the height leaves room for the
# accumulation of round-off over 600 steps and nothing else.
STILL = 1e-6
# Softened, a tree sags by orders of magnitude more: its branches by centimetres (a conifer's
# straight stem, loaded along its axis, hardly at all).
SAGS = 1e-4


def _released_from_rest(name: str, model: str = "articulated") -> Simulation:
    data = copy.deepcopy(load_preset(name).data)
    data["initial_state"] = []
    data["wind"].update(speed=0.0, drag_coefficient=0.0, leaf_drag_coefficient=0.0)
    data["simulation"].update(model=model, integrator="implicit", prestress=True)
    return Simulation.from_data(data)


def _largest_motion(sim: Simulation) -> float:
    start = sim.tip.copy()
    largest = 0.0
    for _ in range(10):
        sim.step(int(round(DURATION / sim.dt / 10)))
        largest = max(largest, np.abs(sim.tip - start).max())
    return largest


@pytest.mark.parametrize("name", sorted(shipped_presets()))
def test_prestressed_preset_stands_still(name):
    sim = _released_from_rest(name)
    assert _largest_motion(sim) < STILL * sim.tree.height


@pytest.mark.parametrize("name", sorted(set(shipped_presets()) - {"giant"}))
def test_softened_after_load_the_tree_sags(name):
    sim = _released_from_rest(name)
    sim.set_stiffness_scale(0.5)
    start = sim.tip.copy()
    sim.step(int(round(sim.eased_by / sim.dt)))   # the softening eases in (design.md §2.1)
    assert np.abs(sim.tip - start).max() > SAGS * sim.tree.height


def test_prestress_follows_the_stiffness_scale_at_reset():
    """Reset recomputes the prestress with the scale in force: the softened tree stands still."""
    sim = _released_from_rest("young_oak")
    sim.set_stiffness_scale(0.5)
    sim.reset()
    assert _largest_motion(sim) < STILL * sim.tree.height


def test_saved_after_softening_loads_to_the_same_simulation(tmp_path):
    """docs/design.md §6: the prestress is not recomputed when the stiffness moves; a save bakes the
    springs' rest rotations in force in, so the file runs like the live simulation."""
    from treedyn_core.model.preset import save_preset

    # from rest: the live run's start is its equilibrium at the scale it was loaded with, the
    # file's the equilibrium at the scale it is saved with
    preset = load_preset("young_oak")
    preset.data["simulation"]["start"] = "rest"
    sim = Simulation(preset)
    sim.set_stiffness_scale(0.5)
    sim.end_eases()
    path = tmp_path / "softened.yaml"
    save_preset(sim.preset_data(), path)
    loaded = Simulation(load_preset(path))
    assert loaded.data["simulation"]["prestress"] is False
    sim.step(240)
    loaded.step(240)
    assert np.abs(loaded.tip - sim.tip).max() <= 1e-9 * sim.tree.height
    assert np.abs(sim.tip - sim.tree.rest_tip).max() > SAGS * sim.tree.height  # it did sag
