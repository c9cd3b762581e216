"""Is the state physical? Bounds on the energy and the joint rates a tree can reach under its
loads, checked once per frame by `treedyn run` and the app; a state beyond them raises
`SimulationDiverged` naming the limb, the time and the likely cause.

An unstable step need not produce a NaN: it can leave a twig spinning at 1e60 rad/s with an
energy of 1e114 J, all finite. The bounds below come from the tree and the loads alone.

Energy. From the moment the guard is made (t₀) on, the mechanical energy E = T + V_s + V_g
changes only by the work of the non-conservative forces (the joint dampers take energy out):

    T + V_s  ≤  E(t₀) − min V_g + W_drag + W_ext

- ``min V_g``: every centre of mass stays within its reach ρ_i (the summed lengths of the
  limbs from the root to it) of the root's base r₀, so V_g = −Σ m_i g·r_i ≥
  −Σ m_i g·r₀ − |g| Σ m_i ρ_i.
- ``W_drag``: each limb's drag is at most its peak drag F_i = ½ ρ_air (C_d 2 r_i L_i +
  C_leaf A_i) max(1, U_peak²) (the Vogel factor (|v|/1 m/s)^β, β ≤ 0, is ≤ 1 above 1 m/s,
  and a slower flow gives less than 1 m/s's force), with U_peak the mean profile at the
  highest point the limb can reach plus the largest sum of the turbulence's Fourier
  amplitudes (|Σ a_j cos(…)| ≤ Σ |a_j| per component). The work of a force of at most F_i
  on a point that stays in a ball of diameter D_i = 2 (ρ_i + L_i) is bounded by F_i D_i for
  a force steady over each excursion; a gust in resonance with a sway mode can pump more
  per cycle, but that work is dissipated by the same mode's damping, and the bound is
  multiplied by `WORK_MARGIN` for it. Measured: every shipped preset that stays bounded
  in 10 s of a 60 m/s storm (turbulence 0.3, dt 0.05 s) reaches at most 0.09 % of the bound
  (two_limbs; 0.01–0.02 % for the trees), so the margin costs nothing in detection.
- ``W_ext``: the same, with the external forces in force (the app's pull), |F_ext,i| D_i.

Joint rates. T ≥ ½ λmin(J_i) |ω_i|² for every limb i (J_i its inertia about its centre of
mass; the other terms of T are ≥ 0), so |ω_i| ≤ sqrt(2 E_max / λmin(J_i)), and a joint rate,
the difference of two limbs' angular velocities, is at most the sum of the two bounds.
The thinnest twig's axial inertia makes this bound loose (10⁴–10⁷ rad/s), but a runaway
passes it within a few frames: it grows by orders of magnitude per frame.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import SimulationDiverged
from .wind import INTENSITY, SIGMA_V_RATIO, SIGMA_W_RATIO, SPEED, TARGET

# Factor on the drag's work bound for gusts in resonance with a sway mode (see above).
WORK_MARGIN = 10.0
# rad/s: no joint of a tree turns faster, whatever its energy (1,600 turns a second; the
# fastest joints of every shipped preset in the 60 m/s storm reach 136 rad/s,
# docs/hardening.md). The energy's bound on a twig's rate is looser (up to 1e7 rad/s).
MAX_JOINT_RATE = 1.0e4
# s of simulated time between two checks of a stepping simulation (once per frame of
# `treedyn run`'s default 30 frames per second).
CHECK_INTERVAL = 1.0 / 30.0


class TreeReach:
    """What the bounds need of the tree alone (computed once per simulation): each limb's
    reach from the root's base, m, the diameter of the ball it moves in, m, the highest
    point it can reach, m, and its smallest principal inertia about its centre of mass,
    kg m²."""

    def __init__(self, tree):
        n = tree.n
        reach_base = np.zeros(n)
        for i in range(1, n):  # breadth-first: parents first
            p = tree.parent[i]
            reach_base[i] = reach_base[p] + float(np.linalg.norm(tree.base_offset[i]))
        self.reach_com = reach_base + np.linalg.norm(tree.com_offset, axis=1)
        self.diameter = 2.0 * (reach_base + tree.length)
        self.root = np.asarray(tree.base_offset[0], float)
        self.top = self.root[2] + reach_base + tree.length
        j_min = np.linalg.eigvalsh(0.5 * (tree.inertia_com
                                          + tree.inertia_com.transpose(0, 2, 1)))[:, 0]
        self.j_min = np.maximum(j_min, np.finfo(float).tiny)


class DivergenceGuard:
    """The energy and joint-rate bounds of a `Simulation` from now on, and their check.

    `Simulation.step` makes one before the first step after any change of the loads (wind
    settings, external forces and pulls, stiffness and damping scales, a reset) and checks
    it at least every `CHECK_INTERVAL` of simulated time: every path that steps a simulation
    (`treedyn run`, `study`, `render`, `pull`, the app) is checked by the same bounds.
    """

    def __init__(self, sim):
        self.sim = sim
        reach = sim.reach
        g = np.asarray(sim.gravity, float)
        mass = sim.tree.mass
        # Gravity's energy above its lowest possible value, taken about the root's base
        # (a tree standing 5e5 m up loses nothing to cancellation).
        w = sim.workspace
        com = w.base + np.einsum("nij,nj->ni", w.C_IF, sim.tree.com_offset)
        above_floor = (-float(mass @ ((com - reach.root) @ g))
                       + float(np.linalg.norm(g) * (mass @ reach.reach_com)))
        kinetic, _, spring = sim.energies()
        self.energy_max = float(kinetic + spring + max(above_floor, 0.0)
                                + WORK_MARGIN * self._drag_work(reach.diameter, reach.top)
                                + float(np.linalg.norm(sim.ext_force, axis=1) @ reach.diameter)
                                + self._pull_work(reach.diameter))
        spin_max = np.sqrt(2.0 * self.energy_max / reach.j_min)
        # A joint rate is the difference of the limb's and its parent's angular velocities.
        tree = sim.tree
        self.rate_max = np.minimum(
            spin_max + np.where(tree.parent >= 0, spin_max[np.maximum(tree.parent, 0)], 0.0),
            MAX_JOINT_RATE)

    def _pull_work(self, diameter: np.ndarray) -> float:
        """J: the work a pull's spring can do, its force at the largest stretch the pulled
        point can reach (its distance to the target plus the ball it moves in) over that
        ball."""
        pull = self.sim.pull
        if pull.limb < 0:
            return 0.0
        limb = int(pull.limb)
        w = self.sim.workspace
        point = w.base[limb] + w.C_IF[limb] @ pull.offset
        stretch = float(np.linalg.norm(point - pull.target)) + float(diameter[limb])
        return float(pull.stiffness) * stretch * float(diameter[limb])

    def _drag_work(self, diameter: np.ndarray, top: np.ndarray) -> float:
        """Σ F_i D_i, J: each limb's peak drag times the diameter of the ball it moves in."""
        sim = self.sim
        if not sim.aerodynamics:
            return 0.0
        tree, wind, field = sim.tree, sim.data["wind"], sim.wind
        speed = max(field.state[SPEED], field.state[SPEED + TARGET])
        intensity = max(field.state[INTENSITY], field.state[INTENSITY + TARGET])
        amplitude = np.abs(field.mode_amp).sum(axis=1) * np.array(
            [1.0, SIGMA_V_RATIO, SIGMA_W_RATIO])
        gust = field.sigma_u(speed, intensity) * float(np.linalg.norm(amplitude))
        mean = field.mean_speed(top, speed)
        peak = mean + gust
        area = (wind["drag_coefficient"] * 2.0 * tree.radius * tree.length
                + wind["leaf_drag_coefficient"] * tree.leaf_area)
        force = 0.5 * wind["air_density"] * area * np.maximum(1.0, peak * peak)
        return float(force @ diameter)

    def check(self) -> None:
        """Raise SimulationDiverged if the state is beyond the bounds (or not finite)."""
        sim = self.sim
        with np.errstate(all="ignore"):
            rate = np.linalg.norm(sim.v, axis=1)
            kinetic, _, spring = sim.energies()
            stored = kinetic + spring
            ratio = rate / self.rate_max
        worst = int(np.nanargmax(np.where(np.isfinite(ratio), ratio, np.inf)))
        if math.isfinite(stored) and stored <= self.energy_max and ratio[worst] <= 1.0:
            return
        tree = sim.tree
        if ratio[worst] > 1.0 or not np.isfinite(ratio[worst]):
            what = (f"limb '{tree.names[worst]}' turns at {rate[worst]:.3g} rad/s relative to its "
                    f"parent, above the {self.rate_max[worst]:.3g} rad/s its loads allow")
        else:
            what = (f"the kinetic and spring energy is {stored:.3g} J, above the {self.energy_max:.3g} "
                    f"J the loads can supply (fastest limb '{tree.names[worst]}')")
        raise SimulationDiverged(
            f"the simulation diverged at t = {sim.time:.4f} s: {what}; likely cause: the "
            f"{sim.integrator} step (dt = {sim.dt:g} s) is unstable at wind "
            f"{sim.wind_speed:g} m/s, turbulence {sim.turbulence_intensity:g}: lower dt or the "
            f"wind")
