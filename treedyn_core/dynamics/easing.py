"""Stiffness and damping changes that cannot inject energy (docs/design.md §2.1).

Multiplying the springs by s₂/s₁ while the tree is bent by θ would raise each spring's
torque at once by that factor (a ×0.1 → ×10 step: a hundred times the load, and the tree
flung back). Instead:

- **stiffness**: the new scale takes over with the torque unchanged: every spring's rest
  rotation is moved so that its error becomes θ' = (s₁/s₂) θ (`handover_offsets`; the spring
  energy ½ s K θ² is multiplied by s₁/s₂, so stiffening removes energy). The rest rotations
  then return to their own along a smooth (C², quintic) ramp (`ease_time`) over at least
  `EASE_PERIODS` of the tree's slowest sway at the stiffer of the two scales and
  `SOFT_PERIODS` at the softer: the tree travels the difference of its two deflections, the
  softer one's (a tenth of the stiffness: ten times the deflection) — any residual swing after
  the ramp is multiplied by the stiffer scale, and the moment that accelerates the tree along
  the travel is the softer deflection's moment times 5.8 (P_soft / 2πT)² (the quintic's peak
  acceleration, 10/√3 travel/T²), below 4 % of it for T ≥ 2 P_soft;
- **damping**: a damper only dissipates, whatever its coefficient; the scale moves
  geometrically over `DAMPING_EASE_TIME` so that its torque has no step either.

`slowest_period` estimates the slowest sway from above without an eigen-solve: along each
path root → tip, Dunkerley's sum Σ tr(K_j⁻¹ J_j) (J_j the subtree's inertia about joint j)
bounds 1/ω² of that chain from above; the largest over the tips is 1.4–1.8× the true slowest
period on the shipped presets.
"""

from __future__ import annotations

import math

import numpy as np

from ..model.tree import subtree_inertia_about_joints
from ..numerics import so3

DAMPING_EASE_TIME = 0.3   # s, of simulated time
EASE_PERIODS = 4.0        # the stiffness ramp, at least this many slowest periods at the stiffer
SOFT_PERIODS = 2.0        # ... and at the softer scale
MIN_EASE_TIME = 0.3       # s
UPDATE_INTERVAL = 0.01    # s between updates of the eased values during a step of many
MAX_HANDOVER_ANGLE = 1.0  # rad, the largest spring error a handover leaves


def smootherstep(x: float) -> float:
    """0 → 1 on x ∈ [0, 1], zero first and second derivatives at both ends."""
    x = min(max(x, 0.0), 1.0)
    return x * x * x * (x * (6.0 * x - 15.0) + 10.0)


def slowest_period(tree, stiffness_scale: float) -> float:
    """Estimated period (s) of the tree's slowest sway with springs scaled by stiffness_scale
    (an upper bound per root-to-tip path, module docstring; gravity's stiffness left out)."""
    J = subtree_inertia_about_joints(tree.parent, tree.level_start, tree.mass,
                                     tree.inertia_com, tree.com_offset, tree.rest_C_IF,
                                     tree.rest_base)                    # limb axes, kg m²
    flexibility = np.einsum("nij,nji->n", np.linalg.inv(tree.stiffness), J)   # s²
    path = flexibility.copy()
    for level in range(1, len(tree.level_start) - 1):
        rows = slice(tree.level_start[level], tree.level_start[level + 1])
        path[rows] += path[tree.parent[rows]]
    return 2.0 * math.pi * math.sqrt(path.max() / stiffness_scale)


def ease_time(period_at_unit_scale: float, old_scale: float, new_scale: float) -> float:
    """Duration (s) of the stiffness ramp from old_scale to new_scale (module docstring), the
    tree's slowest sway period at scale 1 given (s, `slowest_period`)."""
    stiffer, softer = max(old_scale, new_scale), min(old_scale, new_scale)
    return max(MIN_EASE_TIME, EASE_PERIODS * period_at_unit_scale / math.sqrt(stiffer),
               SOFT_PERIODS * period_at_unit_scale / math.sqrt(softer))


def handover_offsets(theta: np.ndarray, old_scale: float, new_scale: float) -> np.ndarray:
    """(N, 3) rotation vectors φ, child axes: the spring rest rotations E exp(φ) under which the
    spring errors θ (N, 3) rad become (old/new) θ, the torque unchanged to first order. A
    softening so strong that an error would exceed `MAX_HANDOVER_ANGLE` keeps that angle (a
    spring error is a rotation: it cannot grow without bound); the torque then drops, which
    lets the tree sag, never spring."""
    after = (old_scale / new_scale) * theta
    size = np.linalg.norm(after, axis=1)
    shrink = np.minimum(1.0, MAX_HANDOVER_ANGLE / np.maximum(size, 1e-300))
    return theta - shrink[:, None] * after


