"""Tests of the flow in a forest stand (treedyn_core/model/canopy.py, docs/design.md §5.1): the mean
profile against its closed forms, the wind kernel against them, the turbulence at and inside
the canopy against the measured statistics, the species' default stand and the bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treedyn_core.model import canopy
from treedyn_core.cli import main
from treedyn_core.errors import PresetError
from treedyn_core.model.preset import parse_preset
from treedyn_core.model.schema import WIND
from treedyn_core.simulation import Simulation
from treedyn_core.dynamics.wind import WindField

# Closed forms evaluated the same way in double precision: round-off only.
CLOSED_FORM_TOL = 1e-12
# A 600 s record at 20 Hz at the canopy top: the sample σ of a 64-mode field is within 5 % of
# its exact mode sum (tests/test_wind.py, SIGMA_TOL); the cited σ_u/u* = 1.8 is a mean over
# canopies with a scatter of about ±0.3 (RFB96), so the sample must be within 10 % of it.
SIGMA_TOL = 0.10
RECORD_TIME = 600.0
SAMPLE_RATE = 20.0


def wind_settings(**overrides):
    """The default preset's wind mapping (nested canopy table included), with overrides."""
    wind = {key: ({k: f.default for k, f in field.items()} if isinstance(field, dict)
                  else field.default) for key, field in WIND.items()}
    wind.update(overrides)
    return wind


def raupach(height, lam):
    """d, z₀ of Raupach (1994) as ForestGALES writes them, spelled out independently."""
    x = math.sqrt(7.5 * lam)
    d = height * (1.0 - (1.0 - math.exp(-x)) / x)
    ratio = math.sqrt(0.003 + 0.3 * min(lam / 2.0, 0.3)) if lam <= 0.6 else math.sqrt(0.093)
    z0 = (height - d) * math.exp(-0.4 / ratio + math.log(2.0) - 0.5)
    return d, z0


@pytest.mark.parametrize("lam", [0.05, 0.3, 0.6, 1.0, 4.0])
def test_displacement_and_roughness_are_raupachs(lam):
    """d and z₀ of `stand_flow` are Raupach's (1994) closed forms with ForestGALES' constants;
    d/h rises toward 1 and z₀/h stays below h − d."""
    flow = canopy.stand_flow(20.0, 3.0, lam)
    d, z0 = raupach(20.0, lam)
    assert flow.displacement == pytest.approx(d, rel=CLOSED_FORM_TOL)
    assert flow.roughness == pytest.approx(z0, rel=CLOSED_FORM_TOL)
    assert 0.0 < flow.roughness < 20.0 - flow.displacement
    assert flow.friction_ratio == pytest.approx(0.4 / math.log((20.0 - d) / z0),
                                                rel=CLOSED_FORM_TOL)


def test_dense_stand_has_displacement_near_seven_tenths_of_height():
    """A closed stand (λ of a few) has d/h ≈ 0.7–0.85 and z₀/h ≈ 0.03–0.1, the range of the
    values measured over coniferous forests (compiled by Jarvis, James & Landsberg 1976)."""
    flow = canopy.stand_flow(25.0, 3.0, 3.0)
    assert 0.7 <= flow.displacement / 25.0 <= 0.85
    assert 0.03 <= flow.roughness / 25.0 <= 0.1


def test_profile_is_log_above_exponential_below_and_continuous_at_the_top():
    """U/U_h = ln((z − d)/z₀)/ln((h − d)/z₀) above h, exp(a (z/h − 1)) below, one value at h."""
    flow = canopy.stand_flow(25.0, 3.0, 2.0)
    h, d, z0 = flow.height, flow.displacement, flow.roughness
    above = np.array([25.0, 27.0, 40.0, 80.0])
    below = np.array([0.5, 5.0, 12.5, 24.0])
    np.testing.assert_allclose(canopy.shape(above, flow),
                               np.log((above - d) / z0) / math.log((h - d) / z0),
                               rtol=CLOSED_FORM_TOL)
    np.testing.assert_allclose(canopy.shape(below, flow), np.exp(2.5 * (below / h - 1.0)),
                               rtol=CLOSED_FORM_TOL)
    just_below, at = canopy.shape([h * (1.0 - 1e-12), h], flow)
    assert at == 1.0
    assert just_below == pytest.approx(1.0, abs=1e-10)


