"""Tests of the wind field (docs/design.md §5): statistics, frozen advection, determinism,
live ramps, the compiled kernel against numpy, and the polynomial cosine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from scipy.integrate import quad
from scipy.signal import correlate, find_peaks, periodogram

from reference_step import Wind
from treedyn_core.errors import TreedynError
from treedyn_core.numerics.fastmath import INV_TWO_PI, SIN_TURNS_COEFFICIENTS, cos_turns
from treedyn_core.model.schema import WIND
from treedyn_core.dynamics.wind import (ADVECTION, WindField, draw_modes, spectrum_u, spectrum_vw,
                                        wavenumber_range)

# A 600 s record sampled at 20 Hz: the Nyquist frequency (10 Hz) lies above the
# highest mode at the default L = 20 m and U = 6 m/s (9.6 Hz), so nothing aliases.
RECORD_TIME = 600.0
SAMPLE_RATE = 20.0
RECORD_DIRECTION = 30.0  # deg: not along an axis, so the rotation is exercised
# Eight points spread over a crown, heights 2 … 20 m.
RECORD_POINTS = np.array([(0.0, 0.0, 2.0), (3.0, -2.0, 5.0), (-4.0, 1.0, 8.0), (1.0, 4.0, 10.0),
                          (-2.0, -3.0, 12.0), (5.0, 0.0, 15.0), (0.0, -5.0, 3.0),
                          (-1.0, 2.0, 20.0)])
# A point downwind of RECORD_POINTS[3] by this distance (m), for the advection lag.
DOWNWIND_SEPARATION = 24.0

# 600 s holds ~180 periods of the energetic eddies (f ≈ U/L = 0.3 Hz) but only
# one or a few of the slowest modes, whose partial periods leave a record mean:
# within 1.4 % of U over seeds 1–12 (the requirement: 2 %) ...
MEAN_TOL = 0.02
# ... and a sample σ within 2.8 % of the exact mode sum for this seed (the
# requirement: 5 %; over seeds 1–12 the worst point was 5.2 % off: a fifth of
# the variance is in modes that pass fewer than 10 times in 600 s).
SIGMA_TOL = 0.05
# Correlation of two components at a point: the mode sums are < 1e-3; the rest
# is the record's partial periods of the slowest modes (≤ 0.06 over seeds 1–8).
CORRELATION_TOL = 0.1
# Inertial-range slope of the one-sided u spectrum, fitted through the mode
# lines between 3 U/L and below the highest mode (0.9–7 Hz at L = 20 m,
# U = 6 m/s), where von Kármán's local slope is −1.664 … −1.667; seeds 1–12 gave
# −1.65 … −1.68 (the requirement: ±0.15).
SLOPE_BAND_HZ = (0.9, 7.0)
SLOPE_TOL = 0.15
# The polynomial cosine: documented error 2e-11 plus ~1e-12 from converting
# |x| ≤ 1e4 rad to turns (the requirement is 1e-7; the 1e-9 check below needs this).
COS_TOL = 1e-10
# Kernel against numpy: the cosine's 2e-11 error times Σ|amplitudes| ≲ 10 m/s.
KERNEL_TOL = 1e-9
# A live change may move the wind over one step by at most this multiple of the
# largest step change with constant settings.
CONTINUITY_FACTOR = 5.0
STEP = 1.0 / 120.0  # s, the default time step
# σ_u, σ_v, σ_w over I·U (docs/design.md §5).
SIGMA_RATIOS = np.array([1.0, 0.8, 0.5])


def wind_settings(**overrides):
    """The default preset's wind mapping, with overrides."""
    wind = {key: ({k: f.default for k, f in field.items()} if isinstance(field, dict)
                  else field.default) for key, field in WIND.items()}
    wind.update(overrides)
    return wind


def wind_frame(direction_deg):
    """(3, 3) rows: along-wind, crosswind (to the left) and vertical unit vectors."""
    theta = math.radians(direction_deg)
    return np.array([[math.cos(theta), math.sin(theta), 0.0],
                     [-math.sin(theta), math.cos(theta), 0.0],
                     [0.0, 0.0, 1.0]])


