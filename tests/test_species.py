"""Trees by species and size: the species table, derived keys and overrides, mass fractions,
root anchorage, the bare tapered stem against Euler–Bernoulli, the damping ratio of the lowest
mode, sway frequencies against the field relations, and bad input."""

from __future__ import annotations

import itertools
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from treedyn_core.model import anchorage, species

import beam_reference
from field_data import BROADLEAF_SIZES, CONIFER_SIZES, measured_trees, sway_coefficients
from treedyn_core.errors import PresetError
from treedyn_core.analysis.modes import modes
from treedyn_core.model.preset import apply_overrides, load_preset, validate
from treedyn_core.analysis.sway import sway_frequency_hz
from treedyn_core.dynamics.static_model import build_tree

CONIFERS = ["picea_abies", "picea_sitchensis", "pinus_sylvestris", "pseudotsuga_menziesii"]
REQUIRED = ["norway", "sitka", "scots", "douglas", "english oak", "red oak", "sugar maple",
            "london plane", "weeping willow"]
# The target for biomass fractions (relative).
MASS_FRACTION_RTOL = 0.15
# Euler–Bernoulli: the 1 %; the rigid-limb stem with integrated joint flexibility
# converges as 1/n² (0.5 % at 20 limbs, 0.12 % at 40).
EULER_BERNOULLI_RTOL = 0.01


def species_data(name: str, height: float, dbh: float, **extra) -> dict:
    gen = {"species": name, "height": height, "dbh": dbh, **extra.pop("generator", {})}
    return validate({"tree": {"generator": gen}, **extra}, "<test>")


def test_table_has_the_required_species_with_sources():
    common = [species.entry(name)["common_name"].lower() for name in species.names()]
    for wanted in REQUIRED:
        assert any(wanted in c for c in common), wanted
    for name in species.names():
        spec = species.entry(name)
        for section in ("wood", "crown", "biomass", "foliage"):
            assert spec[section]["source"], (name, section)
        for key in ("sway_coefficient", "stem_form_factor", "anchorage", "damping_ratio"):
            assert spec[key]["source"], (name, key)
        if "twig_radius" in spec:   # a scan's thin branches taper to it (model/scan.py)
            assert spec["twig_radius"]["source"], name
            assert 0.3e-3 <= spec["twig_radius"]["value"] <= 5e-3, name   # m: twigs, not mm
        law = spec["foliage"].get("crown_drag")
        if law is not None:   # a crown law needs the sheltering that carries it
            assert spec["foliage"]["sheltering_extinction"] > 0.0, name
            assert law["c"] > 0.0 and 0.0 < law["n"] < 1.0 and law["max_speed"] > 10.0, name
        fractions = spec["biomass"]
        assert fractions["stem"] + fractions["branches"] + fractions["foliage"] == \
            pytest.approx(1.0, abs=1e-12)
        assert spec["branching"]["whorls"] == (spec["group"] == "conifer")


def test_preset_keys_override_the_species():
    data = species_data("picea_abies", 20.0, 0.3, material={"youngs_modulus": 7.0e9},
                        generator={"trunk": {"segments": 10}, "branch_angle_deg": 60.0})
    assert data["material"]["youngs_modulus"] == 7.0e9
    assert data["material"]["density"] == species.entry("picea_abies")["wood"]["density"]
    assert data["material"]["modulus_of_rupture"] == 4.0e7
    gen = data["tree"]["generator"]
    assert gen["trunk"]["segments"] == 10 and gen["trunk"]["length"] == 20.0
    assert gen["branch_angle_deg"] == 60.0 and gen["whorls"] > 0


def _fractions(data: dict) -> dict:
    """Stem (trunk wood), branch (branch wood) and foliage fractions of a built tree's mass."""
    tree = build_tree(data)
    gen = data["tree"]["generator"]
    foliage = gen["leaf_mass_per_area"] * tree.leaf_area
    wood = tree.mass - foliage
    trunk = np.array([name.startswith("trunk") for name in tree.names])
    total = tree.mass.sum()
    return {"stem": wood[trunk].sum() / total, "branches": wood[~trunk].sum() / total,
            "foliage": foliage.sum() / total}


