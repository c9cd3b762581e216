"""Trees, winds and measurements shared by the aerodynamic-load tests (`test_aero.py`).

Every tree is a validated preset dict built in code (`builders.preset_data`), so
that a change to a shipped preset cannot move an analytic reference. Measurements
read the public `Simulation` outputs, and the loads the step applied from the
workspace ``sim.workspace`` (``aero_force`` (N, 3) N at the midpoints, ``aero_torque``
about the bases, ``wind_at_mid``), which the step fills from the state at the
start of each step.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from builders import preset_data
from treedyn_core.simulation import Simulation

# A steady, uniform wind: no turbulence and no height profile.
UNIFORM_WIND = {"turbulence_intensity": 0.0, "profile_exponent": 0.0}

# A small generated oak (the shipped sapling's shape and wood, 28 limbs, leaves on the nine
# shoot ends), restated here so that the tests do not move with the shipped file.
SMALL_TREE = {"seed": 3, "trunk": {"length": 1.0, "radius": 0.012, "segments": 4},
              "levels": 2, "children": 3, "segments": 2, "branch_angle_deg": 32.0,
              "length_ratio": 0.6, "jitter": 0.15, "leaf_area": 0.15}
SMALL_TREE_MATERIAL = {"density": 1000.0, "youngs_modulus": 6.0e9, "poisson_ratio": 0.37,
                       "damping_ratio": 0.05}


def single_limb_data(*, direction, wind, length=2.0, radius=0.05, leaf_area=0.0,
                     stiffness=1.0e4, damping=10.0, height=0.0, **sections) -> dict:
    """One limb on the ground (base at `height` m), axis `direction` (inertial, as its rest
    frame is the inertial frame), explicit stiffness (N m/rad) and damping (N m s/rad); `wind`
    updates a steady uniform wind."""
    limb = {"name": "limb", "parent": None, "length": length, "radius": radius,
            "direction": list(direction), "leaf_area": leaf_area, "stiffness": stiffness,
            "damping": damping}
    return preset_data([limb], root_position=[0.0, 0.0, height],
                       wind={**UNIFORM_WIND, **wind}, **sections)


def small_tree_data(*, wind, leaf_scale=1.0, **sections) -> dict:
    """`SMALL_TREE` (prestressed, gravity on) with `leaf_area` scaled by `leaf_scale`."""
    generator = copy.deepcopy(SMALL_TREE)
    generator["leaf_area"] *= leaf_scale
    return preset_data(generator=generator, material=SMALL_TREE_MATERIAL, wind=wind, **sections)


def cylinder_factor(wind: dict, radius: float, length: float) -> float:
    """½ ρ C_d (2 r L), N s²/m², of a limb in the preset's `wind` section."""
    return 0.5 * wind["air_density"] * wind["drag_coefficient"] * 2.0 * radius * length


def foliage_factor(wind: dict, leaf_area: float) -> float:
    """½ ρ C_dleaf A, N s²/m², of foliage of area `leaf_area` in the preset's `wind` section."""
    return 0.5 * wind["air_density"] * wind["leaf_drag_coefficient"] * leaf_area


def wind_unit(direction_deg: float) -> np.ndarray:
    """(3,) unit vector the wind blows toward (0° = +x, 90° = +y)."""
    a = math.radians(direction_deg)
    return np.array([math.cos(a), math.sin(a), 0.0])


def midpoint_velocities(sim: Simulation) -> np.ndarray:
    """(N, 3) m/s, inertial: v_base + ω × (C_IF · L/2 · u), rigid-body kinematics of the
    current state from the workspace's base velocities and angular velocities."""
    tree, work = sim.tree, sim.workspace
    lever = 0.5 * tree.length[:, None] * np.einsum("nij,nj->ni", work.C_IF, tree.u)
    return work.base_vel + np.cross(work.omega, lever)


def run_to_steady(sim: Simulation, duration: float, check: float
                  ) -> tuple[np.ndarray, np.ndarray, float]:
    """Step `duration` s, then `check` s more. Returns the crown top's displacement from rest
    (3,) m and the mean displacement of all tips (3,) m at the end, and how far the crown top
    moved during the check (m)."""
    top = sim.crown_top()
    rest = sim.tip.copy()
    sim.step(int(round(duration / sim.dt)))
    before = sim.tip[top].copy()
    sim.step(int(round(check / sim.dt)))
    tips = sim.tip
    return (tips[top] - rest[top], (tips - rest).mean(axis=0),
            float(np.linalg.norm(tips[top] - before)))
