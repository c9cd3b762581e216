"""The turbulent wind field (docs/design.md §5): a mean power-law profile plus frozen
turbulence, a sum of Fourier modes advected with the mean wind.

The velocity at a point ``x`` (m, inertial) and time t is

    v(x, t) = U(z) ê + R(θ) Σ_j (σ_u a_uj, σ_v a_vj, σ_w a_wj) cos(k_j · ξ + φ_j),
    ξ = R(θ)ᵀ x − Ξ(t) e₁,

with ``U(z) = U (max(z, 0.1 m)/z_ref)^α``, ``ê = (cos θ, sin θ, 0)`` the
direction the wind blows toward, ``R(θ)`` the rotation about z from the
wind-aligned frame (u along the wind, v crosswind to its left, w up) to the
inertial frame, σ_u = I·U, σ_v = 0.8 σ_u, σ_w = 0.5 σ_u, and Ξ(t) = ∫ U dt the
distance the pattern has travelled along the wind. The modes (wavevectors
``k_j`` in the wind-aligned frame, unit-free amplitudes ``a_j``, phases
``φ_j``) are drawn once from the seed by `draw_modes` and never redrawn.

In a forest stand (``wind.canopy``) the mean profile is the stand's (`canopy`: log
above the canopy top, exponential below), σ_u = I·U_h at and above the top, and the
fluctuations decay below it.

Live changes of speed, direction and intensity ramp linearly over 1 s of
simulated time. The advection is accumulated along the wind (Ξ, a distance)
rather than as an inertial vector: a direction change then rotates the pattern
about the origin, where the tree stands, instead of about a point that may be
kilometres upwind after a long run, which would sweep the pattern past the
tree faster than any gust.

The changing state is a small float64 array (`STATE_SIZE`, indices below) so
that a compiled stepping loop can call `advance_wind`, `wind_modes` and `wind_at_points`
itself; `WindField` wraps them for Python callers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..errors import TreedynError
from ..model import canopy as cn
from ..model.schema import WIND
from ..numerics.fastmath import INV_TWO_PI, TWO_PI, cos_turns, fast_pow
from ..numerics.kernel import kernel
from ..numerics.runs import run_end

# Ratios of the crosswind and vertical to the along-wind standard deviation (docs/design.md §5).
SIGMA_V_RATIO = 0.8
SIGMA_W_RATIO = 0.5
# Heights below this (m) use the profile's value here: the power law vanishes at the ground.
Z_MIN = 0.1
# Duration (s) of the linear ramp of a live change of speed, direction or intensity.
RAMP_TIME = 1.0
# A point sees every mode pass within a record this long (s) at the preset speed
# (docs/design.md §5: k_x ≥ 2π / (max(U, 1 m/s) · 600 s)).
RECORD_TIME = 600.0
MIN_RECORD_SPEED = 1.0
# Shortest along-wind wavelength as a fraction of the length scale L: 0.625 m at
# L = 20 m, whose eddies pass a point at ~10 Hz in a 6 m/s wind; the variance
# beyond it is a few percent of σ_u² and is given to the resolved modes.
SHORTEST_WAVELENGTH_OVER_L = 1.0 / 32.0
# Keep at least this ratio between the highest and lowest wavenumber when a huge
# length scale would push the highest below the record bound.
MIN_WAVENUMBER_RANGE = 10.0
# von Kármán's constant Γ(1/3) / (√π Γ(5/6)) = 1.3390: with it the spectra below
# integrate to 1 and F_u(0) = 2L/π, i.e. L is exactly the integral length scale.
VON_KARMAN_A = math.gamma(1.0 / 3.0) / (math.sqrt(math.pi) * math.gamma(5.0 / 6.0))
# Gauss–Legendre nodes per wavenumber cell for the cell integrals of the spectra.
_QUADRATURE_NODES = 8

# A ramp ending within this time (s) of a step's end ends with the step (round-off in Σ dt).
_RAMP_END_SLACK = 1e-12

# Layout of the state array: time, advection, then (value, target, remaining ramp
# time) per ramped setting; the remaining time is 0 when no ramp is in progress.
TIME = 0  # s
ADVECTION = 1  # Ξ, m travelled by the pattern along the wind
SPEED = 2  # U at the reference height, m/s
DIRECTION = 5  # azimuth the wind blows toward, deg (unwrapped while ramping)
INTENSITY = 8  # I = σ_u / U
TARGET = 1  # offset of a setting's ramp target from its value
REMAINING = 2  # offset of its remaining ramp time, s
STATE_SIZE = 11

# The step's samples of the field (docs/design.md §5.1, docs/performance.md §3): the modes that
# pass a point slowly are summed every `SLOW_INTERVAL` s and interpolated linearly in time
# between; a mode is slow if its phase at a fixed point moves by at most `SLOW_PHASE` rad in
# that time (k_x U τ ≤ θ; the modes are drawn in ascending k_x, so the slow ones are the
# first). Linear interpolation of cos(ωt) over an interval with ωτ ≤ θ errs by at most
# θ²/8 of the mode's amplitude: 3 % at θ = 0.5.
SLOW_INTERVAL = 1.0 / 15.0   # τ, s
SLOW_PHASE = 0.5             # θ, rad
# Layout of the samples' plan (`plan_samples`): the interval's start and end (s), the number
# of slow modes in force, the time of the last sample (s), what this sample does (below) and
# where it is in the interval (0 … 1).
START = 0
END = 1
SLOW = 2
LAST = 3
ACTION = 4
FRACTION = 5
PLAN_SIZE = 6
# ACTION: interpolate; begin the next interval (the last one's end becomes its start); begin
# afresh (both ends summed now: the first sample of a run, after a jump in time or a change
# of the slow modes).
INTERPOLATE = 0.0
NEXT = 1.0
AFRESH = 2.0
# Two samples further apart than this (s) are not a run of steps: every mode is summed.
_SAMPLE_GAP = 0.5 * SLOW_INTERVAL
_PLAN_SLACK = 1e-9   # s, round-off in Σ dt
_VECTOR = 8          # modes a vectorised loop takes at once (4 doubles, unrolled twice)


def spectrum_u(k, length_scale):
    """Along-wind von Kármán spectrum F_u(k) (m/rad) per unit variance, one-sided in k ≥ 0.

    k : along-wind wavenumber, rad/m; length_scale : L, m. ∫₀^∞ F_u dk = 1, and
    F_u(0) = 2L/π gives the integral length scale L.
    """
    x2 = (VON_KARMAN_A * length_scale * k) ** 2
    return (2.0 * length_scale / math.pi) / (1.0 + x2) ** (5.0 / 6.0)


def spectrum_vw(k, length_scale):
    """Crosswind/vertical von Kármán spectrum F_v(k) (m/rad) per unit variance, one-sided.

    The isotropic lateral form for the same L (its own integral scale is L/2);
    ∫₀^∞ F_v dk = 1. k : rad/m; length_scale : L, m.
    """
    x2 = (VON_KARMAN_A * length_scale * k) ** 2
    return (length_scale / math.pi) * (1.0 + (8.0 / 3.0) * x2) / (1.0 + x2) ** (11.0 / 6.0)


def wavenumber_range(length_scale, speed):
    """Lowest and highest along-wind wavenumber (rad/m) of the modes.

    The lowest passes a point once in `RECORD_TIME` at ``max(speed, 1 m/s)``
    (docs/design.md §5); the highest has wavelength `SHORTEST_WAVELENGTH_OVER_L` · L.
    """
    k_min = TWO_PI / (max(speed, MIN_RECORD_SPEED) * RECORD_TIME)
    k_max = max(TWO_PI / (SHORTEST_WAVELENGTH_OVER_L * length_scale),
                MIN_WAVENUMBER_RANGE * k_min)
    return k_min, k_max


def draw_modes(modes, length_scale, speed, seed):
    """The Fourier modes of the turbulence, deterministic from ``seed``.

    The along-wind range [k_min, k_max] (`wavenumber_range`) is cut into
    ``modes`` cells of equal width in log k. Mode j has:

    - along-wind wavenumber k_x drawn log-uniformly inside cell j (stratified
      sampling: the point spectrum has exactly one line per cell);
    - crosswind and vertical wavenumbers k_y, k_z drawn normal with standard
      deviation hypot(k_x, 1/L)/√2 each: comparable with k_x for small eddies,
      never much below 1/L, so large eddies stay coherent over ~L across the
      wind and small ones are roughly isotropic;
    - amplitudes a_c = sqrt(2 w_cj / Σ_i w_ci) per component c ∈ (u, v, w), w_cj
      the integral of the von Kármán spectrum (`spectrum_u`, `spectrum_vw`)
      over cell j, so that Σ_j a_cj²/2 = 1 exactly and each cell carries its
      share of the spectrum. The components share the mode's cosine, so the
      covariance of u and v at any point is Σ_j a_uj a_vj / 2 (likewise for
      u, w and v, w): the signs of a_v and a_w are chosen by `balanced_signs`
      to make these sums nearly zero (random signs left correlations up to
      0.4 for some seeds);
    - a phase φ uniform in [0, 2π).

    Parameters
    ----------
    modes : int, number of modes M ≥ 1
    length_scale : float, along-wind integral length scale L, m
    speed : float, preset mean speed at the reference height, m/s (sets k_min only)
    seed : int, seed of ``np.random.default_rng``

    Returns
    -------
    mode_k : (3, M) ndarray, wavevectors in the wind-aligned frame (along, across, up), rad/m
    mode_amp : (3, M) ndarray, unit-free amplitudes of the u, v, w components
    mode_phase : (M,) ndarray, phases, rad
    """
    rng = np.random.default_rng(seed)
    stratum = rng.random(modes)
    across = rng.standard_normal((2, modes))
    mode_phase = TWO_PI * rng.random(modes)

    k_min, k_max = wavenumber_range(length_scale, speed)
    log_edges = np.linspace(math.log(k_min), math.log(k_max), modes + 1)
    log_width = np.diff(log_edges)
    k_along = np.exp(log_edges[:-1] + stratum * log_width)

    # Cell integrals ∫ F(k) dk = ∫ F(k) k d(ln k), Gauss–Legendre in ln k.
    nodes, weights = np.polynomial.legendre.leggauss(_QUADRATURE_NODES)
    k_nodes = np.exp(log_edges[:-1, None] + 0.5 * (nodes + 1.0) * log_width[:, None])
    quad = 0.5 * weights * log_width[:, None] * k_nodes
    cell_u = (spectrum_u(k_nodes, length_scale) * quad).sum(axis=1)
    cell_vw = (spectrum_vw(k_nodes, length_scale) * quad).sum(axis=1)

    mode_k = np.empty((3, modes))
    mode_k[0] = k_along
    mode_k[1:] = across * (np.hypot(k_along, 1.0 / length_scale) / math.sqrt(2.0))
    amp_u = np.sqrt(2.0 * cell_u / cell_u.sum())
    amp_vw = np.sqrt(2.0 * cell_vw / cell_vw.sum())
    amp_v = amp_vw * balanced_signs((amp_u * amp_vw)[:, None])
    amp_w = amp_vw * balanced_signs(np.column_stack([amp_u * amp_vw, amp_v * amp_vw]))
    return mode_k, np.stack([amp_u, amp_v, amp_w]), mode_phase


def balanced_signs(weights):
    """Signs s_j = ±1 that keep |Σ_j s_j weights_j| small, weights (M, d).

    Greedy: largest weight first, each sign the one that shrinks the running
    sum. For the default modes the sums left are below 1e-3 (weights up to 0.1).
    """
    signs = np.ones(len(weights))
    total = np.zeros(weights.shape[1])
    for j in np.argsort(-np.linalg.norm(weights, axis=1), kind="stable"):
        if total @ weights[j] > 0.0:
            signs[j] = -1.0
        total += signs[j] * weights[j]
    return signs


@kernel(inline="always", fastmath=False)
def _ramp(state, index, dt):
    """Move setting ``index`` of the state linearly toward its target for dt s."""
    remaining = state[index + REMAINING]
    if dt >= remaining - _RAMP_END_SLACK:
        state[index] = state[index + TARGET]
        state[index + REMAINING] = 0.0
    else:
        state[index] += (state[index + TARGET] - state[index]) * (dt / remaining)
        state[index + REMAINING] = remaining - dt


@kernel(fastmath=False)
def advance_wind(state, dt):
    """Advance the wind state (`STATE_SIZE`,) by dt s: time, ramps, then advection.

    The advection integrates the reference speed by the trapezoid rule, exact
    for a linear ramp, so the pattern's position is continuous in time. Strict IEEE
    arithmetic (no fastmath): the clock and the advection add up over a whole run.
    """
    speed_old = state[SPEED]
    _ramp(state, SPEED, dt)
    _ramp(state, DIRECTION, dt)
    _ramp(state, INTENSITY, dt)
    if state[DIRECTION + REMAINING] == 0.0:
        # A finished turn may leave the azimuth unwrapped; 360° turns change nothing.
        state[DIRECTION] = state[DIRECTION] % 360.0
        state[DIRECTION + TARGET] = state[DIRECTION]
    state[ADVECTION] += 0.5 * (speed_old + state[SPEED]) * dt
    state[TIME] += dt


class WindInputs(NamedTuple):
    """What the step kernels read of a `WindField` (`WindField.inputs`), by name."""

    state: np.ndarray            # (`STATE_SIZE`,) the wind state, advanced by the steppers
    reference_height: float      # z_ref, m
    profile_exponent: float      # α
    mode_k: np.ndarray           # (3, M) rad/m
    mode_amp: np.ndarray         # (3, M)
    mode_phase: np.ndarray       # (M,) rad
    work: np.ndarray             # (7, M) the modes now (`wind_modes`)
    canopy: np.ndarray           # (`canopy.PROFILE_SIZE`,) the stand's profile; zeros: open
    plan: np.ndarray             # (`PLAN_SIZE`,) the samples' plan (`plan_samples`)
    ahead: np.ndarray            # (7, M) the modes at the plan's END
    ahead_state: np.ndarray      # (`STATE_SIZE`,) the wind state at the plan's END
    slow_start: np.ndarray       # (P, 3) m/s, the slow modes' sum at each point at START
    slow_end: np.ndarray         # (P, 3) m/s, at END


@kernel(allocates=False)
def plan_samples(wind):
    """Before a step samples the field of a `WindInputs` record at its points (`wind_at`):
    its modes now into ``wind.work``, and what the sample does with the slow modes
    (``wind.plan``, `SLOW_INTERVAL`): interpolate inside the interval in force; at its end,
    begin the next one; begin afresh after a jump in time, or when the speed changed which
    modes are slow. While the wind turns (a direction ramp), and when samples are further
    apart than half an interval (large steps), every mode is summed at every sample."""
    state, plan = wind.state, wind.plan
    wind_modes(state, wind.mode_k, wind.mode_amp, wind.mode_phase, wind.canopy, wind.work)
    t = state[TIME]
    since = t - plan[LAST]
    plan[LAST] = t
    if since == 0.0:   # another sample at this time (rk4's stages): the slow sums are made
        plan[ACTION] = INTERPOLATE
        return
    turning = state[DIRECTION + REMAINING] > 0.0
    if plan[SLOW] > 0.0 and plan[START] - _PLAN_SLACK <= t < plan[END] - _PLAN_SLACK \
            and not turning:
        plan[ACTION] = INTERPOLATE
    elif not turning and 0.0 < since <= _SAMPLE_GAP:
        ahead = wind.ahead_state
        for index in range(STATE_SIZE):
            ahead[index] = state[index]
        advance_wind(ahead, SLOW_INTERVAL)
        wind_modes(ahead, wind.mode_k, wind.mode_amp, wind.mode_phase, wind.canopy, wind.ahead)
        # slow: k_x U τ ≤ θ at the faster of the speeds now and at the end
        limit = SLOW_PHASE / (SLOW_INTERVAL * max(state[SPEED], ahead[SPEED], 1e-12))
        modes = wind.mode_k.shape[1]
        slow = 0
        while slow < modes and wind.mode_k[0, slow] <= limit:
            slow += 1
        # the modes summed at every sample a multiple of `_VECTOR` (the slowest of the others
        # join them): a vectorised loop's remainder runs one mode at a time
        slow = max(modes - _VECTOR * ((modes - slow + _VECTOR - 1) // _VECTOR), 0)
        at_end = plan[SLOW] > 0.0 and abs(t - plan[END]) <= _PLAN_SLACK
        plan[ACTION] = NEXT if at_end and slow == plan[SLOW] else AFRESH
        plan[SLOW] = slow
        plan[START] = t
        plan[END] = t + SLOW_INTERVAL
    else:
        plan[SLOW] = 0.0
        plan[ACTION] = INTERPOLATE
    plan[FRACTION] = (t - plan[START]) / SLOW_INTERVAL if plan[SLOW] > 0.0 else 0.0


@kernel(inline="always")
def wind_at(limbs, points, wind, out):
    """`wind_at_points` of a `WindInputs` record as `plan_samples` planned it: the velocity
    (m/s) at points[i] (m) into out[i] for i in ``limbs`` (int array)."""
    wind_at_points(limbs, points, wind.state, wind.reference_height, wind.profile_exponent,
                   wind.work, wind.canopy, wind.plan, wind.ahead, wind.slow_start,
                   wind.slow_end, out)


@kernel(inline="always")
def _canopy_shape(z, canopy):
    """U(z)/U_h of the stand's profile (`canopy.shape`) at a height z ≥ `Z_MIN` m."""
    height = canopy[cn.HEIGHT]
    if z >= height:
        z0 = canopy[cn.ROUGHNESS]
        above = height - canopy[cn.DISPLACEMENT]
        return math.log((z - canopy[cn.DISPLACEMENT]) / z0) / math.log(above / z0)
    return math.exp(canopy[cn.MEAN_DECAY] * (z / height - 1.0))


