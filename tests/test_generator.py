"""Tests of treedyn_core.model.generator: counts, da Vinci radii, angles, names, refusals, presets.

World geometry is rebuilt here from the returned limbs alone (docs/design.md §1: C_If = C_Ip ·
exp(rest_rotation), base of a child = base of its parent + attach · L_p · C_Ip u, tip =
base + L · C_If u), so the tests check the published contract, not the generator's internals.
"""

from __future__ import annotations

import copy
import math
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from treedyn_core.model import schema, species
from treedyn_core.errors import PresetError
from treedyn_core.model.generator import count_limbs, generate

PRESETS = Path(__file__).resolve().parents[1] / "assets" / "presets"

# Relative tolerance of the da Vinci sums: r^e is rebuilt from r, so each term carries a few
# ulps of error from the power and the root; 1e-12 leaves three decades of margin.
DA_VINCI_RTOL = 1e-12
# Angles rebuilt through a rotation-vector round trip and a chain of matrix products lose
# ~1e-14 rad per level; 1e-9 deg is far above that and far below any real error.
ANGLE_ATOL_DEG = 1e-9

# name: (target limb count, plausible crown-top height range in m)
SHIPPED = {
    "sapling": (30, (1.0, 3.0)),
    "young_oak": (300, (6.0, 12.0)),
    "old_oak": (3000, (15.0, 30.0)),
    "giant": (10000, (25.0, 45.0)),
    "conifer": (580, (20.0, 40.0)),
    "weeping_willow": (1500, (8.0, 20.0)),
}


def _defaults(table: dict) -> dict:
    return {key: _defaults(field) if isinstance(field, dict) else copy.deepcopy(field.default)
            for key, field in table.items()}


def filled(gen: dict | None = None, **overrides) -> dict:
    """A complete generator mapping: schema defaults, then ``gen``, then ``overrides``."""
    out = _defaults(schema.GENERATOR)
    for key, value in {**(gen or {}), **overrides}.items():
        if isinstance(value, dict):
            out[key].update(value)
        else:
            out[key] = value
    return out