@pytest.fixture(scope="module")
def record():
    """u, v, w (S, P, 3) m/s in the wind frame at the record points and the downwind point."""
    field = WindField(wind_settings(direction_deg=RECORD_DIRECTION))
    frame = wind_frame(RECORD_DIRECTION)
    downwind = RECORD_POINTS[3] + DOWNWIND_SEPARATION * frame[0]
    points = np.vstack([RECORD_POINTS, downwind])
    samples = int(round(RECORD_TIME * SAMPLE_RATE))
    velocity = np.empty((samples, len(points), 3))
    for i in range(samples):
        field.velocity_at(points, velocity[i])
        field.advance(1.0 / SAMPLE_RATE)
    return field, velocity @ frame.T


def test_mean_follows_power_law(record):
    field, uvw = record
    z = RECORD_POINTS[:, 2]
    profile = field.speed * (np.maximum(z, 0.1) / field.reference_height) ** field.profile_exponent
    mean_u = uvw[:, :len(z), 0].mean(axis=0)
    np.testing.assert_allclose(mean_u, profile, rtol=MEAN_TOL)
    np.testing.assert_allclose(field.mean_velocity(z) @ wind_frame(RECORD_DIRECTION)[0], profile,
                               rtol=1e-14)


def test_sigma_of_each_component(record):
    field, uvw = record
    sigma_u = field.intensity * field.speed
    target = sigma_u * SIGMA_RATIOS
    sigma = uvw[:, :len(RECORD_POINTS)].std(axis=0)  # (P, 3): constant with height
    np.testing.assert_allclose(sigma, np.broadcast_to(target, sigma.shape), rtol=SIGMA_TOL)


def test_components_uncorrelated(record):
    _, uvw = record
    for p in range(len(RECORD_POINTS)):
        correlation = np.corrcoef(uvw[:, p].T)
        assert np.abs(correlation[np.triu_indices(3, 1)]).max() < CORRELATION_TOL


def test_spectrum_inertial_slope(record):
    """The one-sided u spectrum has one line per mode; with one mode per equal
    cell in log f, a line's power over its frequency is the spectral density up
    to a constant, so the log-log fit through the lines gives the slope."""
    field, uvw = record
    freq, psd = periodogram(uvw[:, :len(RECORD_POINTS), 0], fs=SAMPLE_RATE, window="hann",
                            detrend="constant", axis=0)
    psd = psd.mean(axis=1)
    df = freq[1] - freq[0]
    peaks, _ = find_peaks(psd, distance=8)
    peaks = peaks[(freq[peaks] > SLOPE_BAND_HZ[0]) & (freq[peaks] < SLOPE_BAND_HZ[1])]
    # A line's power: the PSD summed over its Hann main lobe (±2 bins) and a margin.
    power = np.array([psd[p - 5:p + 6].sum() * df for p in peaks])
    assert len(peaks) >= 10, "too few lines in the fitting band"
    slope = np.polyfit(np.log(freq[peaks]), np.log(power / freq[peaks]), 1)[0]
    assert abs(slope + 5.0 / 3.0) < SLOPE_TOL, slope
    # The band lies well above the spectral peak and below the highest mode.
    k_min, k_max = wavenumber_range(field.length_scale, field.speed)
    assert SLOPE_BAND_HZ[0] >= 3.0 * field.speed / field.length_scale
    assert SLOPE_BAND_HZ[1] < field.speed * k_max / (2.0 * math.pi)


def test_pattern_is_advected_at_reference_speed(record):
    field, uvw = record
    upwind = uvw[:, 3, 0] - uvw[:, 3, 0].mean()
    downwind = uvw[:, -1, 0] - uvw[:, -1, 0].mean()
    xcorr = correlate(downwind, upwind, mode="full", method="fft")
    lag = (np.argmax(xcorr) - (len(upwind) - 1)) / SAMPLE_RATE
    assert abs(lag - DOWNWIND_SEPARATION / field.speed) <= 1.0 / SAMPLE_RATE


