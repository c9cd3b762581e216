"""Breaking moment, stem diameter and the fragility fit, against answers known in advance."""

import math

import numpy as np
import pytest

from treedyn_core.analysis.fragility import (breaking_moment, empirical_fraction, fit_fragility,
                                             stem_diameter_at, turning_moment_coefficient)
from treedyn_core.model.preset import load_preset
from treedyn_core.dynamics.static_model import build_tree


def test_breaking_moment_is_the_elastic_strength_of_a_round_section():
    # σ = M·c/I with c = D/2, I = π·D⁴/64: M = σ·π·D³/32.
    mor, dbh = 3.6e7, 0.4
    assert breaking_moment(mor, dbh) == pytest.approx(mor * (math.pi * dbh ** 4 / 64) / (dbh / 2),
                                                      rel=1e-15)
    assert turning_moment_coefficient(0.4, 25.0) == pytest.approx(111.7 * 0.16 * 25.0)


def test_stem_diameter_at_breast_height_is_the_trunk_limb_spanning_it():
    preset = load_preset("conifer")
    tree = build_tree(preset.data)
    z = tree.rest_base[0, 2] + 1.3
    trunk = [i for i in range(tree.n)
             if min(tree.rest_base[i, 2], tree.rest_tip[i, 2]) <= z
             <= max(tree.rest_base[i, 2], tree.rest_tip[i, 2])]
    assert len(trunk) == 1  # the 25 m trunk in 1.25 m segments: one spans 1.3 m alone
    assert stem_diameter_at(tree) == 2 * tree.radius[trunk[0]]
    # The tapered stem's segment at 1.3 m carries the preset's DBH to within the taper
    # over one segment (a few per cent).
    dbh = preset.data["tree"]["generator"]["dbh"]
    assert stem_diameter_at(tree) == pytest.approx(dbh, rel=0.03)


def test_lognormal_fragility_recovers_the_critical_speed_of_drawn_outcomes():
    # Outcomes drawn from P(U) = Φ(ln(U/27)/0.12) at 15 speeds × 400 draws: the maximum
    # likelihood estimate must find U50 = 27 m/s within a few of its standard errors.
    rng = np.random.default_rng(11)
    u50, beta = 27.0, 0.12
    speed = np.repeat(np.arange(5.0, 42.5, 2.5), 400)
    z = np.log(speed / u50) / beta
    probability = 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    hit = rng.random(speed.size) < probability
    fit = fit_fragility(speed, hit)
    # Standard error of ln U50 ≈ β / sqrt(informative draws): about 0.12/sqrt(1200) ≈ 0.0035.
    assert abs(math.log(fit.critical_speed / u50)) < 0.015
    assert fit.beta == pytest.approx(beta, rel=0.1)
    assert fit.probability(u50) == pytest.approx(0.5, abs=0.03)


def test_separated_outcomes_give_a_step_between_the_last_safe_and_first_broken_speed():
    # Peaks growing as c·U² exceed M_break exactly above U* = sqrt(M_break / c) = 23.1 m/s.
    speed = np.repeat(np.arange(5.0, 42.5, 2.5), 10)
    peak = 500.0 * speed ** 2
    strength = 500.0 * 23.1 ** 2
    fit = fit_fragility(speed, peak > strength)
    assert fit.beta == 0.0 and fit.critical_speed == pytest.approx(23.75)  # between 22.5, 25
    levels, fraction, runs = empirical_fraction(speed, peak > strength)
    assert list(fraction) == [0.0] * 8 + [1.0] * 7 and set(runs) == {10}


def test_no_run_exceeding_has_no_critical_speed():
    fit = fit_fragility([10.0, 20.0], [False, False])
    assert math.isnan(fit.critical_speed) and fit.exceeded == 0 and fit.runs == 2