@pytest.mark.parametrize("name", species.names())
@pytest.mark.parametrize("height, slenderness", [(8.0, 40.0), (20.0, 70.0), (30.0, 100.0)])
def test_mass_fractions_match_the_table(name, height, slenderness):
    dbh = height / slenderness
    got = _fractions(species_data(name, height, dbh))
    expected = species.fresh_fractions(name, height, dbh)
    for part, fraction in got.items():
        assert fraction == pytest.approx(expected[part], rel=MASS_FRACTION_RTOL), part


def test_marklund_functions_give_published_masses():
    # Marklund (1988), Norway spruce of DBH 20 cm and H 18 m: stem wood + bark, living
    # branches with needles, needles (kg dry), evaluated independently of the table.
    D, H = 20.0, 18.0
    stem = math.exp(-2.3032 + 7.2309 * D / (D + 14) + 0.0355 * H + 0.7030 * math.log(H)) + \
        math.exp(-3.4020 + 8.3089 * D / (D + 15) + 0.0147 * H + 0.2295 * math.log(H))
    crown = math.exp(-1.2063 + 10.9708 * D / (D + 13) - 0.0124 * H - 0.4923 * math.log(H))
    needles = math.exp(-1.8551 + 9.7809 * D / (D + 12) - 0.4873 * math.log(H))
    got = species.biomass_fractions("picea_abies", H, D / 100.0)
    total = stem + crown
    assert got["stem"] == pytest.approx(stem / total, rel=1e-12)
    assert got["foliage"] == pytest.approx(needles / total, rel=1e-12)
    # Small trees carry relatively more crown than large ones.
    assert species.biomass_fractions("picea_abies", 8.0, 0.12)["stem"] < got["stem"] < \
        species.biomass_fractions("picea_abies", 30.0, 0.4)["stem"]


def test_fresh_fractions_add_each_parts_water():
    # Sugar maple: fixed dry fractions 0.62 : 0.33 : 0.05, wood with 70 % water, leaves 2.5
    # times their dry mass: fresh 1.054 : 0.561 : 0.125 of 1.74.
    got = species.fresh_fractions("acer_saccharum", 15.0, 0.3)
    assert got["stem"] == pytest.approx(0.62 * 1.7 / 1.74, rel=1e-12)
    assert got["foliage"] == pytest.approx(0.05 * 2.5 / 1.74, rel=1e-12)
    assert sum(got.values()) == pytest.approx(1.0, abs=1e-12)
    # Fresh foliage carries more water per dry mass than green wood in every species.
    for name in species.names():
        dry = species.biomass_fractions(name, 15.0, 0.3)["foliage"]
        assert species.fresh_fractions(name, 15.0, 0.3)["foliage"] > dry


def test_set_height_rederives_the_species_keys():
    base = species_data("picea_abies", 25.0, 0.4, generator={"seed": 4})
    taller = apply_overrides(base, ["tree.generator.height=15", "tree.generator.dbh=0.2"])
    fresh = species_data("picea_abies", 15.0, 0.2, generator={"seed": 4})
    assert taller == fresh
    # A key the preset gave itself stays.
    own = species_data("picea_abies", 25.0, 0.4, generator={"branch_angle_deg": 60.0})
    assert apply_overrides(own, ["tree.generator.height=15"])["tree"]["generator"][
        "branch_angle_deg"] == 60.0


SIZE = ["tree.generator.species=quercus_rubra", "tree.generator.height=12",
        "tree.generator.dbh=0.3"]


@pytest.mark.parametrize("order", list(itertools.permutations(SIZE)))
def test_species_height_and_dbh_set_in_any_order_make_that_tree(order):
    # Each alone leaves the tree incomplete (a height needs a species, a species its size).
    plain = validate({"tree": {"generator": {}}}, "<test>")
    assert apply_overrides(plain, list(order)) == species_data("quercus_rubra", 12.0, 0.3)


def test_a_new_size_is_checked_as_a_whole():
    # 25 m × 0.4 m → 6 m × 0.1 m: the height alone (6 m on 0.4 m) is too stout to grow.
    tall = species_data("picea_abies", 25.0, 0.4)
    assert apply_overrides(tall, ["tree.generator.height=6", "tree.generator.dbh=0.1"]) == \
        species_data("picea_abies", 6.0, 0.1)
    with pytest.raises(PresetError, match=r"^--set tree\.generator\.height=6: .*slenderness"):
        apply_overrides(tall, ["tree.generator.height=6"])
    plain = validate({"tree": {"generator": {}}}, "<test>")
    with pytest.raises(PresetError, match=r"^--set tree\.generator\.height=12: "
                                          r"tree\.generator\.dbh: required with species"):
        apply_overrides(plain, SIZE[:2])
    # A problem outside the size, after it, is still told.
    with pytest.raises(PresetError, match="wind.speed: expected a number"):
        apply_overrides(plain, [SIZE[0], "wind.speed=fast", *SIZE[1:]])