def test_modes_normalised_and_bounded():
    for modes, length_scale, speed in [(64, 20.0, 6.0), (7, 3.0, 0.0), (300, 80.0, 25.0)]:
        mode_k, mode_amp, mode_phase = draw_modes(modes, length_scale, speed, seed=3)
        np.testing.assert_allclose((mode_amp ** 2).sum(axis=1) / 2.0, 1.0, rtol=1e-12)
        k_min, _ = wavenumber_range(length_scale, speed)
        assert np.all(mode_k[0] >= k_min)
        assert k_min == pytest.approx(2.0 * math.pi / (max(speed, 1.0) * 600.0))
        assert np.all((mode_phase >= 0.0) & (mode_phase < 2.0 * math.pi))


def test_spectra_have_unit_variance():
    for spectrum in (spectrum_u, spectrum_vw):
        total, _ = quad(spectrum, 0.0, np.inf, args=(20.0,), limit=200)
        assert total == pytest.approx(1.0, rel=1e-6)
    # The longitudinal integral length scale: F_u(0) = 2L/π.
    assert spectrum_u(0.0, 20.0) == pytest.approx(40.0 / math.pi)


def _sample_points(count, seed):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(-8.0, 8.0, count), rng.uniform(-8.0, 8.0, count),
                            rng.uniform(-0.5, 25.0, count)])


def test_same_seed_same_field_other_seed_other_field():
    points = _sample_points(50, seed=0)
    fields = [WindField(wind_settings(seed=seed)) for seed in (5, 5, 6)]
    velocity = []
    for field in fields:
        field.advance(3.0)
        velocity.append(field.velocity_at(points, np.empty_like(points)))
    assert np.array_equal(velocity[0], velocity[1])
    sigma_u = fields[0].intensity * fields[0].speed
    assert np.abs(velocity[0] - velocity[2]).max() > 0.5 * sigma_u


def test_reset_returns_to_start():
    points = _sample_points(20, seed=1)
    field = WindField(wind_settings())
    start = field.velocity_at(points, np.empty_like(points)).copy()
    field.set_speed(11.0)
    field.set_direction(200.0)
    field.advance(0.4)
    field.reset()
    assert (field.time, field.speed, field.direction_deg) == (0.0, 6.0, 0.0)
    assert np.array_equal(field.velocity_at(points, np.empty_like(points)), start)


def reference_velocity(field, points):
    """The field of the module docstring, summed with numpy (`reference_step.Wind`)."""
    return Wind.from_field(field).velocity(points, field.state[ADVECTION])


def test_kernel_matches_numpy():
    points = _sample_points(200, seed=2)
    field = WindField(wind_settings(direction_deg=250.0, modes=37, seed=9))
    out = np.empty_like(points)
    for _ in range(3):
        np.testing.assert_allclose(field.velocity_at(points, out),
                                   reference_velocity(field, points), rtol=0, atol=KERNEL_TOL)
        # Mid-ramp states, and a pattern that has travelled far.
        field.set_direction(field.direction_deg + 140.0)
        field.set_speed(field.speed + 3.0)
        field.set_intensity(0.35)
        field.advance(0.37)
        field.state[ADVECTION] += 2.0e4


def test_zero_speed_is_exactly_zero():
    points = _sample_points(100, seed=3)
    out = np.empty_like(points)
    field = WindField(wind_settings(speed=0.0))
    field.advance(5.0)
    assert np.all(field.velocity_at(points, out) == 0.0)
    field = WindField(wind_settings())
    field.set_speed(0.0)
    field.advance(0.5)
    assert np.any(field.velocity_at(points, out) != 0.0)  # still ramping down
    field.advance(0.5 + 1e-9)
    assert field.speed == 0.0
    assert np.all(field.velocity_at(points, out) == 0.0)


