"""Base turning moments of conifers in stands against ForestGALES' measured law (docs/
validation.md, "Turning moments"): the maximum over 10 minutes of turbulent wind at u_h =
10 m/s within a factor 1.5 of Hale et al.'s (2012) T_C·u_h², T_C = 113.8·DBH²·H − 9.6; and the
25 m Norway spruce's mean crown-top displacement in its stand at u_h = 8.5 m/s below 1 m.

Both are known gaps today (the strict xfails below, with the measured values): the crowns'
drag follows Mayhead's wind-tunnel law and the stand's profile is Raupach's, yet the trees'
maximum moments are 2.4–5.1 times T_C·u_h² (docs/validation.md gives the numbers and the
candidate causes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from turning_moments import hale_coefficient, max_moment, stand_tree  # noqa: E402

# The issue's tolerance: a factor 1.5 either way, about the scatter of Hale et al.'s measured
# maxima about their regression.
MOMENT_FACTOR = 1.5
MOMENT_GAP = "known gap: treedyn's 10-minute maximum is 2.4–5.1 × T_C·u_h² (docs/validation.md)"
# The mean displacement over 3 minutes: a mean settles long before a 10-minute maximum does
# (2.6 m over 10 minutes, docs/validation.md), and the test costs a third of the time.
MEAN_DURATION = 180.0  # s
DISPLACEMENT_GAP = "known gap: 2.6 m mean crown-top displacement (docs/validation.md)"


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=MOMENT_GAP)
@pytest.mark.parametrize("name", ["picea_abies", "pinus_sylvestris"])
def test_ten_minute_maximum_moment_is_hales(name):
    data = stand_tree(name, 20.0, 10.0)
    dbh = data["tree"]["generator"]["dbh"]
    peak, _, _ = max_moment(data)
    hale = hale_coefficient(dbh, 20.0) * 10.0 ** 2
    assert hale / MOMENT_FACTOR <= peak <= hale * MOMENT_FACTOR, (peak, hale)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=DISPLACEMENT_GAP)
def test_spruce_in_its_stand_bends_less_than_a_metre():
    data = stand_tree("picea_abies", 25.0, 8.5, dbh=0.35)
    _, _, shift = max_moment(data, MEAN_DURATION)
    assert shift < 1.0, shift