@pytest.mark.parametrize("reference_height", [10.0, 25.0, 40.0])
def test_kernel_mean_is_the_profile_with_the_speed_at_the_reference_height(reference_height):
    """The compiled field's mean (turbulence off) is the stand's profile through `speed` at
    `reference_height`, inside and above the canopy."""
    wind = wind_settings(speed=7.0, reference_height=reference_height,
                         canopy={"height": 25.0, "spacing": 3.0})
    field = WindField(wind, frontal_area_index=2.0)
    field.mode_amp[:] = 0.0
    z = np.array([0.05, 3.0, 10.0, 24.9, 25.0, 25.1, 30.0, 60.0])
    points = np.column_stack([np.zeros_like(z), np.zeros_like(z), z])
    out = field.velocity_at(points, np.empty_like(points))
    expected = 7.0 * canopy.shape(z, field.flow) / canopy.shape(reference_height, field.flow)
    np.testing.assert_allclose(out[:, 0], expected, rtol=1e-12)
    assert field.mean_speed(reference_height) == pytest.approx(7.0, rel=1e-12)
    np.testing.assert_allclose(field.mean_velocity(z)[:, 0], expected, rtol=1e-12)


def test_open_ground_is_unchanged():
    """Without a canopy the field is the power law, byte for byte (canopy height null)."""
    field = WindField(wind_settings(speed=6.0))
    assert field.flow is None and not field.canopy.any()
    z = np.array([0.05, 2.0, 10.0, 30.0])
    np.testing.assert_array_equal(field.mean_speed(z), 6.0 * (np.maximum(z, 0.1) / 10.0) ** 0.14)


def _record(field, z, seconds=RECORD_TIME):
    """(samples, 3) m/s at one point (0, 0, z) over `seconds` at `SAMPLE_RATE`."""
    point = np.array([[0.0, 0.0, z]])
    out = np.empty((1, 3))
    samples = []
    for _ in range(int(seconds * SAMPLE_RATE)):
        field.advance(1.0 / SAMPLE_RATE)
        samples.append(field.velocity_at(point, out)[0].copy())
    return np.array(samples)


def _forest_field(seed=1, speed=10.0):
    """The wind of a 20 m forest Norway spruce (its stand's defaults), u_h = `speed`."""
    preset = parse_preset(f"tree: {{generator: {{species: picea_abies, height: 20, dbh: 0.3}}}}\n"
                          f"wind: {{speed: {speed}, seed: {seed}}}\n")
    sim = Simulation(preset)
    return sim.wind


def test_forest_defaults_are_the_canopy_tops_turbulence():
    """A forest species tree's intensity is σ_u/U_h = 1.8 u*/U_h of its (closed) stand and
    its length scale the canopy height (RFB96: L_x^u ≈ h)."""
    field = _forest_field()
    assert field.flow.frontal_area_index > canopy.LAMBDA_CAP
    assert field.intensity == pytest.approx(1.8 * field.flow.friction_ratio, abs=5e-4)
    assert field.length_scale == 20.0


@pytest.mark.parametrize("seed", [1, 2])
def test_turbulence_at_the_canopy_top_is_the_measured(seed):
    """At z = h: σ_u/u* = 1.8 (Raupach, Finnigan & Brunet 1996) within `SIGMA_TOL`, the mean
    U_h."""
    field = _forest_field(seed)
    ustar = field.flow.friction_ratio * field.canopy_top_speed
    record = _record(field, 20.0)
    assert record[:, 0].mean() == pytest.approx(10.0, rel=0.05)
    assert record[:, 0].std() / ustar == pytest.approx(1.8, rel=SIGMA_TOL)