def test_ramps_reach_target_in_one_second_along_shorter_arc():
    field = WindField(wind_settings(direction_deg=10.0))
    modes = [array.copy() for array in (field.mode_k, field.mode_amp, field.mode_phase)]
    field.set_direction(-10.0)  # 20° clockwise, not 340° counter-clockwise
    field.set_speed(10.0)
    field.set_intensity(0.1)
    field.advance(0.5)
    assert field.direction_deg == pytest.approx(0.0, abs=1e-9) or \
        field.direction_deg == pytest.approx(360.0, abs=1e-9)
    assert field.speed == pytest.approx(8.0)
    assert field.intensity == pytest.approx(0.15)
    field.advance(0.5)
    assert (field.direction_deg, field.speed, field.intensity) == (350.0, 10.0, 0.1)
    for array, drawn in zip((field.mode_k, field.mode_amp, field.mode_phase), modes):
        assert np.array_equal(array, drawn)  # live changes never redraw the modes
    with pytest.raises(TreedynError):
        field.set_speed(-1.0)
    with pytest.raises(TreedynError):
        field.set_intensity(math.nan)


# A crown: 4 × 4 × 4 points up to 7 m from the trunk axis (the axis of a direction
# change's rotation), heights 1–15 m.
_GRID = np.linspace(-5.0, 5.0, 4)
CROWN = np.array([(x, y, z) for x in _GRID for y in _GRID for z in np.linspace(1.0, 15.0, 4)])


def largest_step_change(field, seconds, change=None, change_at=None):
    """Largest |v(t + STEP) − v(t)| (m/s) over the crown points and `seconds` of steps."""
    previous = field.velocity_at(CROWN, np.empty_like(CROWN)).copy()
    current = np.empty_like(CROWN)
    largest = 0.0
    for i in range(int(round(seconds / STEP))):
        if i == change_at:
            change(field)
        field.advance(STEP)
        field.velocity_at(CROWN, current)
        largest = max(largest, np.abs(current - previous).max())
        previous[:] = current
    return largest


@pytest.mark.parametrize("change, jump", [
    (lambda field: field.set_speed(12.0), 6.0),
    (lambda field: field.set_speed(1.0), 5.0),
    (lambda field: field.set_intensity(0.45), None),
    (lambda field: field.set_direction(90.0), 6.0 * math.sqrt(2.0)),
], ids=["speed up", "speed down", "intensity", "direction"])
def test_live_changes_are_continuous(change, jump):
    """Compared with constant settings before and after the change (the same
    modes: the 'after' run applies the change and lets the ramp finish first)."""
    before = WindField(wind_settings())
    after = WindField(wind_settings())
    change(after)
    after.advance(2.0)
    steady = max(largest_step_change(before, 5.0), largest_step_change(after, 5.0))
    changed = largest_step_change(WindField(wind_settings()), 4.0, change, 120)
    assert changed < CONTINUITY_FACTOR * steady, (changed, steady)
    if jump is not None:
        # The test can fail: the same change without a ramp jumps the mean wind this much.
        assert jump > CONTINUITY_FACTOR * steady


@njit
def _cos_on(x, out):
    for i in range(x.shape[0]):
        out[i] = cos_turns(x[i] * INV_TWO_PI)   # cos x as the wind kernel forms it


def test_fast_cos_accuracy():
    x = np.concatenate([np.linspace(-1.0e4, 1.0e4, 2_000_001),
                        np.random.default_rng(4).uniform(-1.0e4, 1.0e4, 1_000_000),
                        np.arange(-4, 5) * (math.pi / 2.0)])
    out = np.empty_like(x)
    _cos_on(x, out)
    assert np.abs(out - np.cos(x)).max() <= COS_TOL


def test_cos_coefficients_are_the_documented_fit():
    """Least squares of sin(2π s) by s·(polynomial in s²), 4,000 Chebyshev nodes of (0, 1/4]."""
    nodes = 4000
    s = 0.125 * (1.0 - np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes))
    basis = s[:, None] * (s[:, None] ** 2) ** np.arange(len(SIN_TURNS_COEFFICIENTS))
    fit, *_ = np.linalg.lstsq(basis, np.sin(2.0 * np.pi * s), rcond=None)
    np.testing.assert_allclose(fit, SIN_TURNS_COEFFICIENTS, rtol=1e-9)  # LAPACK round-off
