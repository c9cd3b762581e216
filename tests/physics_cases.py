"""Trees and measurements shared by the dynamics tests (`test_dynamics.py`).

Trees are built as validated preset dicts (`builders.preset_data`), wind and
aerodynamic loads off unless a test says otherwise. Measurements read the public
`Simulation` outputs; where a test needs a velocity that the public API does
not expose (the base-point velocities) it reads the kinematics workspace
``sim.workspace``, which the stepping code fills after every step.
"""

from __future__ import annotations

import math

import numpy as np

from builders import preset_data
from random_trees import random_limbs
from treedyn_core.simulation import Simulation

# Wind off in the sense of docs/design.md §3: no wind and no aerodynamic force at all (in still air
# the drag of a moving limb would still damp it, which energy conservation must exclude).
STILL_AIR = {"speed": 0.0, "drag_coefficient": 0.0, "leaf_drag_coefficient": 0.0}

# docs/design.md §6's example: limb A with explicit mass and inertia, limb B from the material
# defaults (solid wooden cylinder), B's rest frame rolled 30° about A's x axis.
TWO_LIMBS = [
    {"name": "A", "parent": None, "length": 1.0, "radius": 0.05, "direction": [0, 0, 1],
     "rest_rotation_deg": [0, 0, 0], "attach": 1.0, "mass": 2.0,
     "inertia": [0.17, 0.17, 0.0025], "com": 0.5, "stiffness": 200.0, "damping": 1.0},
    {"name": "B", "parent": "A", "length": 0.8, "radius": 0.03, "rest_rotation_deg": [30, 0, 0],
     "stiffness": 80.0, "damping": 0.4},
]
TWO_LIMBS_PERTURBATION = [{"limb": "B", "rotation_deg": [0, 20, 0]}]

# A third limb on the same trunk: attached part-way up, tilted direction, anisotropic spring.
THREE_LIMBS = TWO_LIMBS + [
    {"name": "C", "parent": "A", "length": 0.6, "radius": 0.025, "attach": 0.6,
     "direction": [0.3, 0.0, 1.0], "rest_rotation_deg": [-20, 35, 10],
     "stiffness": [60.0, 50.0, 40.0], "damping": 0.3},
]


def two_limb_simulation(**simulation) -> Simulation:
    """docs/design.md §6's two-limb tree, B rotated 20° about its y axis, gravity and prestress on
    unless `simulation` says otherwise."""
    return Simulation.from_data(preset_data(
        TWO_LIMBS, simulation=simulation, wind=STILL_AIR, initial_state=TWO_LIMBS_PERTURBATION))


def random_initial_state(limbs: list[dict], seed: int, rotation_deg: float, rate: float
                         ) -> list[dict]:
    """A perturbation of every limb: rotation vectors uniform in ±rotation_deg per axis and
    joint rates uniform in ±rate rad/s per axis."""
    rng = np.random.default_rng(seed)
    return [{"limb": limb["name"],
             "rotation_deg": [float(x) for x in rng.uniform(-rotation_deg, rotation_deg, 3)],
             "angular_velocity": [float(x) for x in rng.uniform(-rate, rate, 3)]}
            for limb in limbs]


def random_tree_simulation(n: int, seed: int, **simulation) -> Simulation:
    """`random_limbs(n, seed)` as explicit limbs (random directions, attach points, rest
    rotations, anisotropic stiffness), every limb perturbed (±10°, ±1 rad/s per axis)."""
    limbs = random_limbs(n, seed)
    return Simulation.from_data(preset_data(
        limbs, simulation=simulation, wind=STILL_AIR,
        initial_state=random_initial_state(limbs, seed + 1000, 10.0, 1.0)))


