"""The seed model's static equilibrium under gravity and the mean wind (docs/design.md §6.7).

The seed model (`seed_model`: each limb a rotor about its own base, loaded by its own weight,
its own drag and its joints' springs) has its own balance, not the articulated model's: a
limb carries none of its children's weight, and the seed spring is ``−2 k sin φ a``. A run of
the seed model started from the articulated model's balance, or from rest in the wind,
lurches; `seed_mean_wind_equilibrium` finds the attitudes in which every limb's moments about
its base vanish at rest (ω = 0) in the mean wind with the turbulence left out.

Method: modified Newton on the absolute attitudes. The residual is the sum of the moments on
each limb about its base, ``M(C)`` (N, 3) N m, body axes, exactly what the dynamics integrate
(`seed_dynamics`, the same kernel, with the wind's turbulence intensity set to zero). The
tangent is the seed model's own positive-semidefinite stiffness 𝒦 = Gᵀ K_t G + K_g (the
springs at rest and the PSD part of each limb's gravity stiffness, `seed_model` docstring),
whose tree-structured system the implicit step already solves in O(N): at zero rates the
θ-method's increments satisfy ``(𝕄 + H𝒞 + H²𝒦) a = M`` for H = θh, so ``x = H² a`` solves
``(𝕄/H² + 𝒞/H + 𝒦) x = M`` and tends to the Newton correction 𝒦⁻¹ M as H grows. With H =
`STATIC_H` the inertia term weighs 1/(ωH)² ≤ 3e-12 of the stiffness and the damping term
2ζ/(ωH) ≤ 2e-7 (ζ ≤ 0.1, a mode's ω ≥ 0.6 rad/s): they change the steps a little, never the
balance they converge to, whose residual is the dynamics' own. Each limb is turned by x in
its own axes (C ← C exp(x^×), the direction in which the moments turn it). The iteration
converges linearly, at the ratio by which the missing terms (the springs' softening cos φ, the
negative part of the gravity stiffness, the drag's dependence on the attitude) change the
tangent: 5–12 iterations to round-off for the shipped trees in their preset's wind, more in a
gale. Where it stalls or diverges (a wind too strong for any balance, or for this iteration) no
balance is reported: an error.
"""

from __future__ import annotations

import numpy as np

from ..errors import TreedynError
from ..numerics.kernel import kernel
from ..numerics.so3 import quat_advance, quats_from_matrices
from .linearise import Equilibrium
from .seed_model import SeedDynamics, joint_to_absolute, seed_dynamics, seed_pose
from .wind import INTENSITY

# s: the "time step" that turns the implicit step's linear system into the static stiffness
# (module docstring).
STATIC_H = 1.0e6
# Accept when the largest moment is this small relative to the largest load on any limb (its
# spring, its own weight's or its drag's moment about its base), as `linearise` does ...
RESIDUAL_TOLERANCE = 1e-9
# ... and stop polishing once a correction is this small (rad): round-off.
STEP_TOLERANCE = 1e-13
# Iterations in all, load stepping included (a shipped tree in its preset's wind needs 5–12): a
# wind with no balance found is reported within 1.6 s on the 10,926-limb giant (4 ms each).
ITERATION_BUDGET = 400
# The smallest increment of the drag's fraction before the load stepping gives up.
MIN_LOAD_STEP = 1.0 / 64.0
# A correction larger than this (rad, at any limb) means the iteration is no longer near a
# balance: it has diverged.
MAX_STEP = 0.5


@kernel
def turn_limbs(qa, x):
    """qa (N, 4) ← qa ⊗ exp(x): each limb turned by x (N, 3) rad in its own axes."""
    for i in range(qa.shape[0]):
        quat_advance(qa[i], x[i])