def test_a_species_set_on_a_preset_without_one_takes_the_species_keys():
    # The sapling's own trunk, branching, wood and foliage were chosen for the sapling: the red
    # oak derives them. Its other keys (seed, wind speed, …) stay, as does a key set before the
    # species in the same command.
    sapling = load_preset("sapling").data
    oak = apply_overrides(sapling, ["material.damping_ratio=0.07", *SIZE])
    derived = species.derive("quercus_rubra", 12.0, 0.3)
    own = {section: {key: value for key, value in given.items() if key not in derived[section]}
           for section, given in (("generator", sapling["tree"]["generator"]),
                                  ("material", sapling["material"]), ("wind", sapling["wind"]))}
    own["material"]["damping_ratio"] = 0.07
    own["generator"].update(species="quercus_rubra", height=12.0, dbh=0.3)
    assert oak == validate({**sapling, "tree": {"generator": own["generator"]},
                            "material": own["material"], "wind": own["wind"]}, "<test>")
    assert oak["tree"]["generator"]["trunk"]["length"] == 12.0


def test_leafless_removes_leaf_area_and_leaf_mass_only():
    leafy = build_tree(species_data("quercus_robur", 10.0, 0.25, generator={"stand": "open"}))
    bare = build_tree(species_data("quercus_robur", 10.0, 0.25,
                                   generator={"stand": "open", "leafless": True}))
    assert leafy.leaf_area.sum() > 0.0 and bare.leaf_area.sum() == 0.0
    gen = species_data("quercus_robur", 10.0, 0.25, generator={"stand": "open"})
    foliage = gen["tree"]["generator"]["leaf_mass_per_area"] * leafy.leaf_area.sum()
    assert leafy.mass.sum() - bare.mass.sum() == pytest.approx(foliage, rel=1e-12)


def test_root_stiffness_follows_the_anchorage_relation():
    data = species_data("picea_abies", 25.0, 0.4)
    tree = build_tree(data)
    wood = tree.mass - data["tree"]["generator"]["leaf_mass_per_area"] * tree.leaf_area
    stem_mass = wood[[name.startswith("trunk") for name in tree.names]].sum()
    C = species.entry("picea_abies")["anchorage"]["turning_moment_per_stem_mass"]
    expected = C * stem_mass / math.radians(0.625)
    assert data["tree"]["generator"]["root_stiffness"] == pytest.approx(expected, rel=1e-12)
    assert anchorage.root_stiffness(C, stem_mass) == pytest.approx(expected, rel=1e-12)
    # The root joint is the root plate in series with the stem's lowest half limb.
    assert tree.stiffness[0, 0, 0] < expected


@pytest.mark.parametrize("q", [0.5, 0.8])
def test_bare_tapered_stem_matches_euler_bernoulli(q):
    H, r0, E, rho = 20.0, 0.2, 9.0e9, 800.0
    raw = {"tree": {"generator": {"trunk": {"length": H, "radius": r0, "segments": 40},
                                  "levels": 0, "stem_form": q, "jitter": 0.0}},
           "material": {"density": rho, "youngs_modulus": E},
           "simulation": {"gravity": [0.0, 0.0, 0.0]}}
    f = modes(validate(raw, "<test>"), 1).frequencies_hz[0]
    assert f == pytest.approx(beam_reference.lowest_frequency_hz(H, r0, q, E, rho),
                              rel=EULER_BERNOULLI_RTOL)