def fastest_joint_rate(sim: Simulation) -> float:
    """Estimate of the fastest natural frequency of the tree, rad/s.

    Each joint alone, its parent held fixed and its children frozen onto it, oscillates at
    most at sqrt(λ_max(K_i) / λ_min(J_i)) (Rayleigh quotient of K_i over J_i), J_i the limb's
    own inertia about its base. On these trees that is the twist of the thinnest limb. Not a
    strict bound for the coupled tree (a light parent recoils), but it sets dt within a
    small factor of the stiffest mode, which is what the step-size rule needs.
    """
    tree = sim.tree
    k_scale = sim.stiffness_scale
    return max(math.sqrt(k_scale * np.linalg.eigvalsh(tree.stiffness[i])[-1]
                         / np.linalg.eigvalsh(sim.inertia_base[i])[0])
               for i in range(tree.n))


def angular_momentum_about_root(sim: Simulation) -> np.ndarray:
    """H = Σ_i [m_i (r_com,i − r_root) × v_com,i + C_i I_com,i ω_i], kg m²/s, inertial axes.

    r_root is the root's base (the only point where the ground acts on the tree). ω_i is the
    public body-frame rate; v_com,i = v_base,i + ω_i,world × (C_i com_offset_i) is exact rigid-
    body kinematics of the current state, with v_base and ω_world taken from the workspace that
    `Simulation.step` fills by its forward kinematics (the public API has no base velocities).
    """
    tree, work = sim.tree, sim.workspace
    C_IF = sim.C_IF
    com_arm = np.einsum("nij,nj->ni", C_IF, tree.com_offset)
    r_com = sim.base + com_arm
    v_com = work.base_vel + np.cross(work.omega, com_arm)
    spin = np.einsum("nij,njk,nk->ni", C_IF, tree.inertia_com, sim.omega)
    orbital = tree.mass[:, None] * np.cross(r_com - sim.base[0], v_com)
    return (orbital + spin).sum(axis=0)


def sample_every_step(sim: Simulation, n_steps: int, measure) -> np.ndarray:
    """measure(sim) at t = 0 and after each of n_steps single steps, as an array."""
    values = [measure(sim)]
    for _ in range(n_steps):
        sim.step(1)
        values.append(measure(sim))
    return np.array(values)


def sample_in_chunks(sim: Simulation, n_steps: int, n_samples: int, measure) -> np.ndarray:
    """measure(sim) at t = 0 and after each of n_samples chunks of the n_steps (compiled
    loops in between)."""
    bounds = np.linspace(0, n_steps, n_samples + 1).round().astype(int)
    values = [measure(sim)]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        sim.step(int(stop - start))
        values.append(measure(sim))
    return np.array(values)


def hermite_extremum(y0: float, y1: float, m0: float, m1: float, h: float) -> tuple[float, float]:
    """(s, value) of the extremum inside [0, 1] of the cubic Hermite interpolant of values
    y0, y1 and slopes m0, m1 on an interval of length h (s: fraction of the interval)."""
    # p'(s)/… = a s² + b s + c from the Hermite basis derivatives.
    a = 6.0 * (y0 - y1) + 3.0 * h * (m0 + m1)
    b = 6.0 * (y1 - y0) - h * (4.0 * m0 + 2.0 * m1)
    c = h * m0
    roots = np.roots([a, b, c]) if a != 0.0 else np.array([-c / b])
    s = float(next(r.real for r in roots if abs(r.imag) < 1e-12 and -1e-9 <= r.real <= 1 + 1e-9))
    value = ((2 * s**3 - 3 * s**2 + 1) * y0 + (s**3 - 2 * s**2 + s) * h * m0
             + (-2 * s**3 + 3 * s**2) * y1 + (s**3 - s**2) * h * m1)
    return s, value


def convergence_orders(dts, errors) -> np.ndarray:
    """Observed orders log(e_i / e_{i+1}) / log(dt_i / dt_{i+1}) of successive pairs."""
    dts, errors = np.asarray(dts, float), np.asarray(errors, float)
    return np.log(errors[:-1] / errors[1:]) / np.log(dts[:-1] / dts[1:])