class StiffnessEase:
    """A stiffness change in progress: the springs' rest rotations E_i exp(α(t) φ_i), α from 1
    to 0 by `smootherstep` over `duration` s from `start` s."""

    def __init__(self, offsets: np.ndarray, start: float, duration: float):
        self.offsets = offsets
        self.start = float(start)
        self.duration = float(duration)

    def weight(self, time: float) -> float:
        """α at `time` s."""
        return 1.0 - smootherstep((time - self.start) / self.duration)

    def done(self, time: float) -> bool:
        return time >= self.start + self.duration

    def spring_C_rel(self, spring_C_rel: np.ndarray, time: float) -> np.ndarray:
        """(N, 3, 3) the rest rotations in force at `time`, child → parent."""
        return spring_C_rel @ so3.exp_many(self.weight(time) * self.offsets)


class DampingEase:
    """A damping change in progress: the scale moves from `old` to `new` geometrically (linearly
    from or to 0) over `DAMPING_EASE_TIME` s from `start` s."""

    def __init__(self, old: float, new: float, start: float):
        self.old, self.new, self.start = float(old), float(new), float(start)

    def done(self, time: float) -> bool:
        return time >= self.start + DAMPING_EASE_TIME

    def scale(self, time: float) -> float:
        x = smootherstep((time - self.start) / DAMPING_EASE_TIME)
        if self.old > 0.0 and self.new > 0.0:
            return self.old * (self.new / self.old) ** x
        return self.old + (self.new - self.old) * x


class SliderEases:
    """The stiffness and damping changes under way for one tree (`StiffnessEase`,
    `DampingEase`; at most one of each, a new stiffness change composed with the ramp under
    way): the springs' rest rotations and the damping scale a step uses at a given time."""

    def __init__(self, tree):
        self.tree = tree
        self.stiffness: StiffnessEase | None = None
        self.damping: DampingEase | None = None
        self._period: float | None = None   # the slowest sway period at scale 1, s, once needed

    def clear(self) -> None:
        """No change under way: the scales set are fully in force."""
        self.stiffness = self.damping = None

    @property
    def under_way(self) -> bool:
        return self.stiffness is not None or self.damping is not None

    def ease_stiffness(self, theta: np.ndarray, old_scale: float, new_scale: float,
                       time: float) -> None:
        """Start the change of the stiffness scale from old_scale to new_scale at `time` s,
        the springs' errors θ (N, 3) rad in force then (`handover_offsets`), composed with the
        ramp under way if any."""
        offsets = handover_offsets(theta, old_scale, new_scale)
        ease = self.stiffness
        if ease is not None and not ease.done(time):
            offsets = so3.log_many(so3.exp_many(ease.weight(time) * ease.offsets)
                                   @ so3.exp_many(offsets))
        if self._period is None:
            self._period = slowest_period(self.tree, 1.0)
        self.stiffness = StiffnessEase(offsets, time, ease_time(self._period, old_scale,
                                                                new_scale))

    def ease_damping(self, new_scale: float, time: float, set_scale: float) -> None:
        """Start the change of the damping scale to new_scale at `time` s from the one in force
        (`damping_scale` of set_scale, the scale set before)."""
        self.damping = DampingEase(self.damping_scale(set_scale, time), new_scale, time)

    def damping_scale(self, set_scale: float, time: float) -> float:
        """The damping scale in force at `time` s: set_scale, or between the old and the set
        one during an ease."""
        return set_scale if self.damping is None else self.damping.scale(time)

    def advance(self, own_rest: np.ndarray, time: float) -> np.ndarray | None:
        """At `time` s: end the eases that are done, and return the springs' rest rotations
        (N, 3, 3), child → parent, to put in force: the ramp's, or own_rest (the springs' own)
        when the ramp has just ended; None when no stiffness ramp was under way."""
        rest = None
        ease = self.stiffness
        if ease is not None:
            if ease.done(time):
                self.stiffness = None
                rest = own_rest
            else:
                rest = ease.spring_C_rel(own_rest, time)
        if self.damping is not None and self.damping.done(time):
            self.damping = None
        return rest

    def end_time(self, time: float) -> float:
        """Simulated time, s, by which the changes under way are fully in force (`time` when
        none is)."""
        ends = [time]
        if self.stiffness is not None:
            ends.append(self.stiffness.start + self.stiffness.duration)
        if self.damping is not None:
            ends.append(self.damping.start + DAMPING_EASE_TIME)
        return max(ends)
