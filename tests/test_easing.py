"""Slider changes that cannot inject energy (docs/design.md §2.1): a stiffness change hands
over with the springs' torques unchanged and eases in over a few sway periods; damping eases
in over 0.3 s."""

import copy

import numpy as np
import pytest

from treedyn_core.dynamics import easing
from treedyn_core.numerics import so3
from treedyn_core.dynamics.equilibrium import mean_wind_equilibrium
from treedyn_core.analysis.modes import modes
from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation

def _bent_softened(name: str) -> Simulation:
    """The preset in a steady wind (no turbulence) softened to ×0.1, at rest in its static
    equilibrium there: bent ten times as far as at ×1 (a swinging tree's moment grows with
    √stiffness at the same kinetic energy: that is physics, not an injection)."""
    data = copy.deepcopy(load_preset(name).data)
    data["wind"]["turbulence_intensity"] = 0.0
    sim = Simulation.from_data(data)
    sim.set_stiffness_scale(0.1)
    q = so3.quats_from_matrices(mean_wind_equilibrium(_settled(sim)).R_rel)
    sim.restore_state((q, np.zeros_like(sim.v), sim.time, sim.wind.state, sim.spring_C_rel))
    return sim


def _settled(sim: Simulation) -> Simulation:
    """sim with its eases ended (the springs and scales set in force)."""
    sim.restore_state(sim.saved_state())
    return sim


def _steady_base_moment(sim: Simulation) -> float:
    """|base moment| N m at the static equilibrium under the mean wind of the springs and
    scale now set (the value the run settles to)."""
    static = Simulation.from_data(sim.data)
    static.set_stiffness_scale(sim.stiffness_scale)
    static.restore_state(sim.saved_state())          # the set springs, no ease in force
    static.q[:] = so3.quats_from_matrices(mean_wind_equilibrium(static).R_rel)
    static.v[:] = 0.0
    static.state_changed()
    return float(np.linalg.norm(static.root_moment()))


def _peak_base_moment(sim: Simulation, duration: float) -> float:
    peak = 0.0
    for _ in range(int(round(duration / sim.dt))):
        sim.step(1)
        peak = max(peak, float(np.linalg.norm(sim.root_moment())))
    return peak


def test_stiffness_jump_while_bent_gives_no_base_moment_spike(monkeypatch):
    """×0.1 → ×10 on young_oak bent by the wind: the base moment stays below twice its steady
    value; applied at once (no ease), the same jump gives many times it."""
    sim = _bent_softened("young_oak")
    before = float(np.linalg.norm(sim.root_moment()))
    sim.set_stiffness_scale(10.0)
    handed_over = float(np.linalg.norm(sim.root_moment()))
    steady = _steady_base_moment(sim)
    peak = _peak_base_moment(sim, sim.eases.stiffness.duration + 2.0)

    monkeypatch.setattr("treedyn_core.dynamics.easing.ease_time", lambda *args: 0.0)
    at_once = _bent_softened("young_oak")
    at_once.set_stiffness_scale(10.0)
    at_once.step(1)
    spike = _peak_base_moment(at_once, 2.0)
    print(f"base moment: before {before:.4g}, just after the change {handed_over:.4g}, steady "
          f"{steady:.4g}, peak {peak:.4g} N m ({peak / steady:.2f}×); at once {spike:.4g} N m "
          f"({spike / steady:.1f}×)")
    assert handed_over == pytest.approx(before, rel=0.02)      # the torque carries on
    assert peak < 2.0 * steady
    assert spike > 5.0 * steady


def test_softening_while_bent_stays_below_twice_the_steady_moment():
    sim = _bent_softened("young_oak")
    sim.set_stiffness_scale(10.0)
    sim.step(int(round((sim.eases.stiffness.duration + 3.0) / sim.dt)))
    sim.set_stiffness_scale(0.1)
    steady = _steady_base_moment(sim)
    peak = _peak_base_moment(sim, sim.eases.stiffness.duration + 4.0)
    print(f"softening ×10 → ×0.1: steady {steady:.4g}, peak {peak:.4g} N m")
    assert peak < 2.0 * steady