def test_juvenile_core_lowers_the_stem_joints_as_a_composite_section():
    # A cylindrical stem (q = 0) with a core of radius r_j and modulus ρ·E: each interior joint
    # spans one limb length h of the section E·π/4·(R⁴ − (1 − ρ)·r_j⁴).
    from treedyn_core.model.generator import stem_joint_stiffness
    H, R, n, E, G, r_j, ratio = 10.0, 0.2, 10, 9.0e9, 6.0e8, 0.12, 0.43
    h = H / n
    k = stem_joint_stiffness(H, R, 0.0, n, E, G, r_j, ratio)
    expected = E * math.pi / 4.0 * (R ** 4 - (1.0 - ratio) * r_j ** 4) / h
    assert k[1:, 0] == pytest.approx(expected, rel=1e-12)
    # A core wider than the stem: the whole section has the core's modulus.
    wide = stem_joint_stiffness(H, R, 0.0, n, E, G, 1.0, ratio)
    assert wide[1:, 0] == pytest.approx(ratio * E * math.pi / 4.0 * R ** 4 / h, rel=1e-12)
    # Douglas fir's core is the table's fraction of the breast-height radius.
    gen = species_data("pseudotsuga_menziesii", 18.0, 0.3)["tree"]["generator"]
    juvenile = species.entry("pseudotsuga_menziesii")["wood"]["juvenile"]
    assert gen["juvenile_radius"] == pytest.approx(juvenile["radius_fraction"] * 0.15)
    assert gen["juvenile_modulus_ratio"] == juvenile["modulus_ratio"]


def test_fork_gives_the_stem_above_it_the_leaders_stiffness():
    # A cylindrical stem (q = 0) of n limbs forking at F into m leaders: a joint spanning
    # [a, b] has k = E / ((F − a)/I + m·(b − F)/I) clipped to the span (pipe model: m leaders
    # of radius R/√m have I/m together).
    from treedyn_core.model.generator import stem_joint_stiffness
    H, R, n, E, G, F, m = 10.0, 0.2, 10, 9.0e9, 6.0e8, 3.25, 3
    h, second_moment = H / n, math.pi * R ** 4 / 4.0
    k = stem_joint_stiffness(H, R, 0.0, n, E, G, fork_height=F, fork_leaders=m)
    single = stem_joint_stiffness(H, R, 0.0, n, E, G)
    assert k[1:3, 0] == pytest.approx(single[1:3, 0], rel=1e-12)     # below the fork
    assert k[4:, 0] == pytest.approx(single[4:, 0] / m, rel=1e-12)   # above it
    straddling = E * second_moment / ((F - 2.5 * h) + m * (3.5 * h - F))
    assert k[3, 0] == pytest.approx(straddling, rel=1e-12)
    assert k[4:, 2] == pytest.approx(single[4:, 2] / m, rel=1e-12)   # twist alike
    # Open-grown sugar maple forks (the table's height and leaders); forest-grown does not,
    # nor does any other species.
    fork = species.entry("acer_saccharum")["fork"]["open"]
    gen = species_data("acer_saccharum", 17.0, 0.5, generator={"stand": "open"})["tree"][
        "generator"]
    assert (gen["fork_height"], gen["fork_leaders"]) == (fork["height"], fork["leaders"])
    assert species.derive("acer_saccharum", 17.0, 0.5, "forest")["generator"][
        "fork_height"] is None
    for name in species.names():
        if name != "acer_saccharum":
            derived = species.derive(name, 17.0, 0.5, "open")["generator"]
            assert derived["fork_height"] is None and derived["fork_leaders"] == 1, name
    # The fork changes the stem's stiffness, not its mass.
    forked = build_tree(species_data("acer_saccharum", 17.0, 0.5, generator={"stand": "open"}))
    single_stem = build_tree(species_data("acer_saccharum", 17.0, 0.5,
                                          generator={"stand": "open", "fork_leaders": 1}))
    assert forked.mass == pytest.approx(single_stem.mass, rel=1e-12)
    trunk = [i for i, name in enumerate(forked.names) if name.startswith("trunk")]
    above = [i for i in trunk if i * 17.0 / len(trunk) > fork["height"] + 17.0 / len(trunk)]
    assert forked.stiffness[above, 0, 0] == pytest.approx(
        single_stem.stiffness[above, 0, 0] / fork["leaders"], rel=1e-12)


def test_stated_damping_ratio_is_the_lowest_modes():
    data = species_data("quercus_robur", 8.0, 0.19, generator={"stand": "open"})
    result = modes(data, 3)
    assert result.damping_ratios[0] == pytest.approx(data["material"]["damping_ratio"],
                                                     rel=1e-3)
    # Higher modes damp more (stiffness-proportional damping).
    assert result.damping_ratios[2] > result.damping_ratios[0]


