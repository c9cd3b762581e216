"""The compiled step loops against the straightforward reference step of the tests (docs/design.md §3.3):
100 steps of the implicit θ-method and of generalized-α, with the wind and drag on and off, and
of RK4, on random
trees of up to 200 limbs, give the same state to 1e-10.

The production runs the trees in breadth-first order from a preset; the reference
(`reference_step`: dense joint-space equations, scipy rotations, eigen-solvers) in the preset's
order from the same limb list."""

from __future__ import annotations

import numpy as np
import pytest

import reference_step as rs
from builders import preset_data
from random_trees import random_limbs, reference_tree_from_limbs
from reference_dynamics import rotation_exp
from treedyn_core.integrators.steppers import GALPHA_CONTROL, GalphaControl
from treedyn_core.simulation import Simulation
from treedyn_core.dynamics.wind import ADVECTION

STEPS = 100
# Round-off only: both sides solve the same equations, in different orders and forms, 100
# times over. Measured 1e-15 … 1e-11 of the state's scale.
STATE_TOL = 1e-10
STILL_AIR = {"speed": 0.0, "drag_coefficient": 0.0, "leaf_drag_coefficient": 0.0}
STORM = {"speed": 14.0, "direction_deg": 35.0, "turbulence_intensity": 0.35, "modes": 24,
         "seed": 5, "length_scale": 8.0, "vogel_exponent": -0.4, "reference_height": 4.0}
SCALES = {"stiffness_scale": 1.3, "damping_scale": 0.7}


def _trees(n, seed, integrator, dt, wind, rotation=0.3, rate=1.0):
    """The production Simulation and the reference Model of one random tree (prestress off: the
    springs rest at the limbs' rest rotations), and a random state near the rest pose (preset
    order: R (N, 3, 3), v (N, 3)): rotations of ``rotation`` rad and rates of ``rate`` rad/s
    (standard deviations per axis)."""
    limbs = random_limbs(n, seed)
    for k, limb in enumerate(limbs):
        limb["leaf_area"] = 0.4 if k % 3 == 2 else 0.0
    sim = Simulation.from_data(preset_data(
        limbs, simulation={"integrator": integrator, "dt": dt, "prestress": False},
        wind=wind, tuning=SCALES))
    tree, R_rest = reference_tree_from_limbs(limbs)
    axis = np.array([limb["direction"] for limb in limbs], dtype=float)
    damping = [np.diag(np.broadcast_to(limb["damping"], 3)) for limb in limbs]
    air = None
    if wind is not STILL_AIR:
        air = rs.Air(sim.data["wind"]["air_density"], sim.data["wind"]["drag_coefficient"],
                     sim.data["wind"]["leaf_drag_coefficient"], wind["vogel_exponent"],
                     rs.SampledWind.from_field(sim.wind))
    model = rs.Model(tree, R_rest, SCALES["stiffness_scale"] * np.array(
                         [np.diag(limb["stiffness"]) for limb in limbs]),
                     SCALES["damping_scale"] * np.array(damping), sim.gravity,
                     axis / np.linalg.norm(axis, axis=1)[:, None],
                     np.array([limb["length"] for limb in limbs]),
                     np.array([limb["radius"] for limb in limbs]),
                     np.array([limb["leaf_area"] for limb in limbs]), air)
    rng = np.random.default_rng(seed + 1)
    R = np.array([R_rest[i] @ rotation_exp(rng.normal(scale=rotation, size=3)) for i in range(n)])
    v = rng.normal(scale=rate, size=(n, 3))
    sim.q[:] = sim.tree.from_preset_order(rs.matrices_to_quats(R))
    sim.v[:] = sim.tree.from_preset_order(v)
    return sim, model, R, v


def _assert_same_state(sim, R, v):
    R_core = rs.quats_to_matrices(sim.tree.to_preset_order(sim.q))
    v_core = sim.tree.to_preset_order(sim.v)
    rotation_error = np.abs(R_core - R).max()
    rate_error = np.abs(v_core - v).max() / max(1.0, np.abs(v).max())
    print(f"after {STEPS} steps: rotations {rotation_error:.1e}, rates {rate_error:.1e} "
          f"(|v| up to {np.abs(v).max():.2g} rad/s)")
    assert rotation_error <= STATE_TOL
    assert rate_error <= STATE_TOL


@pytest.mark.parametrize("n, seed, wind", [
    (12, 31, STILL_AIR), (60, 32, STILL_AIR), (40, 33, STORM), (200, 34, STORM),
])
def test_implicit_steps_match_the_reference(n, seed, wind):
    dt = 1.0 / 120.0
    sim, model, R, v = _trees(n, seed, "implicit", dt, wind)
    assert sim.theta_method == 0.6
    advection0, speed = sim.wind.state[ADVECTION], sim.wind.speed
    sim.step(STEPS)
    for k in range(STEPS):
        R, v = rs.implicit_step(model, R, v, dt, sim.theta_method, advection0 + k * speed * dt)
    _assert_same_state(sim, R, v)


# A control under which no step converges (3 iterations to a tolerance of 1e-12): every step is
# restarted in halves down to a quarter, the sub-steps' path (the wind's pattern moving on
# between them, the halving level carried to the next step).
NEVER_CONVERGED = GalphaControl(1e-12, 0.9, 3, 2, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("n, seed, wind, rho_inf, control", [
    (12, 41, STILL_AIR, 0.6, GALPHA_CONTROL), (30, 42, STILL_AIR, 1.0, GALPHA_CONTROL),
    (30, 43, STORM, 0.0, GALPHA_CONTROL), (30, 44, STORM, 0.6, GALPHA_CONTROL),
    (12, 45, STORM, 0.6, NEVER_CONVERGED),
])
def test_galpha_steps_match_the_reference(n, seed, wind, rho_inf, control):
    dt = 1.0 / 120.0
    sim, model, R, v = _trees(n, seed, "galpha", dt, wind)
    sim.rho_inf = rho_inf
    sim.galpha_control = control
    advection0, speed = sim.wind.state[ADVECTION], sim.wind.speed
    sim.step(STEPS // 2)
    sim.step(STEPS - STEPS // 2)    # the method's state carries over between calls
    vdot = rs.galpha_start(model, R, v, dt, rho_inf, advection0)
    a = vdot
    level, rate = 0, rs.UNKNOWN_RATE
    for k in range(STEPS):
        R, v, vdot, a, level, rate = rs.galpha_step(model, R, v, vdot, a, dt, rho_inf,
                                                    sim.galpha_control,
                                                    advection0 + k * speed * dt, speed, level,
                                                    rate)
    _assert_same_state(sim, R, v)


def test_rk4_steps_match_the_reference():
    sim, model, R, v = _trees(30, 35, "rk4", 1.0 / 120.0, STILL_AIR)
    dt = 0.5 * sim.rk4_stable_dt()
    sim.dt = dt
    q = rs.matrices_to_quats(R)
    sim.step(STEPS)
    for _ in range(STEPS):
        q, v = rs.rk4_step(model, q, v, dt)
    _assert_same_state(sim, rs.quats_to_matrices(q), v)