def seed_mean_wind_equilibrium(sim, seed: SeedDynamics | None = None) -> Equilibrium:
    """The seed model's static equilibrium for `sim` (a `simulation.Simulation`): gravity, the
    springs' rest rotations in force (``sim.spring_C_rel``), the stiffness scale in force and
    the mean wind in force (speed, direction, profile; turbulence off), from the rest pose.
    `seed`: the `SeedDynamics` whose work arrays to use (default: a new one). Returns the joint
    rotations; raises TreedynError if none is found (module docstring).

    When the full drag's iteration fails, the drag is stepped up from zero (the air density
    times a fraction rising to 1, halving the increment after a failure), within
    `ITERATION_BUDGET` iterations in all."""
    tree = sim.tree
    n = tree.n
    seed = seed or SeedDynamics(tree, sim.inertia_base)
    air = sim.air()
    mean = sim.wind.state.copy()
    mean[INTENSITY] = 0.0          # the mean wind: the Fourier modes' amplitudes vanish
    air = air._replace(wind=air.wind._replace(state=mean))
    system = seed.system(sim, air)._replace(ext_torque=np.zeros((n, 3)))
    qa, omega = np.empty((n, 4)), np.zeros((n, 3))
    joint_to_absolute(tree.parent, quats_from_matrices(tree.rest_C_rel), np.zeros((n, 3)), qa,
                      omega)
    seed_dynamics(system, qa, omega, 0.0, 0.0)
    scale = _load_scale(sim, system, seed.work)
    reached, increment, spent, iterations, residual = 0.0, 1.0, 0, 0, np.inf
    while reached < 1.0 and spent < ITERATION_BUDGET:
        target = min(1.0, reached + increment)
        stage = system._replace(air=air._replace(air_density=target * air.air_density))
        trial = qa.copy()
        done, residual = _modified_newton(stage, trial, omega, seed.work, scale,
                                          ITERATION_BUDGET - spent)
        spent += done
        if residual <= RESIDUAL_TOLERANCE * scale:
            qa, reached, iterations = trial, target, iterations + done
            increment = min(2.0 * increment, 1.0 - reached)
        else:
            increment *= 0.5
            if increment < MIN_LOAD_STEP:
                break
    if reached < 1.0:
        raise TreedynError(
            f"no static equilibrium of the seed model under the mean wind was found: its "
            f"modified Newton iteration with load stepping stalled at {100 * reached:.1f} % of "
            f"the drag (the tree is too soft for this wind; stiffen it or set simulation.start: "
            f"rest)")
    R_rel = np.empty((n, 3, 3))
    seed_pose(tree.parent, qa, seed.work.C_IF, R_rel)
    method = "modified Newton" + (" with load stepping" if spent > iterations else "")
    return Equilibrium(R_rel, f"{method} (seed model)", iterations, residual)


def _modified_newton(system, qa, omega, work, scale: float, budget: int) -> tuple[int, float]:
    """Modified Newton iterations on qa (N, 4) in place (module docstring) until a correction
    is round-off, it diverges, or `budget` iterations are spent: (iterations, the largest
    moment left, N m; inf after a divergence)."""
    for iteration in range(budget + 1):
        a = seed_dynamics(system, qa, omega, STATIC_H, 0.0)
        residual = float(np.abs(work.moment).max())
        x = (STATIC_H * STATIC_H) * a
        step = float(np.abs(x).max())
        if not np.isfinite(step) or step > MAX_STEP:
            return iteration, np.inf
        if step <= STEP_TOLERANCE or iteration == budget:
            return iteration, residual
        turn_limbs(qa, x)
    return budget, np.inf


def _load_scale(sim, system, work) -> float:
    """N m: the largest load on any limb at the last evaluation — its joint's spring moment,
    its own weight's moment about its base, or its drag's — the size the residual is
    measured against (its round-off is ε times it)."""
    tree = sim.tree
    weight = tree.mass[:, None] * np.einsum("nji,j->ni", work.C_IF, np.asarray(sim.gravity))
    gravity = np.cross(tree.com_offset, weight)
    loads = [np.abs(work.tau).max(initial=0.0), np.abs(gravity).max(initial=0.0)]
    if system.air.enabled:
        loads.append(np.abs(work.aero_torque).max(initial=0.0))
    return max(max(loads), 1e-300)
