"""The two models as a `Simulation` drives them: one written contract (`ModelDynamics`) and
its two implementations, chosen once when the simulation is built (docs/design.md §3).

- `ArticulatedDynamics`: the articulated model (§3.1); the steppers advance the simulation's
  own joint state in place.
- `SeedModelDynamics`: the blog's seed model (§3.2, `seed_model.SeedDynamics`), which steps
  absolute attitudes and rates converted from and back to the joint state.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np

from .articulated import mechanical_energy
from .equilibrium import mean_wind_equilibrium
from .joints import joint_torques
from .prestress import prestressed_spring_rotations
from .seed_equilibrium import seed_mean_wind_equilibrium
from .seed_model import SeedDynamics, seed_prestressed_spring_rotations


class ModelDynamics(Protocol):
    """What a `Simulation` asks of its model. `sim` is the simulation: its joint state
    ``q`` (N, 4), ``v`` (N, 3) rad/s, scales, loads and wind."""

    takes_pull: bool
    """Whether the model takes a pulled point (`Simulation.set_pull`)."""

    steps_in_place: bool
    """Whether the compiled steppers advance ``sim.q``, ``sim.v`` themselves (they stop before
    a non-finite update); if not, the simulation keeps a copy to fall back on."""

    def stepped_state(self, sim) -> tuple[NamedTuple, np.ndarray, np.ndarray]:
        """(record for `systems.accelerations`, quaternions (N, 4), rates (N, 3) rad/s): what
        the steppers advance, loaded from the simulation's joint state."""

    def store(self, sim) -> None:
        """The simulation's joint state from what the steppers advanced."""

    def prestressed_spring_rotations(self, tree, gravity: np.ndarray,
                                     stiffness_scale: float) -> np.ndarray:
        """(N, 3, 3) the springs' rest rotations whose balance under `gravity` (3,) m/s² is the
        tree's rest pose, for `stiffness_scale`."""

    def balance(self, sim) -> np.ndarray:
        """(N, 3, 3) joint rotations child → parent of the static equilibrium under gravity and
        the mean wind in force; raises TreedynError if none is found."""

    def energies(self, sim) -> tuple[float, float, float]:
        """(kinetic, gravity potential, spring potential), J."""

    def root_moment(self, sim) -> np.ndarray:
        """(3,) N m, inertial axes: the moment the root joint exerts on the tree."""


class ArticulatedDynamics:
    """The articulated model's part of a `Simulation` (`ModelDynamics`)."""

    takes_pull = True
    steps_in_place = True

    def stepped_state(self, sim) -> tuple[NamedTuple, np.ndarray, np.ndarray]:
        return sim.system(), sim.q, sim.v

    def store(self, sim) -> None:
        """Nothing to convert: the steppers advanced the joint state itself."""

    def prestressed_spring_rotations(self, tree, gravity: np.ndarray,
                                     stiffness_scale: float) -> np.ndarray:
        return prestressed_spring_rotations(tree, gravity, stiffness_scale)

    def balance(self, sim) -> np.ndarray:
        return mean_wind_equilibrium(sim).R_rel.copy()

    def energies(self, sim) -> tuple[float, float, float]:
        t, w = sim.tree, sim.workspace
        kinetic, gravity = mechanical_energy(t.mass, t.com_offset, t.inertia_com, w.C_IF, w.base,
                                             w.omega, w.base_vel, sim.gravity)
        spring = joint_torques(np.arange(t.n), sim.q, sim.v, sim.spring_q, t.stiffness, t.damping,
                               sim.stiffness_scale, sim.damping_in_force, 0.0, w.theta, w.tau)
        return kinetic, gravity, spring

    def root_moment(self, sim) -> np.ndarray:
        t, w = sim.tree, sim.workspace
        root = slice(0, 1)  # the root is limb 0 (breadth-first): its joint alone, O(1)
        joint_torques(np.arange(1), sim.q[root], sim.v[root], sim.spring_q[root], t.stiffness[root],
                      t.damping[root], sim.stiffness_scale, sim.damping_in_force, 0.0,
                      w.theta[root], w.tau[root])
        return w.C_IF[0] @ w.tau[0]


class SeedModelDynamics(SeedDynamics):
    """The seed model's part of a `Simulation` (`ModelDynamics`): `seed_model.SeedDynamics`
    with the seed model's own prestress and balance."""

    takes_pull = False
    steps_in_place = False

    def stepped_state(self, sim) -> tuple[NamedTuple, np.ndarray, np.ndarray]:
        self.load(sim)   # the seed model steps absolute attitudes and rates
        return self.system(sim), self.qa, self.omega

    def prestressed_spring_rotations(self, tree, gravity: np.ndarray,
                                     stiffness_scale: float) -> np.ndarray:
        return seed_prestressed_spring_rotations(tree, gravity, stiffness_scale)

    def balance(self, sim) -> np.ndarray:
        return seed_mean_wind_equilibrium(sim, self).R_rel
