"""Time integrators (docs/design.md §4), each written once as a compiled step loop over a model's
`systems.accelerations` (the articulated model or the seed model: `dynamics`).

- `theta_steps`: the θ-method, linearly implicit in the rates, with the model's stiff
  terms implicit (articulated: ``(M + θhC + θ²h²K) a = f(q, v) − θhK v``, the springs,
  dampers and the PSD part of gravity's stiffness), ``v ← v + h a``, each quaternion
  advanced by ``exp(h (v_old + θ h a))``. The articulated model's drag damping enters the
  inertias as ``c h LᵀDL`` (c = `DRAG_IMPLICITNESS` = 4, not θ): the drag also depends on
  where a limb is in the gusty field, an explicit term that θh left unstable on light leafy
  shoots in a storm, and h (backward Euler) on whole crowns at 60 m/s.
- `galpha_steps`: the Lie-group generalized-α method (Chung & Hulbert 1993; Arnold & Brüls
  2007; Brüls, Cardona & Arnold 2012) on the joints' rotations, coefficients from the
  spectral radius at infinity ρ∞ (`galpha_coefficients`); Newton iterations until converged
  (two where they contract fast), each one pass of the same recursion with the stiff terms
  implicit (`systems.accelerations_about`), a step whose iterations stop contracting taken
  again as sub-steps (`GalphaControl`); docs/design.md §4.7.
- `rk4_steps`: an explicit Runge–Kutta method given by its tableau (`RK4_A`, `RK4_B`,
  classical RK4) on the quaternions as vectors in R⁴ (``q̇ = ½ q ⊗ (0, v)``) and the
  rates, quaternions renormalised after each full step.

Each stops at the first non-finite rate, returning how many steps it completed and the
offending limb. The wind is sampled at the start of each step (RK4's stages see the limbs'
motion but the wind field of the step's start) and advanced by h after it
(`systems.advance_clock`). `freebody` steps a free body's rotation with the θ-method and RK4.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..dynamics.systems import accelerations, accelerations_about, advance_clock
from ..numerics import mat3 as m3
from ..numerics.kernel import kernel
from ..numerics.so3 import quat_advance, quat_rate


@kernel
def first_non_finite(v):
    """Index of the first limb whose rates (N, 3) hold a non-finite value, or −1."""
    for i in range(v.shape[0]):
        for r in range(3):
            if not math.isfinite(v[i, r]):
                return i
    return -1


# c of the drag's terms in the θ-method (docs/design.md §4.2): its damping c h LᵀDL and the
# loads' stiffness with (c h)². Still first order, steady states unchanged; it covers the
# drag's explicit dependence on where each limb is in the gusty field. At 60 m/s, turbulence
# 1.0, dt = 0.1, 0.05, 1/30, 1/60 s: c = 1 (backward Euler) ran away on young_oak, old_oak,
# the willow and the giant, c = 2 on the giant, c = 4 on none (docs/hardening.md).
DRAG_IMPLICITNESS = 4.0


@kernel
def theta_steps(system, n_steps, h, theta_m, q, v):
    """Advance (q, v) in place by n_steps θ-method steps of h seconds (module docstring).

    Returns (steps completed, index of the first limb with a non-finite rate or −1).
    """
    for step in range(n_steps):
        vdot = accelerations(system, q, v, theta_m * h, DRAG_IMPLICITNESS * h)
        bad = first_non_finite(vdot)
        if bad >= 0:
            return step, bad
        for i in range(q.shape[0]):
            v_old = m3.vload(v[i])
            a = m3.vload(vdot[i])
            m3.vstore(m3.vadd(v_old, m3.vscale(h, a)), v[i])
            quat_advance(q[i], m3.vscale(h, m3.vadd(v_old, m3.vscale(theta_m * h, a))))
        advance_clock(system, h)
    return n_steps, -1


# The Newton iterations of a generalized-α step (docs/design.md §4.7). The first is linearised at
# the step's start, like the θ-method's single one: exact for a linear system, but first order
# (the velocity products, not in the iteration matrix, are taken O(h) off); the second, at the
# state of the first one's solution, makes the step second order. (Linearising the first at a
# state extrapolated with v̇ₙ put the stiff twist modes' accelerations, hundreds of rad/s² at
# 1/30 s, into the state and diverged on most presets.) Whether a third is needed is decided
# as Hairer & Wanner (1996, Solving ODEs II, §IV.8) do for their simplified Newton: the
# iterate's error is about η Δ, η = θ/(1 − θ) with θ the contraction rate measured from the
# third iteration on, before it the last sub-step's η relaxed as η^0.8 (so that a run of
# two-iteration steps soon measures it again). Where the iteration contracts fast (η ≤ 0.3:
# 0.01–0.06 on the presets and the 10,000-limb tree in wind) a step stops once η Δ ≤ 5e-2 of
# the largest |x|: 2.1–2.2 iterations a frame instead of 3–4, the order sweep unchanged.
# Where it contracts slowly (violent undamped motion, storms: θ 0.3–0.9) the rate is not
# trusted and the step goes on until Δ ≤ 1e-3 of the largest |x|: accepting η Δ ≤ 1e-2 there
# ran the giant's energy test away at 4.0 s, and with two iterations a step the energy test
# ran away on three presets. Where the iteration stops contracting (light shoots at tens of
# rad/s) the step is taken again as two of h/2, recursively: the willow's energy test at
# ρ∞ = 0.6 and its storm at turbulence 1.0 ran away without. The floor, 1e-8 rad/s² (a
# rotation of 3e-12 rad in a step of 1/30 s): a tree at rest in still air has x and Δx of
# round-off (1e-12 on young_oak), which never met the relative test and took every step down
# to h/4 at 21.6 iterations a frame.
class GalphaControl(NamedTuple):
    """How `galpha_steps` controls its Newton iterations: with Δ = max |Δx| the change of the
    iterate x (rad/s²) from one iteration to the next (over every limb and axis), an
    iteration from the second on has converged when Δ ≤ max(tolerance · max |x|, floor)
    (floor in rad/s², for a tree at rest whose x and Δx are round-off), or when the rate
    estimate η ≤ trusted_rate and η Δ ≤ error_tolerance · max |x|. η = θ/(1 − θ) with θ the
    ratio of the last two changes (from the third iteration on; before it the last
    sub-step's η^0.8, `GalphaState.rate`). The iteration stops contracting when θ ≥
    contraction, or after max_iterations; the (sub-)step is then restarted as two of half
    the length, down to h / 2^max_halvings; at that length the last iterate is taken."""

    tolerance: float
    contraction: float
    max_iterations: int
    max_halvings: int
    floor: float
    error_tolerance: float
    trusted_rate: float


GALPHA_CONTROL = GalphaControl(1e-3, 0.9, 10, 2, 1e-8, 5e-2, 0.3)


class GalphaCoefficients(NamedTuple):
    """Chung & Hulbert's (1993) generalized-α parameters for spectral radius at infinity ρ∞:
    α_m = (2ρ∞ − 1)/(ρ∞ + 1), α_f = ρ∞/(ρ∞ + 1), γ = ½ + α_f − α_m, β = ¼ (γ + ½)²
    (second order, unconditionally stable for linear systems, high-frequency dissipation
    set by ρ∞: 1 none, 0 the most)."""

    alpha_m: float
    alpha_f: float
    beta: float
    gamma: float


def galpha_coefficients(rho_inf: float) -> GalphaCoefficients:
    """`GalphaCoefficients` of ρ∞ ∈ [0, 1]."""
    alpha_m = (2.0 * rho_inf - 1.0) / (rho_inf + 1.0)
    alpha_f = rho_inf / (rho_inf + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    return GalphaCoefficients(alpha_m, alpha_f, 0.25 * (gamma + 0.5) ** 2, gamma)


# `GalphaState.rate` when none is known: at a start, after a sub-step that did not converge.
UNKNOWN_RATE = 1e30

# Counters in `GalphaState.counts`, added to by every call of `galpha_steps`.
ITERATIONS, SUB_STEPS, RESTARTS, UNCONVERGED = range(4)


class GalphaState(NamedTuple):
    """What generalized-α carries from step to step besides (q, v), and its work arrays, for
    N limbs (`GalphaState.zeros(n)`). A step call that finds (q, v) other than the ones the
    last call left (a reset, a state set from outside, the first call) restarts the method
    from v̇ = a = the x of one iteration at that state about zero references, (M + c_v𝒞 +
    c_q𝒦) x = f (`galpha_steps`; docs/design.md §4.7)."""

    vdot: np.ndarray      # (N, 3) rad/s², the rates' derivative at the step's start
    a: np.ndarray         # (N, 3) rad/s², the algorithmic acceleration at the step's start
    turn: np.ndarray      # (N, 3) rad/s, the predictor's v + h (½ − β) a + h β a*
    q0: np.ndarray        # (N, 4) quaternions at the (sub-)step's start
    v0: np.ndarray        # (N, 3) rates at the (sub-)step's start
    q_end: np.ndarray     # (N, 4) the state the last call left
    v_end: np.ndarray     # (N, 3)
    guess: np.ndarray     # (N, 3) rad/s², the iterate of v̇ₙ₊₁
    a_next: np.ndarray    # (N, 3) rad/s², aₙ₊₁ of that iterate
    rate_ref: np.ndarray  # (N, 3) rad/s², the first iteration's references (`galpha_steps`)
    position_ref: np.ndarray
    level: np.ndarray     # (1,) int, the halvings the last step needed (the next starts one
                          #   coarser)
    rate: np.ndarray      # (1,) the iterations' last rate estimate η = θ/(1 − θ)
                          #   (`GalphaControl`; `UNKNOWN_RATE` when none)
    counts: np.ndarray    # (4,) int: iterations, sub-steps, restarts, sub-steps taken
                          #   unconverged at the finest length (`ITERATIONS` …)

    @classmethod
    def zeros(cls, n: int) -> "GalphaState":
        return cls(np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 4)),
                   np.zeros((n, 3)), np.full((n, 4), np.nan), np.full((n, 3), np.nan),
                   *(np.zeros((n, 3)) for _ in range(4)), np.zeros(1, np.int64),
                   np.full(1, UNKNOWN_RATE), np.zeros(4, np.int64))


@kernel(inline="always")
def _same(x, y):
    """x == y elementwise for (N, k) arrays (NaN never equal)."""
    for i in range(x.shape[0]):
        for r in range(x.shape[1]):
            if not x[i, r] == y[i, r]:
                return False
    return True


@kernel(inline="always")
def _galpha_state_of(guess, vdot, a, v0, q0, h, alpha_m, alpha_f, beta, gamma, turn, a_next,
                     q, v):
    """The state of v̇ₙ₊₁ = guess: aₙ₊₁ (into a_next), vₙ₊₁ and qₙ₊₁ (into v, q) from their
    defining equations, turn = vₙ + h (½ − β) aₙ + h β aₙ₊₁."""
    for i in range(guess.shape[0]):
        for r in range(3):
            a_new = ((1.0 - alpha_f) * guess[i, r] + alpha_f * vdot[i, r]
                     - alpha_m * a[i, r]) / (1.0 - alpha_m)
            turn[i, r] = v0[i, r] + h * ((0.5 - beta) * a[i, r] + beta * a_new)
            v[i, r] = v0[i, r] + h * ((1.0 - gamma) * a[i, r] + gamma * a_new)
            a_next[i, r] = a_new
        for r in range(4):
            q[i, r] = q0[i, r]
        quat_advance(q[i], m3.vscale(h, m3.vload(turn[i])))


@kernel(inline="always")
def _iteration_coefficients(h, coefficients):
    """(c_v s, c_q s²): how the rates and the rotations move with v̇ₙ₊₁ in a step of h s."""
    ratio = (1.0 - coefficients.alpha_f) / (1.0 - coefficients.alpha_m)   # ∂aₙ₊₁/∂v̇ₙ₊₁
    return h * coefficients.gamma * ratio, h * h * coefficients.beta * ratio


@kernel(inline="always")
def _galpha_sub_step(system, h, coefficients, control, q, v, work):
    """One generalized-α step of h seconds from (q, v) = (qₙ, vₙ) (saved into work.q0,
    work.v0) by Newton iterations (`galpha_steps`), leaving (q, v) and ``work.guess``,
    ``work.a_next`` at the state of the last iterate. Returns (status, limb): status 0
    converged, 1 not (`GalphaControl`), 2 a non-finite acceleration at that limb."""
    alpha_m, alpha_f, beta, gamma = (coefficients.alpha_m, coefficients.alpha_f,
                                     coefficients.beta, coefficients.gamma)
    vdot, a, turn, q0, v0 = work.vdot, work.a, work.turn, work.q0, work.v0
    guess, a_next = work.guess, work.a_next
    rate_ref, position_ref = work.rate_ref, work.position_ref
    c_v, c_q = _iteration_coefficients(h, coefficients)
    q0[:] = q
    v0[:] = v
    # The first iteration at (qₙ, vₙ), like the θ-method: with A = (α_f v̇ₙ − α_m aₙ)/
    # (1 − α_m), the rates move by h(1 − γ)aₙ + hγA + c_v x and the rotations by
    # h(vₙ + h(½ − β)aₙ + hβA) + c_q x, i.e. by c_v (x − rate_ref), c_q (x − position_ref).
    for i in range(q.shape[0]):
        for r in range(3):
            a_zero = (alpha_f * vdot[i, r] - alpha_m * a[i, r]) / (1.0 - alpha_m)
            rate_ref[i, r] = -h * ((1.0 - gamma) * a[i, r] + gamma * a_zero) / c_v
            position_ref[i, r] = -h * (v[i, r] + h * ((0.5 - beta) * a[i, r]
                                                      + beta * a_zero)) / c_q
    last_change = 0.0
    # Hairer & Wanner's rate estimate: the last sub-step's, relaxed toward 1 (so that a run of
    # two-iteration steps soon measures it again), until this one measures its own
    eta = max(work.rate[0], 1e-16) ** 0.8
    for iteration in range(control.max_iterations):
        if iteration == 0:
            x = accelerations_about(system, q, v, c_v, c_q, rate_ref, position_ref, True)
        else:
            x = accelerations_about(system, q, v, c_v, c_q, guess, guess, False)
        work.counts[ITERATIONS] += 1
        bad = first_non_finite(x)
        if bad >= 0:
            return 2, bad
        change = 0.0
        size = 0.0
        for i in range(x.shape[0]):
            for r in range(3):
                change = max(change, abs(x[i, r] - guess[i, r]))
                size = max(size, abs(x[i, r]))
        guess[:] = x
        _galpha_state_of(guess, vdot, a, v0, q0, h, alpha_m, alpha_f, beta, gamma, turn,
                         a_next, q, v)
        if iteration >= 2:
            theta = change / last_change if last_change > 0.0 else 0.0
            if theta >= control.contraction:
                work.rate[0] = UNKNOWN_RATE
                return 1, -1
            eta = theta / (1.0 - theta)
        if iteration >= 1 and (change <= max(control.tolerance * size, control.floor)
                               or (eta <= control.trusted_rate
                                   and eta * change <= control.error_tolerance * size)):
            work.rate[0] = eta
            return 0, -1
        last_change = change
    work.rate[0] = UNKNOWN_RATE
    return 1, -1


@kernel
def galpha_steps(system, n_steps, h, coefficients, control, q, v, work):
    """Advance (q, v) in place by n_steps Lie-group generalized-α steps of h seconds;
    coefficients: `GalphaCoefficients`, control: `GalphaControl`, work: `GalphaState`.

    With a = the algorithmic acceleration and v̇ the rates' derivative, a step is
        (1 − α_m) aₙ₊₁ + α_m aₙ = (1 − α_f) v̇ₙ₊₁ + α_f v̇ₙ,
        vₙ₊₁ = vₙ + h (1 − γ) aₙ + h γ aₙ₊₁,
        qₙ₊₁ = qₙ ⊗ exp(h (vₙ + h (½ − β) aₙ + h β aₙ₊₁)),
    with the equations of motion at (qₙ₊₁, vₙ₊₁), solved by Newton iterations in the
    recursion (`accelerations_about`, iteration matrix M + c_v 𝒞 + c_q 𝒦 with
    c_v = h γ (1 − α_f)/(1 − α_m), c_q = h² β (1 − α_f)/(1 − α_m)): the first linearised at
    the step's start (qₙ, vₙ), the next at the state of the last iterate, at least two, until
    converged (`GalphaControl`). A step whose iterations do not converge is taken again as two
    of h/2 (recursively): the method is a one-step method in (q, v, v̇, a), which carry over
    to the sub-steps unchanged. A step call starts at the halving level one coarser than the
    last step's (`GalphaState.level`); the wind's clock advances by each sub-step.

    Returns (steps completed, index of the first limb with a non-finite rate or −1); on a
    non-finite rate at the finest length the state is left at the sub-step's start.
    """
    vdot, a, guess, a_next = work.vdot, work.a, work.guess, work.a_next
    if not (_same(q, work.q_end) and _same(v, work.v_end)):
        # Not the explicit accelerations M⁻¹f: on a stiff mode displaced from rest they make
        # the method overshoot (a linear oscillator at ωh = 35, ρ∞ = 0.6: 2.9×, 3.5×, 2.7× its
        # energy over the first steps; ρ∞ = 0: 77×), which the twist modes' gyroscopic
        # coupling then ran away with. The implicit ones (θ = 1) are O(h²) off on the slow
        # modes and small on the stiff ones: the energy then only decays
        # (docs/design.md §4.7).
        c_v, c_q = _iteration_coefficients(h, coefficients)
        work.rate_ref[:] = 0.0
        start = accelerations_about(system, q, v, c_v, c_q, work.rate_ref, work.rate_ref,
                                    True)
        bad = first_non_finite(start)
        if bad >= 0:
            return 0, bad
        vdot[:] = start
        a[:] = start
        work.level[0] = 0
        work.rate[0] = UNKNOWN_RATE
    finest = control.max_halvings
    whole = 1 << finest                  # a step in units of the shortest sub-step
    for step in range(n_steps):
        level = max(work.level[0] - 1, 0)
        deepest = level
        done = 0
        while done < whole:
            length = h / (1 << level)
            status, bad = _galpha_sub_step(system, length, coefficients, control, q, v, work)
            if status != 0 and level < finest:
                q[:] = work.q0
                v[:] = work.v0
                level += 1
                deepest = max(deepest, level)
                work.counts[RESTARTS] += 1
                continue
            if status == 2:
                q[:] = work.q0
                v[:] = work.v0
                work.q_end[:] = np.nan
                return step, bad
            if status == 1:
                work.counts[UNCONVERGED] += 1
            work.counts[SUB_STEPS] += 1
            vdot[:] = guess
            a[:] = a_next
            advance_clock(system, length)
            done += whole >> level
        work.level[0] = deepest
    work.q_end[:] = q
    work.v_end[:] = v
    return n_steps, -1


# Classical RK4 (Butcher tableau): stage s starts from y0 + h Σ_j A[s, j] k_j; the step is
# y0 + h Σ_s B[s] k_s. B's weights as integers over RK4_B_DENOMINATOR, so that the sum is
# formed as (k0 + 2 k1 + 2 k2 + k3) h/6.
RK4_A = np.array([[0.0, 0.0, 0.0, 0.0],
                  [0.5, 0.0, 0.0, 0.0],
                  [0.0, 0.5, 0.0, 0.0],
                  [0.0, 0.0, 1.0, 0.0]])
RK4_B_NUMERATOR = np.array([1.0, 2.0, 2.0, 1.0])
RK4_B_DENOMINATOR = 6.0
RK4_B = RK4_B_NUMERATOR / RK4_B_DENOMINATOR
RK4_C = RK4_A.sum(axis=1)


class RK4Stages(NamedTuple):
    """Work arrays of `rk4_steps` for N limbs and S stages (`RK4Stages.zeros(n)`)."""

    q0: np.ndarray   # (N, 4) quaternions at the step's start
    v0: np.ndarray   # (N, 3) rates at the step's start
    qs: np.ndarray   # (N, 4) a stage's quaternions
    vs: np.ndarray   # (N, 3) a stage's rates
    kq: np.ndarray   # (S, N, 4) the stages' quaternion rates
    kv: np.ndarray   # (S, N, 3) the stages' accelerations

    @classmethod
    def zeros(cls, n: int, stages: int = RK4_A.shape[0]) -> "RK4Stages":
        return cls(np.zeros((n, 4)), np.zeros((n, 3)), np.zeros((n, 4)), np.zeros((n, 3)),
                   np.zeros((stages, n, 4)), np.zeros((stages, n, 3)))


@kernel(inline="always")
def _tableau_sum(start, weights, scale, k, count, i, r):
    """start + Σ_j (weights[j] scale) k[j, i, r] over the first count stages, in their order,
    zero weights skipped (an explicit tableau is mostly zeros)."""
    total = start
    for j in range(count):
        if weights[j] != 0.0:
            total += weights[j] * scale * k[j, i, r]
    return total


@kernel
def rk4_steps(system, n_steps, h, q, v, work):
    """Advance (q, v) in place by n_steps steps of h seconds of the explicit Runge–Kutta
    method `RK4_A`, `RK4_B` (nothing implicit); work: `RK4Stages`.

    Returns (steps completed, index of the first limb with a non-finite rate or −1); on a
    non-finite rate the state is left at the step's start.
    """
    q0, v0, qs, vs, kq, kv = work.q0, work.v0, work.qs, work.vs, work.kq, work.kv
    n = q.shape[0]
    stages = RK4_A.shape[0]
    for step in range(n_steps):
        q0[:] = q
        v0[:] = v
        for stage in range(stages):
            # the stage's state y0 + h Σ_j A[stage, j] k_j, in one pass over the limbs
            weights = RK4_A[stage]
            for i in range(n):
                for r in range(4):
                    qs[i, r] = _tableau_sum(q0[i, r], weights, h, kq, stage, i, r)
                for r in range(3):
                    vs[i, r] = _tableau_sum(v0[i, r], weights, h, kv, stage, i, r)
            vdot = accelerations(system, qs, vs, 0.0, 0.0)
            bad = first_non_finite(vdot)
            if bad >= 0:
                q[:] = q0
                v[:] = v0
                return step, bad
            for i in range(n):
                quat_rate(qs[i], vs[i], kq[stage, i])
            kv[stage] = vdot
        # y0 + h/denominator Σ_s numerator_s k_s (the sum formed in the stages' order), in one
        # pass over the limbs
        weight = h / RK4_B_DENOMINATOR
        for i in range(n):
            norm = 0.0
            for r in range(4):
                q[i, r] = q0[i, r] + weight * _tableau_sum(0.0, RK4_B_NUMERATOR, 1.0, kq,
                                                            stages, i, r)
                norm += q[i, r] * q[i, r]
            norm = 1.0 / math.sqrt(norm)
            for r in range(4):
                q[i, r] *= norm
            for r in range(3):
                v[i, r] = v0[i, r] + weight * _tableau_sum(0.0, RK4_B_NUMERATOR, 1.0, kv,
                                                            stages, i, r)
        advance_clock(system, h)
    return n_steps, -1
