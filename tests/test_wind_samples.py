"""The step's samples of the wind (docs/performance.md §3, `wind.plan_samples`): the slow modes
interpolated in time, the rest summed at every step, against the field itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treedyn_core.bench.performance import tree_of_size
from treedyn_core.dynamics.wind import (SLOW, SLOW_INTERVAL, SLOW_PHASE, PLAN_SIZE,
                                        wind_velocity)
from treedyn_core.simulation import Simulation

# rms and largest difference between the step's samples and the field, over the crown's
# midpoints and 3 s of steps, as fractions of σ_u. Linear interpolation of a slow mode errs
# by at most θ²/8 = 3.1 % of its amplitude; the samples' rms came out 0.2–0.4 % of σ_u at
# 6–30 m/s (docs/performance.md §3), the largest 1.1–1.8 %.
RMS_BOUND = 0.01
LARGEST_BOUND = 0.04


def _run(speed, integrator="implicit", seconds=3.0, changes=None):
    """Differences (steps, N, 3) m/s between the step's samples and the field at the same
    points and times, σ_u (m/s), and the number of slow modes at each step."""
    data = tree_of_size(300)
    data["wind"].update(speed=speed, turbulence_intensity=0.3)
    sim = Simulation.from_data(data, integrator=integrator)
    if integrator == "rk4":
        sim.dt = sim.rk4_stable_dt()
    wind, w = sim.wind, sim.workspace
    exact_plan = np.zeros(PLAN_SIZE)
    differences, slow = [], []
    steps = int(round(seconds / sim.dt))
    for step in range(steps):
        if changes and step in changes:
            changes[step](wind)
        state = wind.state.copy()
        sim.step(1)
        exact = np.empty_like(w.mid)
        wind_velocity(w.mid, state, wind.reference_height, wind.profile_exponent, wind.mode_k,
                      wind.mode_amp, wind.mode_phase, np.empty((7, wind.mode_phase.size)),
                      wind.canopy, exact)
        differences.append(w.wind_at_mid - exact)
        slow.append(sim.air().wind.plan[SLOW])
    return np.array(differences), wind.sigma_u(), np.array(slow)


@pytest.mark.parametrize("speed", [6.0, 30.0])
def test_the_steps_samples_follow_the_field(speed):
    differences, sigma, slow = _run(speed)
    rms = math.sqrt(np.mean(np.sum(differences ** 2, axis=-1)) / 3) / sigma
    largest = np.abs(differences).max() / sigma
    assert rms <= RMS_BOUND and largest <= LARGEST_BOUND, (rms, largest)
    assert differences[0].max() == 0.0 or np.abs(differences[0]).max() < 1e-12 * sigma
    # and most modes are slow: fewer than half are summed at each step
    modes = 64
    assert np.median(slow) > modes / 2


def test_rk4s_stages_share_the_steps_samples():
    differences, sigma, slow = _run(6.0, "rk4", seconds=0.3)
    assert math.sqrt(np.mean(differences ** 2)) / sigma <= RMS_BOUND
    assert slow[-1] > 0


def test_a_turn_sums_every_mode_and_a_change_of_speed_stays_close():
    """While the wind turns (1 s), every mode is summed (the samples are the field's); a speed
    ramp keeps the samples within the bounds."""
    step = 120   # 1 s
    changes = {step: lambda wind: wind.set_direction(60.0),
               3 * step: lambda wind: wind.set_speed(14.0)}
    differences, sigma, slow = _run(6.0, seconds=5.0, changes=changes)
    turning = slice(step + 1, 2 * step - 1)
    assert np.all(slow[turning] == 0)
    assert np.abs(differences[turning]).max() < 1e-9 * sigma
    assert np.abs(differences).max() / sigma <= LARGEST_BOUND
    assert np.all(slow[2 * step + 2:3 * step] > 0)


def test_a_reset_samples_afresh():
    data = tree_of_size(100)
    sim = Simulation.from_data(data)
    sim.step(30)
    sim.reset()
    sim.step(1)
    w, wind = sim.workspace, sim.wind
    assert sim.air().wind.plan[SLOW] == 0   # the first sample after a reset: every mode


def test_the_interval_keeps_the_slow_modes_phase_within_theta():
    """The slow modes are those whose phase at a point moves by at most θ in an interval, but
    for the fewest that make the others a multiple of 8 (a vectorised loop's width)."""
    data = tree_of_size(100)
    sim = Simulation.from_data(data)
    sim.step(3)
    wind = sim.air().wind
    slow = int(wind.plan[SLOW])
    speed = sim.wind.speed
    k_x = sim.wind.mode_k[0]
    assert np.all(k_x[:slow] * speed * SLOW_INTERVAL <= SLOW_PHASE)
    assert (len(k_x) - slow) % 8 == 0
    assert k_x[min(slow + 8, len(k_x) - 1)] * speed * SLOW_INTERVAL > SLOW_PHASE