def test_turbulence_inside_the_canopy_is_weaker_but_more_intense():
    """Deep in the canopy σ_u/u* falls to 0.5–1 (trunk space, z = h/4) while σ_u/U exceeds 1
    at z = h/2 (RFB96's canopy profiles: the intensity grows toward the ground)."""
    field = _forest_field()
    ustar = field.flow.friction_ratio * field.canopy_top_speed
    trunk = _record(field, 5.0, 300.0)
    field.restart()
    middle = _record(field, 10.0, 300.0)
    assert 0.5 <= trunk[:, 0].std() / ustar <= 1.0
    assert middle[:, 0].std() / field.mean_speed(10.0) > 1.0


def test_no_turbulence_in_a_stand_is_a_steady_wind():
    """turbulence_intensity 0 in a stand: the mean profile alone, as on open ground."""
    wind = wind_settings(speed=7.0, turbulence_intensity=0.0,
                         canopy={"height": 20.0, "spacing": 3.0})
    field = WindField(wind, frontal_area_index=2.0)
    z = np.array([5.0, 20.0, 30.0])
    points = np.column_stack([np.zeros(3), np.zeros(3), z])
    for _ in range(3):
        field.advance(1.7)
        out = field.velocity_at(points, np.empty_like(points))
        np.testing.assert_allclose(out[:, 0], field.mean_speed(z), rtol=1e-12)
        np.testing.assert_array_equal(out[:, 1:], 0.0)


def test_forest_species_trees_stand_in_a_canopy_of_their_height():
    """stand: forest gives wind.canopy.height = H and the speed at the canopy top; stand: open
    keeps the open ground; a preset's own canopy: null wins."""
    forest = parse_preset("tree: {generator: {species: picea_abies, height: 20, dbh: 0.3}}\n")
    assert forest.data["wind"]["canopy"] == {"height": 20.0, "spacing": 3.0}
    assert forest.data["wind"]["reference_height"] == 20.0
    assert forest.data["wind"]["length_scale"] == 20.0
    open_grown = parse_preset("tree: {generator: {species: picea_abies, height: 20, dbh: 0.3, "
                              "stand: open}}\n")
    assert open_grown.data["wind"]["canopy"]["height"] is None
    assert open_grown.data["wind"]["reference_height"] == 10.0
    alone = parse_preset("tree: {generator: {species: picea_abies, height: 20, dbh: 0.3}}\n"
                         "wind: {canopy: null}\n")
    assert alone.data["wind"]["canopy"]["height"] is None


@pytest.mark.parametrize("setting, words", [
    ("height: 0.5", ">= 1"), ("height: 150", "<= 100"), ("height: 20, spacing: 0", "> 0"),
    ("height: 20, spacing: -2", "> 0")])
def test_bad_canopy_is_one_line(setting, words):
    """A canopy below 1 m or above 100 m, or a spacing ≤ 0: one line naming the key."""
    with pytest.raises(PresetError) as caught:
        parse_preset("tree: {generator: {trunk: {length: 5}}}\nwind: {canopy: {" + setting
                     + "}}\n")
    message = str(caught.value)
    assert "\n" not in message and "wind.canopy." in message and words in message


def test_tree_taller_than_three_canopies_is_bad_input(tmp_path, capsys):
    """A 25 m tree in a 5 m canopy: one line and exit 2 from `treedyn run`."""
    preset = tmp_path / "tall.yaml"
    preset.write_text("tree: {generator: {species: picea_abies, height: 25, dbh: 0.35}}\n"
                      "wind: {canopy: {height: 5}}\n")
    with pytest.raises(PresetError):
        Simulation(parse_preset(preset.read_text(), "tall.yaml"))
    assert main(["run", str(preset), "--duration", "0.1", "--out",
                 str(tmp_path / "out.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "wind.canopy.height" in err and "3 times" in err