@kernel
def wind_velocity(points, state, reference_height, profile_exponent, mode_k, mode_amp,
                  mode_phase, work, canopy, out):
    """Wind velocity at P points: mean profile + Fourier modes (docs/design.md §5).

    points : (P, 3) m, inertial; state : (`STATE_SIZE`,) the wind state;
    reference_height : z_ref, m; profile_exponent : α; mode_k (3, M) rad/m,
    mode_amp (3, M), mode_phase (M,) rad from `draw_modes`; work : (7, M)
    scratch; canopy : (`canopy.PROFILE_SIZE`,) the stand's profile (height 0: open
    ground, the power law); out : (P, 3) m/s, inertial, overwritten.
    """
    wind_modes(state, mode_k, mode_amp, mode_phase, canopy, work)
    exact = np.zeros(PLAN_SIZE)   # no slow modes: every mode summed
    none = np.empty((0, 3))
    wind_at_points(np.arange(points.shape[0]), points, state, reference_height,
                   profile_exponent, work, canopy, exact, work, none, none, out)


@kernel
def wind_modes(state, mode_k, mode_amp, mode_phase, canopy, work):
    """The modes of the field now, as `wind_at_points` sums them, into work (7, M): per mode,
    in inertial axes, the wavevector R k in turns/m (rows 0–2), the phase offset φ − k_x Ξ
    in turns (row 3), reduced to [−1/2, 1/2] so that the cosine's argument stays small
    however far the pattern has travelled, and the amplitude vector R σ∘a, m/s (rows 4–6).
    σ_u = I·U, in a stand I·U_h at the canopy top. state, mode_k, mode_amp, mode_phase,
    canopy as for `wind_velocity`."""
    speed = state[SPEED]
    azimuth = math.radians(state[DIRECTION])
    c = math.cos(azimuth)
    s = math.sin(azimuth)
    in_stand = canopy[cn.HEIGHT] > 0.0
    sigma_u = state[INTENSITY] * speed * (canopy[cn.TOP_OVER_REFERENCE] if in_stand else 1.0)
    advection = state[ADVECTION]
    for j in range(mode_phase.shape[0]):
        work[0, j] = INV_TWO_PI * (c * mode_k[0, j] - s * mode_k[1, j])
        work[1, j] = INV_TWO_PI * (s * mode_k[0, j] + c * mode_k[1, j])
        work[2, j] = INV_TWO_PI * mode_k[2, j]
        turns = INV_TWO_PI * (mode_phase[j] - mode_k[0, j] * advection)
        work[3, j] = turns - np.rint(turns)
        amp_u = sigma_u * mode_amp[0, j]
        amp_v = SIGMA_V_RATIO * sigma_u * mode_amp[1, j]
        work[4, j] = c * amp_u - s * amp_v
        work[5, j] = s * amp_u + c * amp_v
        work[6, j] = SIGMA_W_RATIO * sigma_u * mode_amp[2, j]


