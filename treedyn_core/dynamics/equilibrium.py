"""The tree's static equilibrium under gravity and the mean wind's drag (docs/design.md §6.7).

A run that starts from the rest pose meets the full wind at t = 0 and swings through a
release transient for its first seconds. `mean_wind_equilibrium` finds the pose in which
every joint's spring balances the weight *and* the mean wind's drag of its subtree, so a run
started there (``simulation.start: mean_wind``) shows the turbulence alone.

Statics. At rest (v = 0) each limb feels the drag of the mean wind U(z) ê at its midpoint
(`aero.drag_loads` with the limb's velocity zero: the steady drag, no turbulence). The
generalized force on joint i is its spring torque plus the moments about its base of its
subtree's weights (`linearise.Configuration.generalized_forces`) and drags
(`drag_joint_moments`). Newton's method on the joint rotations (`linearise.static_equilibrium`
with a load) solves it from the equilibrium under gravity; its tangent adds to the exact
spring and gravity stiffness the drag's as a dead load along ê: the foliage's drag,
|v|^(1+β) v with v = U(z) ê, does not depend on the limb's attitude at all, and the
cylinders' drag only through its normal component, a small term the iteration corrects (it
converges linearly in that term, to round-off in a few steps). If a Newton step fails, the
drag is stepped up from zero.
"""

from __future__ import annotations

import math

import numpy as np

from ..numerics import mat3 as m3
from ..numerics.kernel import kernel
from ..numerics.tree_lowrank import LowRankTreeMatrix
from .aero import drag_loads
from .linearise import (Configuration, Equilibrium, dead_load_stiffness, static_equilibrium,
                        static_equilibrium_under)

START_CHOICES = ("rest", "mean_wind")


def start_of(data: dict) -> str:
    """How a run of the preset dict `data` starts: ``simulation.start`` when given, else
    ``mean_wind`` for a prestressed tree without an ``initial_state`` and ``rest`` otherwise
    (docs/design.md §6.7)."""
    start = data["simulation"].get("start")
    if start is not None:
        return start
    return "mean_wind" if data["simulation"]["prestress"] and not data["initial_state"] else "rest"


@kernel
def drag_joint_moments(parent, C_IF, base, point, force, sub_f, sub_m, out):
    """Moment about each joint of its subtree's applied forces, N m, in the child's axes (N, 3):
    force (N, 3) N at point (N, 3) m, inertial. Accumulated inward in O(N) as the subtree's
    ΣF ``sub_f`` and Σ point × F ``sub_m`` (about the origin), then M_i = sub_m − base_i × sub_f."""
    n = parent.shape[0]
    for i in range(n):
        F = m3.vload(force[i])
        m3.vstore(F, sub_f[i])
        m3.vstore(m3.cross(m3.vload(point[i]), F), sub_m[i])
    for i in range(n - 1, -1, -1):
        moment = m3.vsub(m3.vload(sub_m[i]), m3.cross(m3.vload(base[i]), m3.vload(sub_f[i])))
        m3.vstore(m3.matvec_t(m3.load(C_IF[i]), moment), out[i])
        p = parent[i]
        if p >= 0:
            m3.vadd_into(m3.vload(sub_f[i]), sub_f[p])
            m3.vadd_into(m3.vload(sub_m[i]), sub_m[p])


class MeanDrag:
    """The mean wind's steady drag on the limbs of `sim` (v = 0), times `fraction`, as a load on
    the joints for `linearise.static_equilibrium_under`."""

    def __init__(self, sim, fraction: float = 1.0):
        self.sim = sim
        self.fraction = float(fraction)
        azimuth = math.radians(sim.wind.direction_deg)
        self.direction = np.array([math.cos(azimuth), math.sin(azimuth), 0.0])  # ê

    def forces(self, config: Configuration) -> tuple[np.ndarray, np.ndarray]:
        """(force (N, 3) N, its point of application, the midpoint (N, 3) m), inertial."""
        sim, t = self.sim, self.sim.tree
        wind = sim.data["wind"]
        lever = 0.5 * t.length[:, None] * np.einsum("nij,nj->ni", config.C_IF, t.u)
        mid = config.base + lever
        force, torque = np.empty((t.n, 3)), np.empty((t.n, 3))
        drag_loads(np.arange(t.n), np.ascontiguousarray(sim.wind.mean_velocity(mid[:, 2])),
                   np.zeros((t.n, 3)), np.ascontiguousarray(lever), t.length, t.radius, t.leaf_area,
                   float(wind["air_density"]), float(wind["drag_coefficient"]),
                   float(wind["leaf_drag_coefficient"]), float(wind["vogel_exponent"]), False,
                   force, torque, np.empty((t.n, 3, 3)))
        return self.fraction * force, mid

    def generalized_forces(self, config: Configuration) -> np.ndarray:
        """(N, 3) N m, child axes: the drag's moments about the joints (= −∂V/∂ε, V = −Σ F·r
        at fixed F)."""
        force, mid = self.forces(config)
        n = force.shape[0]
        out = np.empty((n, 3))
        drag_joint_moments(self.sim.tree.parent, config.C_IF, config.base, mid, force,
                           np.empty((n, 3)), np.empty((n, 3)), out)
        return out

    def stiffness(self, config: Configuration) -> LowRankTreeMatrix:
        """The drag's stiffness as a dead load along ê (N m/rad): gravity's Hessian with the
        weights m g replaced by the drags (F·ê) ê at the midpoints (module docstring)."""
        force, mid = self.forces(config)
        n = force.shape[0]
        weight = force @ self.direction                       # F·ê, N
        sums = np.empty((n, 4))                               # Σ F·ê and Σ (F·ê) r over subtrees
        _subtree_sums(self.sim.tree.parent, np.column_stack([weight, weight[:, None] * mid]),
                      sums)
        sub = sums[:, 1:] - sums[:, :1] * config.base         # Σ (F·ê)(r − base), N m
        return dead_load_stiffness(config, sub, self.direction)


@kernel
def _subtree_sums(parent, value, out):
    """out[i] = Σ of value (N, k) over limb i's subtree (breadth-first order)."""
    out[:] = value
    for i in range(parent.shape[0] - 1, 0, -1):
        p = parent[i]
        if p >= 0:
            for r in range(out.shape[1]):
                out[p, r] += out[i, r]


def mean_wind_equilibrium(sim) -> Equilibrium:
    """The static equilibrium of `sim`'s tree under gravity and the mean wind's drag at the
    wind speed and direction in force (module docstring). Raises TreedynError if none is
    found."""
    gravity_only = static_equilibrium(sim)
    if not sim.aerodynamics or sim.wind.speed == 0.0:
        return gravity_only
    return static_equilibrium_under(sim, gravity_only.R_rel, MeanDrag)