def test_stiffening_removes_energy_at_the_handover():
    """The spring energy after the handover is s₁/s₂ times the one before (module docstring)."""
    sim = _bent_softened("young_oak")
    _, _, spring_before = sim.energies()
    sim.set_stiffness_scale(10.0)
    _, _, spring_after = sim.energies()
    assert spring_after == pytest.approx(0.01 * spring_before, rel=0.02)


def test_damping_eases_geometrically_over_a_third_of_a_second():
    sim = Simulation(load_preset("sapling"))
    sim.set_damping_scale(4.0)
    values = []
    while sim.time < easing.DAMPING_EASE_TIME + 0.05:
        values.append(sim.damping_in_force)
        sim.step(1)
    assert values[0] == 1.0
    assert np.all(np.diff(values) >= 0.0)
    assert sim.damping_in_force == 4.0
    assert 1.9 < np.interp(0.5 * easing.DAMPING_EASE_TIME, np.arange(len(values)) * sim.dt,
                           values) < 2.1                    # √(1·4) halfway


def test_slowest_period_estimate_bounds_the_modes_from_above():
    sim = Simulation(load_preset("sapling"))
    true_period = 1.0 / modes(sim, count=1).frequencies_hz[0]
    estimate = easing.slowest_period(sim.tree, 1.0)
    print(f"sapling: slowest period {true_period:.3f} s, estimate {estimate:.3f} s")
    assert true_period <= estimate < 2.0 * true_period
    assert easing.slowest_period(sim.tree, 4.0) == pytest.approx(0.5 * estimate)


def test_slider_eases_ramp_the_rest_rotations_back_to_the_springs_own():
    """`SliderEases` on its own: at the handover the rest rotations are the springs' own moved
    by the offsets, at the ramp's end the springs' own (and then nothing to apply); a second
    change during the ramp composes with it; the damping scale follows its ease."""
    tree = Simulation(load_preset("sapling")).tree
    own = tree.spring_C_rel
    eases = easing.SliderEases(tree)
    theta = np.random.default_rng(3).normal(scale=0.05, size=(tree.n, 3))
    eases.ease_stiffness(theta, 1.0, 2.0, 1.0)
    ramp = eases.stiffness
    end = eases.end_time(1.0)
    assert end == pytest.approx(1.0 + ramp.duration)
    assert ramp.duration >= easing.MIN_EASE_TIME
    np.testing.assert_allclose(eases.advance(own, 1.0),
                               own @ so3.exp_many(easing.handover_offsets(theta, 1.0, 2.0)),
                               atol=1e-14)
    halfway = 1.0 + 0.5 * ramp.duration
    eases.ease_stiffness(np.zeros_like(theta), 2.0, 3.0, halfway)   # nothing bent: no offset
    np.testing.assert_allclose(eases.stiffness.offsets, 0.5 * ramp.offsets, atol=1e-12)
    assert eases.advance(own, eases.end_time(halfway)) is own
    assert eases.advance(own, eases.end_time(halfway)) is None and not eases.under_way

    eases.ease_damping(4.0, 0.0, 1.0)
    assert eases.damping_scale(4.0, 0.0) == 1.0
    assert eases.damping_scale(4.0, 0.5 * easing.DAMPING_EASE_TIME) == pytest.approx(2.0)
    assert eases.advance(own, easing.DAMPING_EASE_TIME) is None and not eases.under_way
    assert eases.damping_scale(4.0, easing.DAMPING_EASE_TIME) == 4.0


def test_seed_model_eases_its_springs_too():
    """The seed model steps with the rest rotations in force (`Simulation.spring_C_in_force`):
    ×0.1 → ×10 on young_oak bent by a steady wind stays below twice the settled base moment
    (66× when it read the new prestress at once)."""
    data = copy.deepcopy(load_preset("young_oak").data)
    data["wind"]["turbulence_intensity"] = 0.0
    data["simulation"]["model"] = "seed"
    sim = Simulation.from_data(data)
    sim.set_stiffness_scale(0.1)
    sim.end_eases()
    sim.reset()                                   # in the seed model's balance at ×0.1
    sim.set_stiffness_scale(10.0)
    peak = _peak_base_moment(sim, sim.eases.stiffness.duration + 2.0)
    for _ in range(int(round(20.0 / sim.dt))):    # settled: the seed model's own steady moment
        sim.step(1)
    steady = float(np.linalg.norm(sim.root_moment()))
    assert peak < 2.0 * steady, (peak, steady)