@kernel(inline="always")
def _mode_rows(table, start, stop):
    """The rows of a `wind_modes` table (7, M) over the modes start … stop − 1, as seven
    contiguous views that start at 0 (k_x, k_y, k_z, offset, amp_x, amp_y, amp_z): a loop over
    a 2-D slice's columns, or from a variable first index, does not vectorise (3–4× slower)."""
    return (table[0, start:stop], table[1, start:stop], table[2, start:stop],
            table[3, start:stop], table[4, start:stop], table[5, start:stop],
            table[6, start:stop])


@kernel(inline="always")
def _mode_sum(rows, x, y, z):
    """(Σ_x, Σ_y, Σ_z) m/s over the modes of `rows` (`_mode_rows`) at the point (x, y, z) m."""
    k_x, k_y, k_z, offset, amp_x, amp_y, amp_z = rows
    sum_x = 0.0
    sum_y = 0.0
    sum_z = 0.0
    for j in range(k_x.shape[0]):
        cos_j = cos_turns(k_x[j] * x + k_y[j] * y + k_z[j] * z + offset[j])
        sum_x += amp_x[j] * cos_j
        sum_y += amp_y[j] * cos_j
        sum_z += amp_z[j] * cos_j
    return sum_x, sum_y, sum_z


@kernel(allocates=False)
def wind_at_points(limbs, points, state, reference_height, profile_exponent, work, canopy,
                   plan, ahead, slow_start, slow_end, out):
    """Wind velocity (m/s, inertial) at points[i] (m) into out[i], for i in ``limbs`` (int
    array): the mean profile plus the modes `wind_modes` wrote into work (7, M).

    The first ``plan[SLOW]`` modes (`plan_samples`) are not summed from work but interpolated
    between their sums at the interval's start and end, slow_start[i] and slow_end[i] (P, 3),
    which the sample updates as ``plan[ACTION]`` says (the end's sum from ``ahead``, the
    modes at the end). With plan[SLOW] = 0 every mode is summed.

    In a stand the mean is U(z_ref)·U(z)/U(z_ref) of `canopy.shape`, the fluctuations times
    exp(a_σ (z/h − 1)) below the canopy top.
    """
    slow = int(plan[SLOW])
    action = plan[ACTION]
    fraction = plan[FRACTION]
    speed = state[SPEED]
    azimuth = math.radians(state[DIRECTION])
    c = math.cos(azimuth)
    s = math.sin(azimuth)
    height = canopy[cn.HEIGHT]
    in_stand = height > 0.0
    modes = work.shape[1]
    fast = _mode_rows(work, slow, modes)       # summed at every sample
    slow_now = _mode_rows(work, 0, slow)       # the slow modes now, and at the interval's end
    slow_ahead = _mode_rows(ahead, 0, slow)

    # The mean profile first, in loops of their own that vectorise (fast_pow; over each run
    # of consecutive limbs as views, `runs`).
    top_speed = speed * canopy[cn.TOP_OVER_REFERENCE]
    inv_height = 1.0 / reference_height
    k = 0
    while k < limbs.shape[0]:
        end = run_end(limbs, k)
        first, stop = limbs[k], limbs[k] + end - k
        at, mean = points[first:stop], out[first:stop]
        if in_stand:
            for j in range(stop - first):
                mean[j, 2] = top_speed * _canopy_shape(max(at[j, 2], Z_MIN), canopy)
        else:
            for j in range(stop - first):
                mean[j, 2] = speed * fast_pow(max(at[j, 2], Z_MIN) * inv_height,
                                              profile_exponent)
        k = end
    for k in range(limbs.shape[0]):
        p = limbs[k]
        x = points[p, 0]
        y = points[p, 1]
        z = points[p, 2]
        sum_x, sum_y, sum_z = _mode_sum(fast, x, y, z)
        if slow > 0:
            if action == AFRESH:
                slow_start[p, 0], slow_start[p, 1], slow_start[p, 2] = _mode_sum(
                    slow_now, x, y, z)
            elif action == NEXT:
                for r in range(3):
                    slow_start[p, r] = slow_end[p, r]
            if action != INTERPOLATE:
                slow_end[p, 0], slow_end[p, 1], slow_end[p, 2] = _mode_sum(slow_ahead, x, y, z)
            sum_x += slow_start[p, 0] + fraction * (slow_end[p, 0] - slow_start[p, 0])
            sum_y += slow_start[p, 1] + fraction * (slow_end[p, 1] - slow_start[p, 1])
            sum_z += slow_start[p, 2] + fraction * (slow_end[p, 2] - slow_start[p, 2])
        if in_stand and z < height:
            below = math.exp(canopy[cn.TURBULENCE_DECAY] * (max(z, Z_MIN) / height - 1.0))
            sum_x *= below
            sum_y *= below
            sum_z *= below
        mean = out[p, 2]
        out[p, 0] = mean * c + sum_x
        out[p, 1] = mean * s + sum_y
        out[p, 2] = sum_z


