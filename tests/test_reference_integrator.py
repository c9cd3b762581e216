"""The dop853 reference integrator (docs/design.md §4) against RK4, on both models.

Trees: docs/design.md §6's two limbs (prestressed, B tipped 20°) and a 15-limb random tree
(`random_limbs(15, 7)`: random directions, attach points, anisotropic springs; its
soft springs cannot be prestressed, so it swings under gravity from a random
perturbation of ±10°, ±1 rad/s). Gravity on, damping on, aerodynamics off (the
drag's |v|v is not smooth at rest, which would blur a convergence order). Errors
are tip positions over 1 s, sampled every 0.05 s, relative to the tree's height.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from builders import preset_data
from physics_cases import TWO_LIMBS, fastest_joint_rate, random_initial_state
from random_trees import random_limbs
from treedyn_core import cli
from treedyn_core.integrators.reference import dop853_advance, dop853_samples
from treedyn_core.simulation import Simulation
from treedyn_core.dynamics.wind import TIME

NO_AIR = {"speed": 0.0, "drag_coefficient": 0.0, "leaf_drag_coefficient": 0.0}
DURATION = 1.0      # s
SAMPLE = 0.05       # s between compared tip positions
RANDOM_LIMBS = random_limbs(15, 7)
CASES = {
    "two_limbs": (TWO_LIMBS, [{"limb": "B", "rotation_deg": [0, 20, 0]}], True),
    "random15": (RANDOM_LIMBS, random_initial_state(RANDOM_LIMBS, 1007, 10.0, 1.0), False),
}
# The brief's bar for dop853 at rtol 1e-11 against a small-step RK4. RK4 runs at
# ωh = 0.008 on the fastest joint mode: its tip error is then ~1e-11 of the height
# (measured 2e-13 … 1.3e-11), so the comparison sees dop853's own error (~1e-13).
AGREEMENT = 1e-8
SMALL_STEP_OMEGA_DT = 0.008
# RK4 at ωh = 0.1, 0.05, 0.025 against dop853 at 1e-12: the errors (~1e-7 … 1e-12 of the
# height) stay 100× above the reference's (dop853 at 1e-11 and 1e-12 differ by ≤ 2e-12),
# and ωh ≤ 0.1 is inside RK4's asymptotic range (at ωh = 0.4 the two-limb tree shows 5).
ORDER_OMEGA_DTS = (0.1, 0.05, 0.025)
ORDER_TOL = 0.3


def make(case: str, model: str, integrator: str, dt: float) -> Simulation:
    limbs, initial_state, prestress = CASES[case]
    return Simulation.from_data(preset_data(
        limbs, wind=NO_AIR, simulation={"prestress": prestress}, initial_state=initial_state),
        model=model, integrator=integrator, dt=dt)


def reference_tips(case: str, model: str, tol: float) -> tuple[np.ndarray, float]:
    sim = make(case, model, "dop853", SAMPLE)
    tips = dop853_samples(sim, DURATION, SAMPLE, lambda s: s.tip.copy(), tol, tol)
    return np.array(tips), sim.tree.height


def rk4_tips(case: str, model: str, omega_dt: float) -> np.ndarray:
    """RK4 tips every SAMPLE s, dt = SAMPLE / ceil(SAMPLE ω_max / ωh)."""
    probe = make(case, model, "rk4", SAMPLE)
    # The seed model's springs are 2K at rest: its fastest joint mode is √2 faster.
    omega_max = fastest_joint_rate(probe) * (math.sqrt(2.0) if model == "seed" else 1.0)
    steps = math.ceil(SAMPLE * omega_max / omega_dt)
    sim = make(case, model, "rk4", SAMPLE / steps)
    tips = [sim.tip.copy()]
    for _ in range(int(round(DURATION / SAMPLE))):
        sim.step(steps)
        tips.append(sim.tip.copy())
    return np.array(tips)


@pytest.mark.parametrize("model", ["articulated", "seed"])
@pytest.mark.parametrize("case", list(CASES))
def test_dop853_agrees_with_small_step_rk4(case, model):
    reference, height = reference_tips(case, model, 1e-11)
    error = np.abs(rk4_tips(case, model, SMALL_STEP_OMEGA_DT) - reference).max()
    assert error < AGREEMENT * height


@pytest.mark.parametrize("model", ["articulated", "seed"])
@pytest.mark.parametrize("case", list(CASES))
def test_rk4_order_against_dop853(case, model):
    reference, height = reference_tips(case, model, 1e-12)
    errors = [np.abs(rk4_tips(case, model, c) - reference).max() / height
              for c in ORDER_OMEGA_DTS]
    order = np.polyfit(np.log(ORDER_OMEGA_DTS), np.log(errors), 1)[0]
    assert abs(order - 4.0) <= ORDER_TOL, (errors, order)


@pytest.mark.parametrize("model", ["articulated", "seed"])
def test_simulation_steps_with_dop853(model):
    """`Simulation(integrator="dop853").step(n)` (one solve per call, dt the output step)
    matches one continuous solve, keeps unit quaternions and advances the time."""
    sim = make("two_limbs", model, "dop853", SAMPLE)
    for _ in range(4):
        sim.step(5)
    continuous = make("two_limbs", model, "dop853", SAMPLE)
    dop853_advance(continuous, 1.0)
    assert sim.time == pytest.approx(1.0) and continuous.time == pytest.approx(1.0)
    np.testing.assert_allclose(np.linalg.norm(sim.q, axis=1), 1.0, atol=1e-15)
    # Restarting the solver every 0.25 s changes its steps, not its accuracy (~1e-11).
    np.testing.assert_allclose(sim.tip, continuous.tip, atol=1e-8 * sim.tree.height)


def test_dop853_with_aerodynamics_and_wind():
    """With drag on (a turbulent 8 m/s wind) dop853 solves one output step at a time, the wind
    held over each and advanced after it, as the other integrators hold it over a step; it
    agrees with a small-step RK4 run to the wind's own sampling error."""
    def run(integrator, dt, steps):
        sim = Simulation.from_data(preset_data(TWO_LIMBS, wind={"speed": 8.0}),
                                   integrator=integrator, dt=dt)
        sim.step(steps)
        return sim

    dop = run("dop853", 1 / 120, 120)
    rk4 = run("rk4", 1 / 1200, 1200)
    assert dop.time == pytest.approx(1.0)
    assert dop.wind.state[TIME] == pytest.approx(1.0) and np.all(np.isfinite(dop.tip))
    # Both hold the wind over their step: 1/120 s against 1/1200 s, a first-order
    # difference of a few µm on a 1.7 m tree (measured below 1e-4 of the height).
    assert np.abs(dop.tip - rk4.tip).max() < 1e-3 * dop.tree.height


def test_cli_run_with_dop853(tmp_path):
    out = tmp_path / "two.npz"
    status = cli.main(["run", "two_limbs", "--duration", "0.2", "--integrator", "dop853",
                       "--rtol", "1e-8", "--atol", "1e-8", "--out", str(out)])
    assert status == 0
    with np.load(out) as data:
        assert np.all(np.isfinite(data["tip"]))
        assert data["t"][-1] == pytest.approx(0.2, abs=0.01)
    assert cli.main(["run", "two_limbs", "--duration", "0.1", "--rtol", "-1"]) == 2
