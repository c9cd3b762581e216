"""Crown streamlining (docs/validation.md, "Crown streamlining"): the drag area of the conifer
and broadleaf species' crowns in uniform wind against the wind-tunnel law of their species,
C·U^(−N) on the crown's width × depth as ForestGALES parametrises it (Mayhead 1973 for the
conifers; ForestGALES' oak for both oaks, its birch and its beech), over the law's speeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treedyn_core.model import crown, species
from treedyn_core.model.preset import validate
from treedyn_core.dynamics.static_model import build_tree

CONIFERS = ("picea_abies", "picea_sitchensis", "pinus_sylvestris", "pseudotsuga_menziesii")
HEIGHTS = (15.0, 20.0, 25.0, 30.0)   # m, at a slenderness H/DBH of 70
BROADLEAVES = ("quercus_robur", "quercus_rubra", "betula_pendula", "fagus_sylvatica")
BROADLEAF_HEIGHTS = (10.0, 15.0, 20.0, 25.0)  # m, open-grown at H/DBH 45, forest-grown at 60
BROADLEAF_SLENDERNESS = {"open": 45.0, "forest": 60.0}
SPEEDS = (10.0, 15.0, 20.0, 25.0)    # m/s, up to each law's max_speed (25 or 20 m/s)
# The target: within ±25 % of the law on the tree's own crown. The law's own scatter:
# Mayhead's individual trees lie within about ±30 % of the species curve (Hale et al. 2015).
LAW_RTOL = 0.25


def _tree(name, height, slenderness=70.0, **generator):
    data = validate({"tree": {"generator": {"species": name, "height": height,
                                            "dbh": round(height / slenderness, 3),
                                            **generator}}}, "<test>")
    return data, build_tree(data)


def _cases():
    for name in CONIFERS:
        for height in HEIGHTS:
            yield pytest.param(name, height, "forest", 70.0, id=f"{name}-{height:g}m")
    for name in BROADLEAVES:
        for stand, slenderness in BROADLEAF_SLENDERNESS.items():
            for height in BROADLEAF_HEIGHTS:
                yield pytest.param(name, height, stand, slenderness,
                                   id=f"{name}-{stand}-{height:g}m")


@pytest.mark.parametrize("name, height, stand, slenderness", list(_cases()))
def test_crown_drag_area_follows_the_wind_tunnel_law(name, height, stand, slenderness):
    """C_d·A of the crown (every limb but the stem's) at rest in uniform wind from 10 m/s to the
    law's max_speed is within `LAW_RTOL` of C·U^(−N)·width·depth on the tree's own crown width
    and depth."""
    data, tree = _tree(name, height, slenderness, stand=stand)
    law = species.entry(name)["foliage"]["crown_drag"]
    width, depth = crown.dimensions(tree)
    for speed in (u for u in SPEEDS if u <= law["max_speed"]):
        model = crown.drag_area(tree, data["wind"], speed, crown_only=True)
        target = crown.law_drag_area(law["c"], law["n"], width, depth, speed)
        assert model == pytest.approx(target, rel=LAW_RTOL), (speed, model, target)


# Known gap (docs/validation.md, "Crown streamlining"): the branches' cylinders, rigid at rest,
# carry about 40 % of a birch's or beech's crown drag at 20 m/s, so the crown's drag area falls
# more slowly than their laws' steep U^(−0.88) and U^(−0.90) however steeply the leaves
# reconfigure (−0.64 to −0.69 with the leaves at −0.9 or −1).
SLOPE_GAPS = {"betula_pendula": "log-slope −0.67 against −0.88",
              "fagus_sylvatica": "log-slope −0.69 against −0.90"}


def _slope_cases():
    for name in CONIFERS + BROADLEAVES:
        gap = SLOPE_GAPS.get(name)
        yield pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=gap)] if gap
                           else [])


@pytest.mark.parametrize("name", list(_slope_cases()))
def test_crown_streamlines_about_as_the_law(name):
    """The drag area falls with speed: its log-slope from 10 m/s to the law's max_speed on a
    20 m tree is within 0.2 of the law's −N (the branches' cylinders do not reconfigure, the
    foliage does)."""
    data, tree = _tree(name, 20.0)
    law = species.entry(name)["foliage"]["crown_drag"]
    top = law["max_speed"]
    low, high = (crown.drag_area(tree, data["wind"], u, crown_only=True) for u in (10.0, top))
    slope = math.log(high / low) / math.log(top / 10.0)
    assert slope == pytest.approx(-law["n"], abs=0.2)


def test_sheltering_is_beers_law():
    """s = (1 − e^(−κL))/(κL): 1 for a sparse crown, 1/(κL) for a dense one, 1 without κ."""
    assert species.sheltering(0.5, 1e-9) == pytest.approx(1.0)
    assert species.sheltering(0.5, 40.0) == pytest.approx(1.0 / 20.0, rel=1e-8)
    assert species.sheltering(0.5, 4.0) == pytest.approx((1.0 - math.exp(-2.0)) / 2.0)
    assert species.sheltering(None, 4.0) == 1.0


@pytest.mark.parametrize("phi_deg", [90.0, 60.0, 30.0, 0.0])
def test_drag_area_of_one_limb_is_the_closed_form(phi_deg):
    """One limb at φ from the wind with leaves: C_d 2rL sin³φ + C_leaf A (U/1 m/s)^β."""
    phi = math.radians(phi_deg)
    data = validate({"tree": {"limbs": [{"name": "a", "length": 2.0, "radius": 0.1,
                                         "leaf_area": 0.5,
                                         "direction": [math.cos(phi), 0.0, math.sin(phi)]}]},
                     "wind": {"drag_coefficient": 1.2, "leaf_drag_coefficient": 0.4,
                              "vogel_exponent": -0.5}}, "<test>")
    tree = build_tree(data)
    expected = 1.2 * 2 * 0.1 * 2.0 * math.sin(phi) ** 3 + 0.4 * 0.5 * 16.0 ** -0.5
    assert crown.drag_area(tree, data["wind"], 16.0) == pytest.approx(expected, rel=1e-12,
                                                                       abs=1e-15)