def world(limbs: list[dict]):
    """Rest pose from the limb list: C_IF (N, 3, 3) limb → inertial, base and tip (N, 3)."""
    index = {}
    n = len(limbs)
    C_IF, base, tip = np.zeros((n, 3, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    for i, limb in enumerate(limbs):
        rest = Rotation.from_rotvec(limb["rest_rotation_deg"], degrees=True).as_matrix()
        u = np.asarray(limb["direction"]) / np.linalg.norm(limb["direction"])
        if limb["parent"] is None:
            C_IF[i] = rest
        else:
            p = index[limb["parent"]]
            C_IF[i] = C_IF[p] @ rest
            base[i] = base[p] + limb["attach"] * limbs[p]["length"] * (C_IF[p] @ u)
        tip[i] = base[i] + limb["length"] * (C_IF[i] @ u)
        index[limb["name"]] = i
    return C_IF, base, tip


def children_of(limbs: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {limb["name"]: [] for limb in limbs}
    for i, limb in enumerate(limbs):
        if limb["parent"] is not None:
            out[limb["parent"]].append(i)
    return out


def expected_count(trunk: int, levels: int, children, segments, whorls: int = 0) -> int:
    """Closed form, written independently: per-level lists padded with their last entry."""
    def level_value(value, level):  # level counts from 0
        if isinstance(value, int):
            return value
        return value[level] if level < len(value) else value[-1]
    total, branches = 0, 1
    for level in range(levels):
        branches *= level_value(children, level)
        total += branches * level_value(segments, level)
    return trunk + max(whorls, 1) * total


def angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    return math.degrees(math.atan2(np.linalg.norm(np.cross(a, b)), float(a @ b)))


CONIFER = dict(trunk={"length": 12.0, "radius": 0.15, "segments": 10}, whorls=7,
               whorl_length_ratio=0.25, levels=2, children=[5, 2], segments=[3, 2],
               branch_angle_deg=70)
WILLOW = dict(trunk={"length": 3.0, "radius": 0.3, "segments": 3}, levels=3,
              children=[3, 3, 4], segments=[2, 2, 5], length_ratio=1.0, droop_deg=30,
              droop_level=3)


# --- the output contract ---------------------------------------------------------------

@pytest.mark.parametrize("gen", [{}, CONIFER, WILLOW], ids=["default", "conifer", "willow"])
def test_every_limb_key_present_with_plain_values(gen):
    limbs = generate(filled(gen))
    for limb in limbs:
        assert list(limb) == list(schema.LIMB)
        for key in ("length", "radius", "attach", "com", "leaf_area"):
            assert type(limb[key]) is float, (limb["name"], key)
        for key in ("direction", "rest_rotation_deg"):
            assert [type(v) for v in limb[key]] == [float] * 3, (limb["name"], key)
        assert limb["direction"] == [0.0, 0.0, 1.0]
        assert limb["attach"] == 1.0 and limb["com"] == 0.5
        assert limb["length"] > 0 and limb["radius"] > 0
        for key in ("spring_rest_rotation_deg", "mass", "inertia", "stiffness", "damping"):
            assert limb[key] is None
    assert limbs[0]["parent"] is None and limbs[0]["rest_rotation_deg"] == [0.0, 0.0, 0.0]
    assert limbs[0]["radius"] == filled(gen)["trunk"]["radius"]


@pytest.mark.parametrize("gen", [{}, CONIFER, WILLOW], ids=["default", "conifer", "willow"])
def test_names_unique_parents_precede_and_leaves_on_terminals(gen):
    g = filled(gen)
    limbs = generate(g)
    names = [limb["name"] for limb in limbs]
    assert len(set(names)) == len(names)
    seen: set[str] = set()
    for limb in limbs:
        assert limb["parent"] is None or limb["parent"] in seen, limb["name"]
        seen.add(limb["name"])
    assert sum(limb["parent"] is None for limb in limbs) == 1
    kids = children_of(limbs)
    for limb in limbs:
        expected = g["leaf_area"] if not kids[limb["name"]] else 0.0
        assert limb["leaf_area"] == expected, limb["name"]


@pytest.mark.parametrize("leaf_limbs", [2, 5, 9])
def test_leaf_limbs_share_a_shoots_leaves_along_its_unbranched_chain(leaf_limbs):
    """``leaf_limbs`` k: each terminal limb's leaf_area is shared equally by it and the k − 1
    limbs above it on its unbranched chain, never past a branching (the willow's 5-limb
    shoots: k = 9 still stops at the shoot's first limb); the tree's total is unchanged."""
    g = filled(WILLOW, leaf_area=2.0, leaf_limbs=leaf_limbs)
    limbs = generate(g)
    kids = children_of(limbs)
    index = {limb["name"]: i for i, limb in enumerate(limbs)}
    expected = np.zeros(len(limbs))
    for i, limb in enumerate(limbs):
        if kids[limb["name"]]:
            continue
        chain = [i]   # up the chain, written from the names: a branch's limbs are <b>.s<j>
        while len(chain) < leaf_limbs and ".s" in limbs[chain[-1]]["name"]:
            chain.append(index[limbs[chain[-1]]["parent"]])
        expected[chain] += g["leaf_area"] / len(chain)
    area = np.array([limb["leaf_area"] for limb in limbs])
    np.testing.assert_allclose(area, expected, rtol=1e-15)
    shoots = sum(not kids[limb["name"]] for limb in limbs)
    assert area.sum() == pytest.approx(g["leaf_area"] * shoots, rel=1e-14)
    assert np.count_nonzero(area) == shoots * min(leaf_limbs, 5)


def test_naming_scheme():
    g = filled(levels=2, children=2, segments=[2, 1], trunk={"segments": 3})
    names = [limb["name"] for limb in generate(g)]
    assert names == ["trunk0", "trunk1", "trunk2",
                     "b0", "b0.s1", "b1", "b1.s1",
                     "b0.0", "b0.1", "b1.0", "b1.1"]
    parents = {limb["name"]: limb["parent"] for limb in generate(g)}
    assert parents["b0"] == "trunk2" and parents["b0.s1"] == "b0"
    assert parents["b0.1"] == "b0.s1" and parents["b1.0"] == "b1.s1"


# --- determinism ------------------------------------------------------------------------

def test_same_seed_same_tree_other_seed_other_lengths():
    g = filled(jitter=0.2, seed=5)
    assert generate(g) == generate(copy.deepcopy(g))
    other = generate(filled(jitter=0.2, seed=6))
    lengths = [limb["length"] for limb in generate(g)]
    assert [limb["name"] for limb in other] == [limb["name"] for limb in generate(g)]
    assert lengths != [limb["length"] for limb in other]


def test_jitter_zero_ignores_the_seed():
    assert generate(filled(jitter=0.0, seed=1)) == generate(filled(jitter=0.0, seed=2))


# --- counts -----------------------------------------------------------------------------

COUNT_CASES = [
    (4, 3, 3, 2, 0),
    (1, 0, 3, 2, 0),
    (2, 1, 5, 1, 0),
    (3, 4, [3, 2], [2, 1], 0),            # lists shorter than levels repeat their last entry
    (3, 2, [4, 3, 2, 9], [1, 2, 3, 9], 0),  # longer lists are cut
    (5, 5, [2, 3, 1, 2, 2], [3, 1, 1, 2, 1], 0),
    (6, 3, 1, 4, 0),
    (10, 2, [5, 2], [3, 2], 7),           # whorls
    (8, 0, 4, 2, 3),                      # whorls without levels: a bare leader
    (5, 3, [2], [1, 2], 4),
]


@pytest.mark.parametrize("trunk,levels,children,segments,whorls", COUNT_CASES)
def test_count_matches_closed_form_and_generate(trunk, levels, children, segments, whorls):
    g = filled(trunk={"segments": trunk}, levels=levels, children=children,
               segments=segments, whorls=whorls)
    expected = expected_count(trunk, levels, children, segments, whorls)
    assert count_limbs(g) == expected
    assert len(generate(g)) == expected


def test_whorls_must_be_below_trunk_segments():
    with pytest.raises(PresetError, match=r"tree\.generator\.whorls: must be less than "
                                          r"trunk\.segments / whorl_spacing = 4/1"):
        generate(filled(trunk={"segments": 4}, whorls=4))
    with pytest.raises(PresetError, match=r"trunk\.segments / whorl_spacing = 8/2"):
        generate(filled(trunk={"segments": 8}, whorls=4, whorl_spacing=2))


def test_whorl_spacing_cuts_the_stem_finer_under_the_same_crown():
    # Twice the trunk limbs with a whorl at every second joint: the same whorls at the same
    # heights with the same branches; only the stem between them is cut in two.
    coarse = generate(filled(**CONIFER))
    fine_trunk = dict(CONIFER["trunk"], segments=2 * CONIFER["trunk"]["segments"])
    fine = generate(filled(**dict(CONIFER, trunk=fine_trunk), whorl_spacing=2))
    _, coarse_base, coarse_tip = world(coarse)
    _, fine_base, fine_tip = world(fine)
    n, m = CONIFER["trunk"]["segments"], fine_trunk["segments"]
    assert len(fine) == len(coarse) + (m - n)
    np.testing.assert_allclose(fine_base[m:], coarse_base[n:], atol=1e-12)
    np.testing.assert_allclose(fine_tip[m:], coarse_tip[n:], atol=1e-12)
    assert [limb["name"] for limb in fine[m:]] == [limb["name"] for limb in coarse[n:]]


def test_empty_per_level_list_is_refused():
    with pytest.raises(PresetError, match=r"tree\.generator\.children"):
        count_limbs(filled(children=[]))


# --- max_limbs --------------------------------------------------------------------------

def test_max_limbs_refused_before_allocation_and_names_the_count():
    calls = []

    def error(key_path, message):
        calls.append((key_path, message))
        return ValueError(message)

    g = filled(levels=12, children=10, segments=1)  # about 1.1e12 limbs
    n = expected_count(g["trunk"]["segments"], 12, 10, 1)
    assert n > 10 ** 12
    start = time.perf_counter()
    with pytest.raises(ValueError):
        generate(g, error=error)
    # Building even a millionth of this tree would take longer; 0.5 s is a generous bound
    # for a refusal that only multiplies a few integers.
    assert time.perf_counter() - start < 0.5
    assert calls == [("tree.generator.max_limbs",
                      f"the generator would make {n:,} limbs, more than max_limbs = 250,000")]


def test_max_limbs_default_error_and_exact_limit():
    g = filled()
    n = count_limbs(g)
    assert len(generate(filled(max_limbs=n))) == n
    with pytest.raises(PresetError, match=rf"^tree\.generator\.max_limbs: the generator would "
                                          rf"make {n} limbs, more than max_limbs = {n - 1}$"):
        generate(filled(max_limbs=n - 1))


def test_astronomical_tree_is_refused_instantly():
    start = time.perf_counter()
    with pytest.raises(PresetError, match=r"tree\.generator\.max_limbs: the generator would "
                                          r"make about 10\^\d+ limbs"):
        generate(filled(levels=10 ** 9, children=2))
    assert time.perf_counter() - start < 0.5


# --- da Vinci ---------------------------------------------------------------------------

@pytest.mark.parametrize("exponent", [2.0, 2.5])
@pytest.mark.parametrize("gen", [dict(jitter=0.3), dict(levels=4, children=[2, 3, 4],
                                                          segments=[1, 3], jitter=0.2),
                                 dict(CONIFER, jitter=0.2), WILLOW],
                         ids=["default", "lists", "conifer", "willow"])
def test_da_vinci_at_every_branching(exponent, gen):
    limbs = generate(filled(gen, radius_exponent=exponent))
    kids = children_of(limbs)
    branchings = 0
    for limb in limbs:
        if len(kids[limb["name"]]) < 2:
            continue
        branchings += 1
        parent = limb["radius"] ** exponent
        total = sum(limbs[i]["radius"] ** exponent for i in kids[limb["name"]])
        assert abs(total - parent) <= DA_VINCI_RTOL * parent, limb["name"]
    assert branchings > 3


def test_decurrent_trunk_is_a_cylinder_and_excurrent_trunk_tapers():
    trunk = [limb["radius"] for limb in generate(filled()) if limb["name"].startswith("trunk")]
    assert trunk == [filled()["trunk"]["radius"]] * len(trunk)
    limbs = generate(filled(CONIFER))
    trunk = [limb["radius"] for limb in limbs if limb["name"].startswith("trunk")]
    first_whorl = CONIFER["trunk"]["segments"] - 1 - CONIFER["whorls"]
    assert trunk[:first_whorl + 1] == [CONIFER["trunk"]["radius"]] * (first_whorl + 1)
    assert all(a > b for a, b in zip(trunk[first_whorl:], trunk[first_whorl + 1:]))


# --- angles -----------------------------------------------------------------------------

def _first_limbs_of_branches(limbs):
    return [i for i, limb in enumerate(limbs)
            if not limb["name"].startswith("trunk") and ".s" not in limb["name"]]


@pytest.mark.parametrize("angle", [40.0, 25.0, 90.0, 120.0])
@pytest.mark.parametrize("gen", [{}, dict(levels=3, children=[2, 4], segments=[3, 1]),
                                 CONIFER], ids=["default", "lists", "conifer"])
def test_branch_angle_without_jitter(angle, gen):
    limbs = generate(filled(gen, branch_angle_deg=angle, jitter=0.0))
    C_IF, _, _ = world(limbs)
    index = {limb["name"]: i for i, limb in enumerate(limbs)}
    first = _first_limbs_of_branches(limbs)
    assert first
    for i in first:
        p = index[limbs[i]["parent"]]
        assert abs(angle_deg(C_IF[i][:, 2], C_IF[p][:, 2]) - angle) < ANGLE_ATOL_DEG
    for i, limb in enumerate(limbs):  # later limbs (and the trunk) go on straight
        if i not in first and limb["parent"] is not None:
            assert limb["rest_rotation_deg"] == [0.0, 0.0, 0.0], limb["name"]


def test_branch_rest_rotation_is_azimuth_then_tilt():
    g = filled(jitter=0.0, branch_angle_deg=40.0, azimuth_step_deg=137.5)
    limbs = generate(g)
    for k in range(g["children"]):
        branch = next(limb for limb in limbs if limb["name"] == f"b0.{k}")
        expected = (Rotation.from_euler("z", 137.5 * k, degrees=True)
                    * Rotation.from_euler("y", 40.0, degrees=True))
        got = Rotation.from_rotvec(branch["rest_rotation_deg"], degrees=True)
        assert (expected.inv() * got).magnitude() < 1e-12


def test_whorls_spread_evenly_and_shorten_upward():
    g = filled(CONIFER, jitter=0.0, azimuth_step_deg=0.0)
    limbs = generate(g)
    C_IF, base, _ = world(limbs)
    per_whorl, segs = CONIFER["children"][0], CONIFER["segments"][0]
    whorl_branches = [i for i, limb in enumerate(limbs)
                      if limb["parent"] and limb["parent"].startswith("trunk")
                      and not limb["name"].startswith("trunk")]
    assert len(whorl_branches) == CONIFER["whorls"] * per_whorl
    trunk_length = CONIFER["trunk"]["length"]
    for w in range(CONIFER["whorls"]):
        group = whorl_branches[w * per_whorl:(w + 1) * per_whorl]
        height = base[group[0], 2]
        assert np.allclose(base[group, 2], height)
        for i in group:  # branch length = whorl_length_ratio × trunk above the whorl
            total = limbs[i]["length"] * segs
            assert math.isclose(total, CONIFER["whorl_length_ratio"] * (trunk_length - height))
        headings = sorted(math.degrees(math.atan2(C_IF[i][1, 2], C_IF[i][0, 2])) % 360
                          for i in group)
        gaps = np.diff(headings + [headings[0] + 360.0])
        assert np.allclose(gaps, 360.0 / per_whorl)
    leader = limbs[CONIFER["trunk"]["segments"] - 1]
    assert leader["name"] == "trunk9" and leader["leaf_area"] == g["leaf_area"]


def test_droop_bends_toward_the_ground_never_past_vertical():
    g = filled(WILLOW, jitter=0.0)
    limbs = generate(g)
    C_IF, _, _ = world(limbs)
    index = {limb["name"]: i for i, limb in enumerate(limbs)}
    down = np.array([0.0, 0.0, -1.0])
    hanging = 0
    for i, limb in enumerate(limbs):
        if ".s" not in limb["name"]:
            continue
        level = limb["name"].split(".s")[0].count(".") + 1
        p = index[limb["parent"]]
        before, after = angle_deg(C_IF[p][:, 2], down), angle_deg(C_IF[i][:, 2], down)
        if level < WILLOW["droop_level"]:
            assert limb["rest_rotation_deg"] == [0.0, 0.0, 0.0]
        else:
            assert abs(after - max(0.0, before - WILLOW["droop_deg"])) < ANGLE_ATOL_DEG
            hanging += after < ANGLE_ATOL_DEG
    assert hanging > 0  # some shoots hang straight down


def test_per_level_droop_sags_then_rises():
    """A list gives each level its own droop: level-1 limbs turn toward the ground by the
    first entry, level-2 limbs toward the sky by the second (a spruce's sagging branch with an
    upturned end); a list shorter than the levels repeats its last entry."""
    droop = [8.0, -12.0]
    g = filled(CONIFER, jitter=0.0, levels=3, children=[5, 2, 2], segments=[3, 2, 2],
               droop_deg=droop)
    limbs = generate(g)
    C_IF, _, _ = world(limbs)
    index = {limb["name"]: i for i, limb in enumerate(limbs)}
    up = np.array([0.0, 0.0, 1.0])
    seen = set()
    for i, limb in enumerate(limbs):
        if ".s" not in limb["name"]:
            continue
        level = limb["name"].split(".s")[0].count(".") + 1
        delta = droop[min(level, len(droop)) - 1]
        p = index[limb["parent"]]
        before, after = angle_deg(C_IF[p][:, 2], up), angle_deg(C_IF[i][:, 2], up)
        expected = min(180.0, before + delta) if delta > 0 else max(0.0, before + delta)
        assert abs(after - expected) < ANGLE_ATOL_DEG, (limb["name"], before, after)
        seen.add(level)
    assert seen == {1, 2, 3}


def test_per_level_length_ratio():
    """Each branch is its level's length_ratio times its parent branch (the trunk for level
    1); the last entry repeats."""
    ratios = [0.5, 1.5]
    limbs = generate(filled(jitter=0.0, levels=3, children=2, segments=2,
                            length_ratio=ratios))
    trunk = filled()["trunk"]["length"]
    for limb in limbs:
        if limb["name"].startswith("trunk") or ".s" in limb["name"]:
            continue
        level = limb["name"].count(".") + 1
        expected = trunk * np.prod([ratios[min(k, 1)] for k in range(level)])
        assert 2 * limb["length"] == pytest.approx(expected, rel=1e-12), limb["name"]


def test_negative_droop_bends_upward():
    flat = world(generate(filled(jitter=0.0)))[2]
    raised = world(generate(filled(jitter=0.0, droop_deg=-10.0)))[2]
    assert raised[:, 2].max() > flat[:, 2].max()


def test_default_tree_grows_upward_and_outward():
    limbs = generate(filled())
    _, base, tip = world(limbs)
    g = filled()
    assert (tip[:, 2] > 0).all()
    assert tip[:, 2].max() > 1.5 * g["trunk"]["length"]
    assert np.hypot(tip[:, 0], tip[:, 1]).max() > 0.5 * g["trunk"]["length"]


# --- shipped presets --------------------------------------------------------------------

def _check_keys(data: dict, table: dict, path: str):
    for key, value in data.items():
        assert key in table, f"{path}{key}: unknown key"
        if isinstance(table[key], dict) and isinstance(value, dict):
            _check_keys(value, table[key], f"{path}{key}.")


def _load(name: str) -> dict:
    """A shipped preset as read, with the keys its species derives (`species.apply`)."""
    with open(PRESETS / f"{name}.yaml", encoding="utf-8") as file:
        raw = yaml.safe_load(file)

    def fail(key_path, message):
        raise PresetError(f"{name}: {key_path}: {message}")

    return species.apply(raw, fail)


def test_every_shipped_preset_is_listed_here():
    shipped = {path.stem for path in PRESETS.glob("*.yaml")}
    assert shipped == set(SHIPPED) | {"two_limbs"}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_generated_preset(name):
    data = _load(name)
    _check_keys(data, schema.PRESET, "")
    assert data["version"] == 1 and data["name"] and len(data["description"]) > 80
    assert "limbs" not in data["tree"]
    target, (low, high) = SHIPPED[name]
    g = filled(data["tree"]["generator"])
    n = count_limbs(g)
    assert 0.7 * target <= n <= 1.3 * target, n
    limbs = generate(g)
    assert len(limbs) == n
    _, base, tip = world(limbs)
    assert (tip[:, 2] > 0.1).all() and (base[:, 2] >= 0).all()
    assert low <= tip[:, 2].max() <= high
    assert min(limb["radius"] for limb in limbs) >= 0.002
    for key, value in data["material"].items():
        if schema.MATERIAL[key].kind == "enum":
            assert value in schema.MATERIAL[key].choices, key
            continue
        assert isinstance(value, (int, float)) and not isinstance(value, bool), key


def test_two_limbs_is_designs_example_without_wind():
    data = _load("two_limbs")
    _check_keys(data, schema.PRESET, "")
    a, b = data["tree"]["limbs"]
    assert a == {"name": "A", "parent": None, "length": 1.0, "radius": 0.05,
                 "direction": [0, 0, 1], "rest_rotation_deg": [0, 0, 0],
                 "spring_rest_rotation_deg": None, "attach": 1.0, "mass": 2.0,
                 "inertia": [0.17, 0.17, 0.0025], "com": 0.5, "stiffness": 200.0,
                 "damping": 1.0, "leaf_area": 0.0}
    assert b == {"name": "B", "parent": "A", "length": 0.8, "radius": 0.03,
                 "rest_rotation_deg": [30, 0, 0], "stiffness": 80, "damping": 0.4}
    assert data["material"] == {"density": 700, "youngs_modulus": 1.0e10,
                                "poisson_ratio": 0.3, "damping_ratio": 0.05}
    assert data["initial_state"] == [{"limb": "B", "rotation_deg": [0, 20, 0],
                                      "angular_velocity": [0, 0, 0]}]
    assert data["simulation"]["prestress"] is True
    assert data["wind"]["speed"] == 0.0