# The measured trees (tests/data/field_sway_frequencies.csv: Jackson et al. 2019's compilation,
# with Moore & Maguire 2004's conifers), within the allometry's H 6–30 m and H/DBH 25–130.
CONIFER_MEDIAN_ABS_LN = 0.25   # the targets: forest-grown conifers
CONIFER_MEAN_LN = 0.15
BROADLEAF_MEDIAN_ABS_LN = 0.35  # open-grown sugar maple and red oak


def model_sway_frequency(name: str, stand: str, height: float, dbh: float) -> float:
    """f0 (Hz) of a generated tree: among its 12 lowest modes, else among 60 (a broadleaf's
    crown sway may lie above many single-limb modes)."""
    tree = species_data(name, height, dbh, generator={"stand": stand})
    return sway_frequency_hz(modes(tree, 12)) or sway_frequency_hz(modes(tree, 60))


def log_ratios(name: str, stand: str) -> np.ndarray:
    """ln(f_model / f_measured) of the measured trees rebuilt at their H and DBH."""
    return np.array([math.log(model_sway_frequency(name, stand, height, dbh) / f0)
                     for height, dbh, f0 in measured_trees(name, stand)])


@pytest.mark.slow
@pytest.mark.parametrize("name", CONIFERS)
def test_conifer_sway_frequency_against_measured_trees(name):
    ln = log_ratios(name, "forest")
    assert len(ln) >= 8
    assert np.median(np.abs(ln)) <= CONIFER_MEDIAN_ABS_LN, ln
    assert abs(ln.mean()) <= CONIFER_MEAN_LN, ln


@pytest.mark.slow
@pytest.mark.parametrize("name", ["acer_saccharum", "quercus_rubra"])
def test_open_grown_broadleaf_sway_frequency_against_measured_trees(name):
    ln = log_ratios(name, "open")
    assert len(ln) >= 5
    assert np.median(np.abs(ln)) <= BROADLEAF_MEDIAN_ABS_LN, ln


def grid_sway_coefficients(name: str, stand: str, sizes) -> np.ndarray:
    """f0·H²/DBH (Hz·m²/cm) of generated trees of ``name`` at the grid's sizes."""
    return np.array([model_sway_frequency(name, stand, height, height / slenderness)
                     * height * slenderness / 100.0 for height, slenderness in sizes])


@pytest.mark.slow
@pytest.mark.parametrize("name", CONIFERS)
def test_conifer_on_a_grid_of_sizes_sways_within_its_relations_band(name):
    """Forest-grown trees of H 10–30 m, H/DBH 50–90, against the species' relation
    f0 = k·DBH/H² (its k the median of its measured trees): the issue's targets, median
    |ln(f_model/f_relation)| ≤ 0.25 and mean within ±0.15, over the grid. Measured: Norway
    spruce 0.14/+0.03, Sitka spruce 0.14/+0.08, Scots pine 0.10/−0.01, Douglas fir 0.07/+0.00."""
    ln = np.log(grid_sway_coefficients(name, "forest", CONIFER_SIZES)
                / species.entry(name)["sway_coefficient"]["value"])
    print(name, np.round(ln, 3))
    assert np.median(np.abs(ln)) <= CONIFER_MEDIAN_ABS_LN, ln
    assert abs(ln.mean()) <= CONIFER_MEAN_LN, ln


# A conifer's trunk limbs halved (its whorls doubled, its crown's length kept to the nearest
# limb) may move its sway frequency by a third of the measured trees' scatter about their
# relation (ln k: 0.2) at most. The former 1.25 m limbs (a floor of 8) moved a 10 m Norway
# spruce by 12 % (docs/validation.md, Discretization).
CONIFER_REFINEMENT_RTOL = 0.2 / 3
# A broadleaf's stem cut twice as fine under the same crown: the stem alone converges as 1/n²
# (EULER_BERNOULLI_RTOL), so its sway frequency moves by a fraction of that.
BROADLEAF_REFINEMENT_RTOL = 0.01


def _sway_frequency(name: str, stand: str, height: float, slenderness: float) -> float:
    data = species_data(name, height, height / slenderness, generator={"stand": stand})
    return sway_frequency_hz(modes(data, 12))


@pytest.mark.slow
@pytest.mark.parametrize("name", CONIFERS)
@pytest.mark.parametrize("height", [10.0, 30.0])
def test_conifer_sway_frequency_holds_when_its_whorls_and_limbs_are_doubled(name, height,
                                                                            monkeypatch):
    default = _sway_frequency(name, "forest", height, 60.0)
    grid = species.tier_grid
    monkeypatch.setattr(species, "tier_grid", lambda h, group: 2 * grid(h, group))
    assert _sway_frequency(name, "forest", height, 60.0) == pytest.approx(
        default, rel=CONIFER_REFINEMENT_RTOL)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["acer_saccharum", "quercus_rubra"])
