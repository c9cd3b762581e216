"""Generalized-α (`steppers.galpha_steps`, docs/design.md §4) against what cannot be tuned:
Chung & Hulbert's amplification matrix on a linear oscillator, the convergence order against
RK4 at a tiny step, and the numerical damping of free decays as `bench accuracy` measures it.
(The dense reference step is in `test_step_reference.py`.)"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from physics_cases import convergence_orders, random_tree_simulation, two_limb_simulation
from treedyn_core.bench import accuracy as bench
from treedyn_core.errors import TreedynError
from treedyn_core.integrators.steppers import (GALPHA_CONTROL, ITERATIONS, RESTARTS, SUB_STEPS,
                                               UNCONVERGED, galpha_coefficients)
from treedyn_core.model.preset import load_preset, shipped_presets
from treedyn_core.model.schema import SIMULATION
from treedyn_core.simulation import Simulation


@pytest.mark.parametrize("rho_inf", [0.0, 0.3, 0.6, 1.0])
def test_coefficients_give_the_spectral_radius_at_infinity(rho_inf):
    """Chung & Hulbert's parameters: γ = ½ + α_f − α_m (second order), the spectral radius
    ρ∞ at ωh → ∞ and 1 at ωh → 0, and never above 1 in between (unconditional stability)."""
    alpha_m, alpha_f, beta, gamma = galpha_coefficients(rho_inf)
    assert gamma == pytest.approx(0.5 + alpha_f - alpha_m, abs=1e-15)
    assert beta == pytest.approx(0.25 * (1.0 - alpha_m + alpha_f) ** 2, abs=1e-15)
    # the two roots meet at −ρ∞ as ωh → ∞ (a defective pair: eigvals has √ε-size errors)
    assert bench.galpha_spectrum(1e6, rho_inf)[2] == pytest.approx(rho_inf, abs=1e-3)
    radii = [bench.galpha_spectrum(wh, rho_inf)[2] for wh in np.geomspace(1e-3, 1e3, 61)]
    assert max(radii) <= 1.0 + 1e-12
    assert radii[0] == pytest.approx(1.0, abs=1e-8)


def _principal_root(x: np.ndarray) -> complex:
    """The root z of x_{n+1} = 2 Re(z) x_n − |z|² x_{n−1} fitted to a sampled damped
    oscillation by least squares (Prony's method with one pair of roots): exact when the
    samples are Re(c zⁿ)."""
    design = np.column_stack([x[1:-1], -x[:-2]])
    (trace, det), *_ = np.linalg.lstsq(design, x[2:], rcond=None)
    return complex(np.roots([1.0, -trace, det])[0])


# A 5 % match of damping and period error (the tolerance); the comparison is in fact
# exact to round-off (measured 1e-6 … 1e-4 relative), as the limb is a linear oscillator (its
# spring torque is exactly −kθ about a fixed principal axis) and one Newton iteration solves
# a linear step exactly.
CHUNG_HULBERT_TOL = 0.05


@pytest.mark.parametrize("omega_h", [0.3, 0.8, 2.0])
def test_single_limb_damping_and_period_follow_chung_and_hulbert(omega_h):
    omega = bench.single_limb_frequency("articulated")
    dt = omega_h / omega
    # 12 periods, and at least 200 steps
    t, angle, _, sim = bench.single_limb_history("articulated", "galpha", dt,
                                                 max(12.0, 200 * omega_h / (2 * math.pi)))
    assert sim.rho_inf == bench.RHO_INF == SIMULATION["rho_inf"].default
    # after the spurious root (|λ₃| ≤ ρ∞ per step) has died out
    z = _principal_root(angle[40:])
    measured_damping = -math.log(abs(z)) / abs(np.angle(z))
    measured_period = omega_h / abs(np.angle(z)) - 1.0   # against the exact ω = sqrt(k/J)
    damping, period, _ = bench.galpha_spectrum(omega_h, sim.rho_inf)
    print(f"ωh {omega_h}: ζ̄ {measured_damping:.4e} (formula {damping:.4e}), period error "
          f"{measured_period:.4e} (formula {period:.4e})")
    assert measured_damping == pytest.approx(damping, rel=CHUNG_HULBERT_TOL)
    assert measured_period == pytest.approx(period, rel=CHUNG_HULBERT_TOL)


def _linear_energies(omega_h: float, rho_inf: float, steps: int) -> np.ndarray:
    """Energies (relative to the first) of generalized-α on ẍ = −ω²x released from x = 1 at
    rest, h = 1, started as docs/design.md §4.7 says: v̇ = a = x of (1 + c_q ω²) x = −ω²
    (one Newton iteration about zero references; c_q = β (1 − α_f)/(1 − α_m)). Written from
    Chung & Hulbert's equations: aₙ₊₁ from (1 − α_m) aₙ₊₁ + α_m aₙ = (1 − α_f) v̇ₙ₊₁ + α_f v̇ₙ
    with v̇ₙ₊₁ = −ω² xₙ₊₁, xₙ₊₁ = xₙ + vₙ + (½ − β) aₙ + β aₙ₊₁, vₙ₊₁ = vₙ + (1 − γ) aₙ + γ aₙ₊₁."""
    alpha_m, alpha_f, beta, gamma = galpha_coefficients(rho_inf)
    w2 = omega_h * omega_h
    ratio = (1.0 - alpha_f) / (1.0 - alpha_m)
    x, v = 1.0, 0.0
    vdot = a = -w2 / (1.0 + beta * ratio * w2)
    energies = [0.5 * w2]
    for _ in range(steps):
        known = (alpha_f * vdot - alpha_m * a) / (1.0 - alpha_m)   # aₙ₊₁ = ratio v̇ₙ₊₁ + known
        vdot_new = -w2 * (x + v + (0.5 - beta) * a + beta * known) / (1.0 + w2 * beta * ratio)
        a_new = ratio * vdot_new + known
        x, v = x + v + (0.5 - beta) * a + beta * a_new, v + (1.0 - gamma) * a + gamma * a_new
        vdot, a = vdot_new, a_new
        energies.append(0.5 * (v * v + w2 * x * x))
    return np.array(energies) / energies[0]


@pytest.mark.parametrize("omega_h", [0.3, 35.0])
def test_start_does_not_overshoot_a_stiff_mode(omega_h):
    """The single limb (a linear oscillator) released from rest at ωh = 35, a twist mode of a
    thin limb at 1/30 s: its energy never exceeds the initial one, step by step as the linear
    recurrence with the implicit start says. (Started from the explicit v̇ = a = −ω²x₀ it would hold 2.9×, 3.5×,
    2.7× its energy after steps 1–3.) At ωh = 0.3 the start costs next to nothing."""
    omega = bench.single_limb_frequency("articulated")
    dt = omega_h / omega
    _, _, energy, sim = bench.single_limb_history("articulated", "galpha", dt,
                                                  8 * omega_h / (2 * math.pi))
    expected = _linear_energies(omega_h, sim.rho_inf, len(energy) - 1)
    print("energy / initial:", energy / energy[0], "recurrence:", expected)
    assert energy.max() <= energy[0] * (1.0 + 1e-12)
    # the limb is the linear oscillator (its spring torque is exactly −kθ); 0.5° amplitude
    np.testing.assert_allclose(energy / energy[0], expected, rtol=1e-4, atol=1e-9)


CONVERGENCE_TIME = 0.5       # s
GALPHA_DTS = [1 / 480, 1 / 960, 1 / 1920, 1 / 3840]
# Measured on this tree (ρ∞ = 0.5, `GALPHA_CONTROL`, 2.11–2.15 iterations a step): 1.82,
# 1.90, 1.95 over these steps (errors 3.8e-3 … 7.4e-5 m; converged to 1e-8: 1.84, 1.92, 1.96
# with errors a third as large; two iterations a step: 1.83, 1.92, 1.96; stopping on the
# change alone, to 1e-3: 1.85, 1.92, 1.88, to 1e-2: 1.51, 1.17, 1.64, the number of
# iterations switching between 2 and 3 along the sweep). From 1/240 s the first pair is not
# yet asymptotic (1.72: the implicit start of docs/design.md §4.7 is O(h) off in the
# algorithmic acceleration, which the method's spurious root carries for a few steps).
ORDER = 2.0
ORDER_TOL = 0.3


def test_order_two_on_a_random_tree():
    """Tip positions of a 15-limb random 3-D tree (gravity on, every limb perturbed by 10° and
    1 rad/s) after 0.5 s against RK4 at a quarter of its stability limit (~1e-3 s, error
    below 1e-8 m)."""
    reference = random_tree_simulation(15, 7, integrator="rk4", prestress=False)
    steps = int(math.ceil(CONVERGENCE_TIME / (0.25 * reference.rk4_stable_dt())))
    reference.dt = CONVERGENCE_TIME / steps
    reference.step(steps)
    errors = []
    for dt in GALPHA_DTS:
        sim = random_tree_simulation(15, 7, integrator="galpha", prestress=False, dt=dt)
        sim.step(int(round(CONVERGENCE_TIME / dt)))
        errors.append(np.abs(sim.tip - reference.tip).max())
    orders = convergence_orders(GALPHA_DTS, errors)
    print("errors", errors, "orders", orders)
    assert np.all(np.abs(orders - ORDER) <= ORDER_TOL)


# The energy fit over 12 periods measures ζ to ~5e-5 (the discrete energy's ripple at 2ω);
# the predicted ζ̄ at these steps is 4e-4 and 3.0e-3 (ρ∞ = 0.5), measured 4.19e-4 and 2.89e-3:
# within the 5 % of Chung & Hulbert's value, or 1e-4.
DAMPING_ABS_TOL = 1e-4


@pytest.mark.parametrize("dt", [1 / 30, 1 / 60])
def test_single_limb_numerical_damping(dt):
    measured, predicted = bench.single_limb_damping(dt, integrator="galpha")
    assert measured == pytest.approx(predicted, rel=CHUNG_HULBERT_TOL, abs=DAMPING_ABS_TOL)


# The targets on the sapling's lowest mode (2.4 Hz), damping and wind off.
SAPLING_TARGETS = {1 / 60: 0.002, 1 / 30: 0.005}


@pytest.mark.parametrize("dt", sorted(SAPLING_TARGETS))
def test_sapling_lowest_mode_numerical_damping(dt):
    f, measured, predicted = bench.tree_mode_damping("sapling", dt, integrator="galpha")
    print(f"sapling {f:.2f} Hz, dt {dt:.4f}: ζ {measured:.5f} (linear analysis {predicted:.5f})")
    # measured 8.9e-4 at 1/30 s and 1.2e-4 at 1/60 s, as predicted (the θ-method: 0.052, 0.027)
    assert 0.0 <= measured <= SAPLING_TARGETS[dt]


def test_seed_model_refuses_galpha():
    """The seed model has no Newton iteration about references (docs/design.md §4.7)."""
    with pytest.raises(TreedynError, match="galpha is not available with model seed"):
        two_limb_simulation(integrator="galpha", model="seed")
    sim = two_limb_simulation(model="seed")
    with pytest.raises(TreedynError, match="galpha"):
        sim.set_integrator("galpha")
    assert sim.integrator == "implicit"


ENERGY_DT = 1.0 / 30.0
ENERGY_SECONDS = 60.0
# The giant (10,926 limbs, 35 iterations a frame over the first 15 s, 12 over 60 s) 5 s: it
# passed at 15 and 60 s as well (62 s of the suite at 60 s, 49 s at 15 s); the runaways seen
# began within 0.7 s.
ENERGY_SECONDS_OF = {"giant": 5.0}
PUSH_DEG = 2.0
# No growth beyond round-off of the energy sums (N terms of order the energy scale).
ENERGY_RISE = 1e-6
ENERGY_CHECK_EVERY = 3   # steps


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(shipped_presets()))
def test_energy_never_rises_with_damping_and_drag_off(name):
    """The issue's energy test: damping and drag off, the trunk pushed 2° and released, dt =
    1/30 s, 60 s (the giant 5 s): the energy never rises beyond 1e-6 of the energy scale.
    Undamped, the true motion is violent on the light presets (rk4 at half its stability
    limit: the willow's shoots at 300 rad/s within 0.05 s, 1,000–3,800 rad/s by 1–2 s;
    docs/design.md §4.7),
    which no step of 1/30 s resolves: the method's dissipation of what it cannot resolve is
    what this tests, with converged Newton iterations (two iterations a step: the willow
    diverged after 0.60 s, the old oak 2.07 s, the giant 0.70 s)."""
    data = copy.deepcopy(load_preset(name).data)
    data["wind"].update(speed=0.0, drag_coefficient=0.0, leaf_drag_coefficient=0.0)
    data["tuning"]["damping_scale"] = 0.0
    data["simulation"].update(integrator="galpha", dt=ENERGY_DT)
    root = Simulation.from_data(data).tree.names[0]
    data["initial_state"] = [{"limb": root, "rotation_deg": [0.0, PUSH_DEG, 0.0],
                              "angular_velocity": [0.0, 0.0, 0.0]}]
    sim = Simulation.from_data(data)
    start = sim.energy()
    peak = start
    seconds = ENERGY_SECONDS_OF.get(name, ENERGY_SECONDS)
    for _ in range(int(round(seconds / ENERGY_DT)) // ENERGY_CHECK_EVERY):
        sim.step(ENERGY_CHECK_EVERY)
        peak = max(peak, sim.energy())
    counts = sim._galpha_state.counts
    print(f"{name}: rise {(peak - start) / sim.energy_scale:.2e} of the energy scale, "
          f"|v| ≤ {np.abs(sim.v).max():.3g} rad/s at the end; {counts[ITERATIONS]} iterations, "
          f"{counts[SUB_STEPS]} sub-steps, {counts[RESTARTS]} restarts, {counts[UNCONVERGED]} "
          "taken unconverged")
    assert np.isfinite(sim.q).all() and np.isfinite(sim.v).all()
    assert peak - start <= ENERGY_RISE * sim.energy_scale
    assert start - sim.energy() > 0.0   # it moved, and ρ∞ < 1 dissipated some of it


STORM_DT = 1.0 / 30.0
STORM_SPEED = 30.0  # m/s
# Joint rates in the storm with the θ-method: 1.5–8 rad/s at turbulence 0.3, up to 30 at 1.0
# (test_aero); a runaway passes 1e5 rad/s within a few frames.
STORM_MAX_RATE = 100.0  # rad/s
# (name, s, turbulence): test_aero's cases; the willow 10 s and the old oak 20 s instead of
# 60 s, the giant 5 s (11 iterations a step on the willow: 37 s of the suite at 60 s, 13 s at
# 20 s, which it passed as well), the runaways seen took under 2 s.
STORMS = [("two_limbs", 60.0, 0.3), ("sapling", 60.0, 0.3), ("young_oak", 60.0, 0.3),
          ("conifer", 60.0, 0.3), ("weeping_willow", 10.0, 0.3), ("old_oak", 20.0, 0.3),
          ("giant", 5.0, 0.3), ("two_limbs", 30.0, 1.0), ("conifer", 20.0, 1.0),
          ("weeping_willow", 10.0, 1.0)]


@pytest.mark.slow
@pytest.mark.parametrize("name, duration, turbulence", STORMS)
def test_bounded_in_the_storm(name, duration, turbulence):
    """The θ-method's storm cases (test_aero: 30 m/s at turbulence 0.3 on every preset, 1.0 on
    the lightest leafy shoots, dt = 1/30 s) with generalized-α: finite and bounded."""
    data = copy.deepcopy(load_preset(name).data)
    data["wind"].update(speed=STORM_SPEED, turbulence_intensity=turbulence)
    data["simulation"].update(integrator="galpha", dt=STORM_DT)
    sim = Simulation.from_data(data)
    peak = 0.0
    for _ in range(int(round(duration))):
        sim.step(int(round(1.0 / STORM_DT)))
        assert np.isfinite(sim.v).all()
        peak = max(peak, np.abs(sim.v).max())
    counts = sim._galpha_state.counts
    print(f"{name} at turbulence {turbulence}: joint rates up to {peak:.3g} rad/s; "
          f"{counts[ITERATIONS] / counts[SUB_STEPS]:.2f} iterations a sub-step, "
          f"{counts[SUB_STEPS]} sub-steps, {counts[RESTARTS]} restarts")
    assert peak < STORM_MAX_RATE


def test_a_tree_at_rest_takes_two_iterations_a_step():
    """A tree at rest in still air (its start is its balance, accelerations round-off): the
    iterations' changes are round-off too, which no relative tolerance meets; the control's
    floor (`GalphaControl.floor`) accepts them. Without it young_oak took 21.6 iterations and
    four sub-steps a frame at 1/120 s."""
    data = copy.deepcopy(load_preset("young_oak").data)
    data["wind"]["speed"] = 0.0
    data["simulation"].update(integrator="galpha", dt=1.0 / 120.0)
    sim = Simulation.from_data(data)
    steps = 60
    sim.step(steps)
    counts = sim._galpha_state.counts
    assert np.abs(sim.v).max() < 1e-9
    assert counts[ITERATIONS] == 2 * steps
    assert counts[SUB_STEPS] == steps and counts[RESTARTS] == 0


def _young_oak_in_its_wind(control) -> tuple[np.ndarray, float, float]:
    """young_oak in its own wind at 1/120 s for 2 s under a Newton control: (tips m, their
    largest motion m, iterations a sub-step)."""
    data = copy.deepcopy(load_preset("young_oak").data)
    data["simulation"].update(integrator="galpha", dt=1.0 / 120.0)
    sim = Simulation.from_data(data)
    sim.galpha_control = control
    start = sim.tip.copy()
    sim.step(240)
    counts = sim._galpha_state.counts
    return sim.tip.copy(), np.abs(sim.tip - start).max(), counts[ITERATIONS] / counts[SUB_STEPS]


def test_a_swaying_tree_stops_after_two_iterations_where_they_contract_fast():
    """Where the iteration contracts fast, the rate estimate stops a step after its second
    iteration (`GalphaControl`): measured 2.15 iterations a step (3.1 stopping on the change
    alone), the tips 3.2e-6 m from the iterations converged to 1e-10 after 2 s (0.10 m of
    motion), far below the step's own error."""
    tips, motion, iterations = _young_oak_in_its_wind(GALPHA_CONTROL)
    converged, _, _ = _young_oak_in_its_wind(
        GALPHA_CONTROL._replace(tolerance=1e-10, trusted_rate=0.0))
    print(f"{iterations:.2f} iterations a step; tips {np.abs(tips - converged).max():.2e} m from "
          f"converged ({motion:.3f} m of motion)")
    assert iterations <= 2.3
    assert np.abs(tips - converged).max() <= 1e-4 * motion