def _checked(key, value):
    """``value`` as a float, or a `TreedynError` worded like the preset's if it is
    non-finite or outside the range of wind.``key`` (closed bounds in `schema.WIND`)."""
    field = WIND[key]
    value = float(value)
    if not math.isfinite(value):
        raise TreedynError(f"wind.{key}: must be finite, got {value:g}")
    if (field.min is not None and value < field.min) or (field.max is not None
                                                         and value > field.max):
        unit = f" {field.unit}" if field.unit else ""
        raise TreedynError(f"wind.{key}: must be >= {field.min:g}{unit} and "
                           f"<= {field.max:g}{unit}, got {value:g}")
    return value


class WindField:
    """The wind of one preset: mean profile + frozen turbulence, with live ramped changes.

    Parameters
    ----------
    wind : mapping with every key of `schema.WIND` (a validated preset's ``wind``).
        Only the field's keys are read; the drag coefficients are for the loads.
    frontal_area_index : λ of the stand (`canopy.frontal_area_index`), needed with a
        ``canopy``. In a stand the intensity is σ_u/U_h at the canopy top (a forest species
        tree's default: the measured 1.8 u*/U_h, and L = h; docs/design.md §5.1).

    Attributes
    ----------
    reference_height : float, z_ref, m
    profile_exponent : float, α (open ground only)
    length_scale : float, L, m
    flow : `canopy.CanopyFlow` of the stand (``wind.canopy``), or None on open ground
    canopy : (`canopy.PROFILE_SIZE`,) ndarray, the stand's profile as the kernel reads it
    mode_k : (3, M) ndarray, wavevectors in the wind-aligned frame, rad/m
    mode_amp : (3, M) ndarray, unit-free u, v, w amplitudes (Σ a²/2 = 1 per row)
    mode_phase : (M,) ndarray, phases, rad
    state : (STATE_SIZE,) ndarray, the changing state (see the module's indices)

    Not thread-safe: call the setters from the thread that advances the field
    (a worker applies queued slider changes between steps), or a step may read
    a half-written ramp.
    """

    def __init__(self, wind: Mapping[str, Any], frontal_area_index: float | None = None):
        self.reference_height = float(wind["reference_height"])
        self.profile_exponent = float(wind["profile_exponent"])
        self.length_scale = float(wind["length_scale"])
        stand = wind.get("canopy") or {}
        # The stand's mean flow (`canopy.CanopyFlow`), None on open ground.
        self.flow = None
        if stand.get("height") is not None:
            if frontal_area_index is None:
                raise ValueError("a wind with a canopy needs the stand's frontal area index")
            self.flow = cn.stand_flow(float(stand["height"]), float(stand["spacing"]),
                                      frontal_area_index)
        self.canopy = cn.profile_array(self.flow, self.reference_height)
        self._preset = (float(wind["speed"]), float(wind["direction_deg"]),
                        float(wind["turbulence_intensity"]))
        self.mode_k, self.mode_amp, self.mode_phase = draw_modes(
            int(wind["modes"]), self.length_scale, self._preset[0], int(wind["seed"]))
        self.state = np.zeros(STATE_SIZE)
        self._work = np.empty((7, self.mode_phase.shape[0]))
        self._plan = np.zeros(PLAN_SIZE)
        self._ahead = np.empty((7, self.mode_phase.shape[0]))
        self._ahead_state = np.zeros(STATE_SIZE)
        self._slow = np.zeros((2, 0, 3))
        self.reset()

    def reset(self):
        """Back to t = 0, the pattern at its start and the preset's speed, direction, intensity."""
        for index, value in zip((SPEED, DIRECTION, INTENSITY), self._preset):
            self.state[index + TARGET] = value
        self.restart()

    def restart(self):
        """Back to t = 0 and no advection, keeping the settings in force (ramps finished at
        their targets): the field a run started with these settings would have."""
        targets = [self.state[index + TARGET] for index in (SPEED, DIRECTION, INTENSITY)]
        self.state[:] = 0.0
        for index, target in zip((SPEED, DIRECTION, INTENSITY), targets):
            self.state[index] = target
            self.state[index + TARGET] = target
        self.state[DIRECTION] %= 360.0
        self.state[DIRECTION + TARGET] = self.state[DIRECTION]
        self.resample()

    def resample(self):
        """Forget the step's samples of the slow modes (`plan_samples`): after the state was
        set from outside (a reset, a restored run), the next samples sum every mode anew."""
        self._plan[:] = 0.0
        self._plan[LAST] = -math.inf

    @property
    def time(self):
        """Simulated time since the start or the last reset, s."""
        return float(self.state[TIME])

    @property
    def speed(self):
        """Current mean speed at the reference height, m/s (moves during a ramp)."""
        return float(self.state[SPEED])

    @property
    def direction_deg(self):
        """Current azimuth the wind blows toward, deg in [0, 360) (0 = +x, 90 = +y)."""
        return float(self.state[DIRECTION] % 360.0)

    @property
    def intensity(self):
        """Current turbulence intensity I = σ_u / U (in a stand, σ_u / U_h at the canopy top)."""
        return float(self.state[INTENSITY])

    def _start_ramp(self, index, target):
        self.state[index + TARGET] = target
        self.state[index + REMAINING] = RAMP_TIME

    def set_speed(self, speed):
        """Ramp the mean speed at the reference height to ``speed`` m/s over 1 s."""
        self._start_ramp(SPEED, _checked("speed", speed))

    def set_direction(self, direction_deg):
        """Ramp the azimuth to ``direction_deg`` (deg) over 1 s, along the shorter arc."""
        direction_deg = _checked("direction_deg", direction_deg)
        turn = (direction_deg - self.state[DIRECTION] + 180.0) % 360.0 - 180.0
        self._start_ramp(DIRECTION, self.state[DIRECTION] + turn)

    def set_intensity(self, intensity):
        """Ramp the turbulence intensity I = σ_u / U to ``intensity`` over 1 s."""
        self._start_ramp(INTENSITY, _checked("turbulence_intensity", intensity))

    def advance(self, dt):
        """Advance the field by dt ≥ 0 s: ramps progress and the pattern moves with the wind."""
        if not dt >= 0.0:
            raise ValueError(f"dt must be ≥ 0 s, got {dt}")
        advance_wind(self.state, float(dt))

    def velocity_at(self, points, out):
        """Write the wind velocity at the current time into ``out`` and return it.

        points : (P, 3) m, inertial; out : (P, 3) float64 C-contiguous, m/s, inertial.
        """
        points = np.ascontiguousarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3:
            raise ValueError(f"points must have shape (P, 3), got {points.shape}")
        if (out.shape != points.shape or out.dtype != np.float64
                or not out.flags.c_contiguous):
            raise ValueError(f"out must be a C-contiguous float64 array of shape "
                             f"{points.shape}, got {out.dtype} {out.shape}")
        wind_velocity(points, self.state, self.reference_height, self.profile_exponent,
                      self.mode_k, self.mode_amp, self.mode_phase, self._work, self.canopy, out)
        return out

    def inputs(self, points: int) -> WindInputs:
        """The field as the step kernels read it, sampled at ``points`` points (the limbs'
        midpoints); its state and its samples' plan are advanced in place by them."""
        if self._slow.shape[1] != points:
            self._slow = np.zeros((2, points, 3))
            self.resample()
        return WindInputs(self.state, self.reference_height, self.profile_exponent, self.mode_k,
                          self.mode_amp, self.mode_phase, self._work, self.canopy, self._plan,
                          self._ahead, self._ahead_state, self._slow[0], self._slow[1])

    def mean_speed(self, z, speed=None):
        """Mean speed (...,) m/s at heights ``z`` (...,) m for a speed `speed` m/s at the
        reference height (default: the current one): the power law, or the stand's profile."""
        z = np.maximum(np.asarray(z, dtype=np.float64), Z_MIN)
        speed = self.state[SPEED] if speed is None else float(speed)
        if self.flow is None:
            return speed * (z / self.reference_height) ** self.profile_exponent
        return speed * self.canopy[cn.TOP_OVER_REFERENCE] * cn.shape(z, self.flow)

    def sigma_u(self, speed=None, intensity=None):
        """Largest along-wind standard deviation σ_u (m/s) anywhere in the field for a speed
        `speed` at the reference height and an intensity (defaults: the current ones)."""
        speed = self.state[SPEED] if speed is None else float(speed)
        intensity = self.state[INTENSITY] if intensity is None else float(intensity)
        top = self.canopy[cn.TOP_OVER_REFERENCE] if self.flow is not None else 1.0
        return intensity * speed * top

    @property
    def canopy_top_speed(self):
        """Mean speed at the canopy top U_h, m/s, now; None on open ground."""
        return None if self.flow is None else float(self.state[SPEED]
                                                     * self.canopy[cn.TOP_OVER_REFERENCE])

    def mean_velocity(self, z):
        """Mean wind velocity (..., 3) m/s, inertial, at heights ``z`` (...,) m, now."""
        azimuth = math.radians(self.state[DIRECTION])
        speed = self.mean_speed(z)
        return np.stack([speed * math.cos(azimuth), speed * math.sin(azimuth),
                         np.zeros_like(speed)], axis=-1)