@pytest.mark.parametrize("height", [8.0, 12.0, 22.0])
def test_broadleaf_sway_frequency_holds_when_its_stem_is_cut_finer(name, height, monkeypatch):
    default = _sway_frequency(name, "open", height, 40.0)
    monkeypatch.setitem(species.LIMBS_PER_TIER, "broadleaf",
                        2 * species.LIMBS_PER_TIER["broadleaf"])
    assert _sway_frequency(name, "open", height, 40.0) == pytest.approx(
        default, rel=BROADLEAF_REFINEMENT_RTOL)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["acer_saccharum", "quercus_rubra"])
def test_open_grown_broadleaf_on_a_grid_of_sizes_sways_inside_the_field_range(name):
    """Open-grown trees of H 8–22 m, H/DBH 40–45: each one's k = f0·H²/DBH inside the range
    of the measured open-grown broadleaves of the field data (1.32–5.83, 17 trees of three
    species). Measured: sugar maple 3.08–4.30, red oak 3.25–4.35, against the broadleaves'
    median 2.5 (quartiles 1.7–3.0) and the red oaks' own 2.52–3.56 (all 23–30 m tall):
    the smaller trees sway faster than the relation (docs/validation.md)."""
    broadleaves = [n for n in species.names() if species.entry(n)["group"] != "conifer"]
    field = sway_coefficients("open", broadleaves)
    k = grid_sway_coefficients(name, "open", BROADLEAF_SIZES)
    print(name, np.round(k, 2), "field", field.min(), field.max())
    assert len(field) >= 10
    assert np.all((field.min() <= k) & (k <= field.max())), k


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "treedyn_core", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("generator, words", [
    ("{species: picea_nonesuch, height: 20, dbh: 0.3}", ["unknown species", "picea_abies"]),
    ("{species: picea_abies, height: 5, dbh: 3}", ["height", "6–30 m"]),
    ("{species: picea_abies, height: 20, dbh: 3}", ["slenderness", "25–130"]),
    ("{species: picea_abies, height: 20}", ["dbh", "required"]),
    ("{height: 20, dbh: 0.3}", ["height", "needs tree.generator.species"]),
])
def test_bad_species_input_is_one_line_exit_2(tmp_path, generator, words):
    path = tmp_path / "bad.yaml"
    path.write_text(f"tree:\n  generator: {generator}\n")
    done = _cli("modes", str(path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0]


def test_apply_leaves_a_preset_without_species_alone():
    raw = {"tree": {"generator": {"levels": 1}}}
    assert species.apply(raw, lambda key, message: (_ for _ in ()).throw(
        PresetError(f"{key}: {message}"))) is raw


# Shipped tree presets whose sway frequency is checked here (willow's and the giant's lowest
# trunk or crown sway lies above 150 modes of hanging shoots and limbs: stated, not re-run).
CHECKED_PRESETS = ["sapling", "young_oak", "conifer", "old_oak"]
TREE_PRESETS = CHECKED_PRESETS + ["weeping_willow", "giant"]  # two_limbs is a linkage


@pytest.mark.parametrize("name", TREE_PRESETS)
def test_preset_description_states_sway_frequency_and_relation(name):
    description = load_preset(name).data["description"]
    assert re.search(r"f0 = [0-9.]+ Hz", description), description
    assert "DBH/H²" in description or "D/H²" in description


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKED_PRESETS)
def test_preset_sway_frequency_is_the_one_stated(name):
    data = load_preset(name).data
    stated = float(re.search(r"f0 = ([0-9.]+) Hz", data["description"]).group(1))
    assert sway_frequency_hz(modes(data, 12)) == pytest.approx(stated, rel=0.01)


def test_every_species_has_colours_with_a_source():
    for name in species.names():
        colour = species.entry(name)["colour"]
        for key in ("foliage", "bark"):
            assert re.fullmatch(r"#[0-9a-f]{6}", colour[key]), (name, key)
        assert colour["source"]
        generator = species.derive(name, 15.0, 0.3)["generator"]
        assert (generator["foliage_colour"], generator["bark_colour"]) == (
            colour["foliage"], colour["bark"])
