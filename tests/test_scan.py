"""Scanned trees (`tree.scan`, treedyn_core/model/qsm_read.py and scan.py, docs/scans.md): the
formats read back, the conversion against the generator and Euler–Bernoulli, its convergence,
foliage by species, and bad input refused in one line."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import beam_reference
import scan_tables
from treedyn_core.model import species
from treedyn_core.errors import PresetError
from treedyn_core.analysis.modes import modes
from treedyn_core.model.preset import apply_overrides, load_preset, validate
from treedyn_core.model.scan import scan_limbs, taper_thin_branches
from treedyn_core.analysis.sway import sway_frequency_hz
from treedyn_core.dynamics.static_model import build_tree

# The targets: the round trip within 2 %, the tapered stem within 1 % of
# Euler–Bernoulli.
ROUND_TRIP_RTOL = 0.02
EULER_BERNOULLI_RTOL = 0.01
# Halving min_radius or limb_length must move f0 by less than the field scatter about the
# broadleaves' sway relation (sd of ln k 0.2–0.35, assets/species.yaml): a third of its lowest.
CONVERGENCE_LN = 0.2 / 3

GENERATED = {"tree": {"generator": {"trunk": {"length": 8.0, "radius": 0.2, "segments": 12},
                                    "levels": 2, "children": 3, "segments": 2, "jitter": 0.1,
                                    "leaf_area": 0.0}}}


def sway(data: dict) -> float:
    return sway_frequency_hz(modes(data, 12)) or sway_frequency_hz(modes(data, 40))


def scan_data(path, **scan) -> dict:
    return validate({"tree": {"scan": {"file": str(path), **scan}}}, "<test>")


@pytest.fixture(scope="module")
def generated():
    data = validate(GENERATED, "<test>")
    return data, build_tree(data), sway(data)


@pytest.mark.parametrize("writer, suffix", [
    (scan_tables.write_mat_struct, ".mat"), (scan_tables.write_mat73_struct, ".mat"),
    (scan_tables.write_mat_matrix, ".mat"), (scan_tables.write_text, ".txt"),
    (scan_tables.write_csv, ".csv")])
def test_a_generated_tree_read_back_as_a_scan_sways_at_its_frequency(tmp_path, generated,
                                                                      writer, suffix):
    _, tree, f_generated = generated
    table = scan_tables.cylinder_table(tree)
    path = tmp_path / f"tree{suffix}"
    writer(path, table)
    data = scan_data(path, min_radius=0.0, limb_length=0.5)
    built = build_tree(data)
    # Every cylinder's wood is in the limbs, the height is the generated tree's.
    assert built.mass.sum() == pytest.approx(tree.mass.sum(), rel=1e-9)
    assert built.height == pytest.approx(tree.height, rel=1e-6)
    assert sway(data) == pytest.approx(f_generated, rel=ROUND_TRIP_RTOL)


def test_the_formats_give_the_same_limbs(tmp_path, generated):
    table = scan_tables.cylinder_table(generated[1])
    limbs = []
    for writer, name in [(scan_tables.write_mat_struct, "a.mat"),
                         (scan_tables.write_mat73_struct, "b.mat"),
                         (scan_tables.write_text, "c.txt"), (scan_tables.write_csv, "d.csv")]:
        writer(tmp_path / name, table)
        data = scan_data(tmp_path / name)
        limbs.append(scan_limbs(data["tree"]["scan"], data).limbs)
    for other in limbs[1:]:
        for a, b in zip(limbs[0], other):
            assert a["name"] == b["name"] and a["parent"] == b["parent"]
            assert a["mass"] == pytest.approx(b["mass"], rel=1e-8)
            assert a["stiffness"] == pytest.approx(b["stiffness"], rel=1e-8)


@pytest.mark.parametrize("writer", [scan_tables.write_mat_struct_array,
                                    scan_tables.write_mat73_struct_array])
def test_a_struct_array_gives_the_first_model_or_the_one_chosen(tmp_path, writer):
    tall = scan_tables.tapered_stem_table(10.0, 0.15, 0.5, 20)
    short = scan_tables.tapered_stem_table(6.0, 0.1, 0.5, 12)
    path = tmp_path / "models.mat"
    writer(path, [tall, short])
    assert build_tree(scan_data(path)).height == pytest.approx(10.0, rel=1e-12)
    assert build_tree(scan_data(path, model=1)).height == pytest.approx(6.0, rel=1e-12)
    with pytest.raises(PresetError, match=r"^models\.mat: QSM holds 2 model\(s\); model 2 "):
        build_tree(scan_data(path, model=2))


def test_a_v73_file_with_one_matrix_is_read(tmp_path):
    table = scan_tables.tapered_stem_table(10.0, 0.15, 0.5, 20)
    scan_tables.write_mat73_matrix(tmp_path / "m.mat", table)
    tree = build_tree(scan_data(tmp_path / "m.mat", min_radius=0.0))
    assert tree.height == pytest.approx(10.0, rel=1e-12)


@pytest.mark.parametrize("q", [0.5, 0.8])
def test_tapered_stem_as_cylinders_matches_euler_bernoulli(tmp_path, q):
    H, r0, E, rho = 20.0, 0.2, 9.0e9, 800.0
    path = tmp_path / "stem.mat"
    scan_tables.write_mat_matrix(path, scan_tables.tapered_stem_table(H, r0, q, 400))
    data = validate({"tree": {"scan": {"file": str(path), "limb_length": 0.5,
                                       "min_radius": 0.0}},
                     "material": {"density": rho, "youngs_modulus": E},
                     "simulation": {"gravity": [0.0, 0.0, 0.0]}}, "<test>")
    assert build_tree(data).n == 40
    f = modes(data, 1).frequencies_hz[0]
    assert f == pytest.approx(beam_reference.lowest_frequency_hz(H, r0, q, E, rho),
                              rel=EULER_BERNOULLI_RTOL)


def test_a_branch_part_way_along_a_cylinder_is_attached_where_it_starts(tmp_path):
    # A 4 m vertical cylinder and a branch starting 1 m up it, pointing along x.
    table = np.array([[0.2, 4.0, 0, 0, 0, 0, 0, 1, 0],
                      [0.05, 2.0, 0.2, 0, 1.0, 1, 0, 0, 1]], dtype=float)
    scan_tables.write_mat_matrix(tmp_path / "t.mat", table)
    data = scan_data(tmp_path / "t.mat", limb_length=4.0, min_radius=0.0)
    tree = build_tree(data)
    branch = tree.index_of["c2"]
    assert tree.rest_base[branch] == pytest.approx([0.0, 0.0, 1.0], abs=1e-12)
    assert tree.rest_tip[branch] == pytest.approx([2.0, 0.0, 1.0], abs=1e-9)


def _inflated_branch_table() -> np.ndarray:
    """A 3 m stem of radius 0.1 m and, from its top, a horizontal branch: a 1 m cylinder of
    radius 0.03 m (reliable) and ten thin ones of 0.02 m, 1 m each (a scan's inflated tips)."""
    rows = [[0.1, 3.0, 0, 0, 0, 0, 0, 1, 0], [0.03, 1.0, 0, 0, 3.0, 1, 0, 0, 1]]
    for k in range(10):
        rows.append([0.02, 1.0, 1.0 + k, 0, 3.0, 1, 0, 0, k + 2])
    return np.array(rows, dtype=float)


def test_thin_branches_taper_to_the_twig_radius_by_the_pipe_model():
    # Growth lengths: the reliable branch cylinder 11 m, the thin ones 10, 9, …, 1 m. Each thin
    # cylinder takes min(0.02, √(r_t² + (0.03² − r_t²)·G/11)); the stem and the reliable
    # cylinder keep theirs.
    table = _inflated_branch_table()
    radius, length = table[:, 0], table[:, 1]
    parent = table[:, 8].astype(int) - 1
    twig = 0.002
    tapered = taper_thin_branches(radius, length, parent, np.arange(len(radius)), twig, 0.025)
    growth = np.array([14.0, 11.0] + [10.0 - k for k in range(10)])
    pipe = np.sqrt(twig ** 2 + (0.03 ** 2 - twig ** 2) * growth[2:] / 11.0)
    assert tapered[:2] == pytest.approx([0.1, 0.03], abs=0.0)
    assert tapered[2:] == pytest.approx(np.minimum(0.02, pipe), rel=1e-12)
    assert tapered[2] == 0.02 and tapered[-1] < 0.01   # inflated tips only


def test_a_species_scan_tapers_its_thin_branches_unless_twig_radius_is_0(tmp_path, capsys):
    scan_tables.write_mat_matrix(tmp_path / "t.mat", _inflated_branch_table())
    base = dict(species="fraxinus_excelsior", leafless=True, min_radius=0.0, limb_length=1.0)
    as_read = build_tree(scan_data(tmp_path / "t.mat", twig_radius=0.0, **base))
    tapered = build_tree(scan_data(tmp_path / "t.mat", **base))
    assert "thin cylinders tapered to 2.24 mm twigs" in capsys.readouterr().err
    assert tapered.mass.sum() < as_read.mass.sum()
    assert np.all(tapered.radius <= as_read.radius + 1e-15)
    assert tapered.radius[0] == as_read.radius[0]   # the stem as read


def test_thin_cylinders_fold_their_mass_into_the_limb_carrying_them(tmp_path, generated):
    table = scan_tables.cylinder_table(generated[1])
    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, table)
    whole = build_tree(scan_data(path, min_radius=0.0))
    cut = build_tree(scan_data(path, min_radius=float(np.median(table[:, 0]))))
    assert cut.n < whole.n
    assert cut.mass.sum() == pytest.approx(whole.mass.sum(), rel=1e-12)


@pytest.mark.slow
def test_halving_min_radius_or_limb_length_moves_f0_less_than_the_field_scatter(tmp_path):
    # A species tree's crown, scanned at a resolution finer than the limbs: each limb four
    # cylinders (a QSM's cylinders are 5–30 cm; the generator's limbs 0.6–1.5 m).
    data = validate({"tree": {"generator": {"species": "fraxinus_excelsior", "height": 16.0,
                                            "dbh": 0.3, "leafless": True}}}, "<test>")
    table = scan_tables.cylinder_table(build_tree(data))
    path = tmp_path / "ash.mat"
    scan_tables.write_mat_struct(path, table)
    base = dict(species="fraxinus_excelsior", leafless=True)
    f = {(m, ell): sway(scan_data(path, min_radius=m, limb_length=ell, **base))
         for m, ell in [(0.02, 1.0), (0.01, 1.0), (0.02, 0.5)]}
    assert abs(math.log(f[(0.01, 1.0)] / f[(0.02, 1.0)])) < CONVERGENCE_LN, f
    assert abs(math.log(f[(0.02, 0.5)] / f[(0.02, 1.0)])) < CONVERGENCE_LN, f


def test_species_sets_wood_and_leaves_and_leafless_drops_them(tmp_path, generated):
    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    name = "betula_pendula"
    leafy = scan_data(path, species=name)
    wood = species.entry(name)["wood"]
    assert leafy["material"]["density"] == wood["density"]
    assert leafy["material"]["youngs_modulus"] == wood["youngs_modulus"]
    assert leafy["material"]["damping_model"] == "stiffness_proportional"
    bare = scan_data(path, species=name, leafless=True)
    tree_leafy, tree_bare = build_tree(leafy), build_tree(bare)
    assert tree_bare.leaf_area.sum() == 0.0 and tree_leafy.leaf_area.sum() > 0.0
    # The foliage is the species' fresh foliage-to-wood ratio of the scan's wood.
    fresh = species.fresh_fractions(name, tree_bare.height, 0.4)
    ratio = fresh["foliage"] / (fresh["stem"] + fresh["branches"])
    foliage = tree_leafy.mass.sum() - tree_bare.mass.sum()
    assert foliage == pytest.approx(ratio * tree_bare.mass.sum(), rel=1e-9)
    lma = species.entry(name)["foliage"]["leaf_mass_per_area"]
    assert tree_leafy.leaf_area.sum() == pytest.approx(foliage / lma, rel=1e-9)
    # In leaf the tree sways more slowly.
    assert sway(leafy) < sway(bare)


def test_a_species_scan_stands_on_open_ground_unless_the_preset_gives_a_stand(tmp_path,
                                                                            generated):
    # The species sets the leaves' drag, not a stand: a forest species tree's canopy of its own
    # height would put every scan in the 15 m canopy of the size the wood is derived at.
    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    data = scan_data(path, species="picea_abies")
    assert data["wind"]["canopy"]["height"] is None
    assert data["wind"]["vogel_exponent"] == species.entry("picea_abies")["foliage"][
        "vogel_exponent"]
    stand = validate({"tree": {"scan": {"file": str(path), "species": "picea_abies"}},
                      "wind": {"canopy": {"height": 12.0, "spacing": 3.0}}}, "<test>")
    assert stand["wind"]["canopy"]["height"] == 12.0


def test_a_scan_file_is_a_preset_and_takes_a_species_by_set(tmp_path, generated):
    path = tmp_path / "oak.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    preset = load_preset(path)
    assert preset.name == "oak" and preset.path is None
    assert preset.data["material"]["density"] == 700.0
    data = apply_overrides(preset.data, ["tree.scan.species=fagus_sylvatica"])
    assert data["material"]["density"] == species.entry("fagus_sylvatica")["wood"]["density"]
    kept = apply_overrides(preset.data, ["material.density=650",
                                         "tree.scan.species=fagus_sylvatica"])
    assert kept["material"]["density"] == 650.0


def test_a_preset_names_its_scan_relative_to_its_folder(tmp_path, generated):
    folder = tmp_path / "scans"
    folder.mkdir()
    scan_tables.write_text(folder / "t.txt", scan_tables.cylinder_table(generated[1]))
    (tmp_path / "p.yaml").write_text("version: 1\ntree:\n  scan: {file: scans/t.txt, "
                                     "species: quercus_robur}\n")
    preset = load_preset(tmp_path / "p.yaml")
    assert preset.raw["tree"]["scan"]["file"] == "scans/t.txt"
    assert build_tree(preset.data).n > 10


def test_save_as_writes_the_scan_and_the_settings_not_the_limbs(tmp_path, generated):
    from treedyn_core.model.recipe import save_recipe

    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    other = tmp_path / "elsewhere"
    other.mkdir()
    saved = save_recipe(load_preset(path), other / "t.yaml", {"wind.speed": 12.0})
    assert "limbs" not in saved["tree"] and saved["wind"]["speed"] == 12.0
    reloaded = load_preset(other / "t.yaml")
    assert build_tree(reloaded.data).n == build_tree(load_preset(path).data).n


def test_max_limbs_names_the_count_and_the_key(tmp_path, generated):
    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    data = scan_data(path, max_limbs=10)
    with pytest.raises(PresetError, match=r"tree\.scan\.max_limbs: the scan makes \d+ limbs"):
        build_tree(data)


def test_repairs_are_counted_and_unreparable_input_refused(tmp_path, generated, capsys):
    table = scan_tables.cylinder_table(generated[1])[:, :9].copy()
    # A zero-length cylinder (its children re-hang), an axis of length 2, a second root.
    table[3, 1] = 0.0
    table[5, 5:8] *= 2.0
    extra = table[-1].copy()
    extra[8] = 0
    extra[2:5] += [5.0, 0.0, 0.0]
    table = np.vstack([table, extra])
    scan_tables.write_mat_matrix(tmp_path / "r.mat", table)
    build_tree(scan_data(tmp_path / "r.mat"))
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "1 zero-length or not-a-number cylinder(s) dropped" in line
    assert "1 axis vector(s) normalised" in line
    assert "1 cylinder(s) of a second root dropped" in line
    # A branch 3 m off its parent's axis: no rule makes it that parent's.
    far = scan_tables.cylinder_table(generated[1])[:, :9].copy()
    far[-1, 2:5] += [3.0, 0.0, 0.0]
    scan_tables.write_mat_matrix(tmp_path / "far.mat", far)
    with pytest.raises(PresetError, match=r"^far\.mat: cylinder \d+ starts [\d.]+ m from the axis"):
        build_tree(scan_data(tmp_path / "far.mat"))


def _bad_files(tmp_path, table):
    """(file, words of its one-line error) for each bad input of the issue."""
    out = []
    good = tmp_path / "good.mat"
    scan_tables.write_mat_matrix(good, table)
    blob = good.read_bytes()
    (tmp_path / "truncated.mat").write_bytes(blob[:len(blob) // 2])
    out.append(("truncated.mat", "not a readable MATLAB file"))
    (tmp_path / "garbage.mat").write_bytes(b"\x00\x01garbage" * 100)
    out.append(("garbage.mat", "not a readable MATLAB file"))
    h5 = tmp_path / "h5.mat"
    scan_tables.write_mat73_struct(h5, table)
    (tmp_path / "truncated73.mat").write_bytes(h5.read_bytes()[:1000])
    out.append(("truncated73.mat", "not a readable MATLAB v7.3"))
    import scipy.io

    scipy.io.savemat(str(tmp_path / "two.mat"), {"a": table, "b": table})
    out.append(("two.mat", "holds 2 matrices (a, b)"))
    scan_tables.write_mat_matrix(tmp_path / "narrow.mat", table[:, :7])
    out.append(("narrow.mat", "has 7 columns; a cylinder table needs at least 9"))
    scan_tables.write_csv(tmp_path / "missing.csv", table[:, :8], scan_tables.COLUMNS[:8])
    out.append(("missing.csv", "missing column(s) parent"))
    for name, column, value, words in [
            ("negative.txt", 0, -0.1, "radius -0.1 m"), ("nan.txt", 0, math.nan, "radius nan m"),
            ("outside.txt", 8, 999, "parent 999 is outside the table"),
            ("cycle.txt", 8, 9, "form a parent cycle")]:
        bad = table.copy()
        bad[4, column] = value
        if name == "cycle.txt":
            bad[:, 8] = np.where(np.arange(len(bad)) == 8, 5, bad[:, 8])
        scan_tables.write_text(tmp_path / name, bad)
        out.append((name, words))
    centimetres = table.copy()
    centimetres[:, :5] *= 100.0
    scan_tables.write_text(tmp_path / "centimetres.txt", centimetres)
    out.append(("centimetres.txt", "look like centimetres"))
    kilometres = table.copy()
    kilometres[:, :5] /= 1000.0
    scan_tables.write_text(tmp_path / "kilometres.txt", kilometres)
    out.append(("kilometres.txt", "look like kilometres"))
    return out


def test_each_bad_input_is_one_line_naming_the_file(tmp_path, generated):
    table = scan_tables.tapered_stem_table(10.0, 0.15, 0.5, 20)
    for name, words in _bad_files(tmp_path, table):
        with pytest.raises(PresetError) as caught:
            build_tree(load_preset(tmp_path / name).data)
        message = str(caught.value)
        assert "\n" not in message and message.startswith(name) and words in message, message


@pytest.mark.slow
def test_bad_input_on_the_command_line_exits_2_and_writes_nothing(tmp_path):
    table = scan_tables.tapered_stem_table(10.0, 0.15, 0.5, 20)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for name, words in _bad_files(tmp_path, table):
        out = tmp_path / f"{name}.npz"
        for command in (["modes", name], ["run", name, "--duration", "0.1", "--out", str(out)]):
            done = subprocess.run([sys.executable, "-m", "treedyn_core", *command],
                                  cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 2, (name, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and words in lines[0], (name, done.stderr)
            assert not out.exists()


# The interactive target: a 10,000-cylinder QSM loads, converts and starts in 3 s warm.
# Taken as this process's CPU time: the suite's other worker shares the two cores, and the wall
# time of the same work then ran 1.8–3.4 s (docs/scans.md, Speed: 1.8–1.9 s alone).
START_SECONDS = 3.0


@pytest.mark.slow
def test_a_10000_cylinder_scan_loads_converts_and_starts_in_3_s(tmp_path):
    from treedyn_core.simulation import Simulation

    raw = {"tree": {"generator": {"trunk": {"length": 20.0, "radius": 0.5, "segments": 20},
                                  "levels": 6, "children": 4, "segments": 2}}}
    table = scan_tables.cylinder_table(build_tree(validate(raw, "<test>")))
    assert len(table) >= 10000
    path = tmp_path / "big.mat"
    scan_tables.write_mat_struct(path, table)
    Simulation(load_preset(path)).step(1)   # kernels compiled and cached (warm)
    path.touch()   # a new modification time: converted anew, not from the cache
    os.utime(path, ns=(1, 1))
    start = time.process_time()
    Simulation(load_preset(path)).step(1)
    assert time.process_time() - start < START_SECONDS


# The issue: `modes` and `pull --release` agree on a scanned tree's frequency within 2 %.
RELEASE_RTOL = 0.02


@pytest.mark.slow
def test_pull_and_release_of_a_scan_sways_at_its_lowest_mode(tmp_path, generated):
    from treedyn_core.analysis.pull import pull
    from treedyn_core.simulation import Simulation

    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    data = scan_data(path, species="acer_pseudoplatanus", leafless=True)
    result = pull(Simulation.from_data(data), 4.0, release=True)   # half the 8 m stem
    assert result.frequency_hz == pytest.approx(sway(data), rel=RELEASE_RTOL)


def test_a_scans_pull_reads_the_root_plates_tilt(tmp_path, generated):
    """The stem-base inclination of a scan on its species' root plate is the plate's tilt, the
    base moment over the plate's stiffness (the root joint holds the plate in series with the
    stem's lowest half limb), not the lowest limb's, which adds the stem's bending."""
    from treedyn_core.analysis.pull import pull
    from treedyn_core.model.scan import scan_limbs
    from treedyn_core.simulation import Simulation

    path = tmp_path / "t.mat"
    scan_tables.write_mat_struct(path, scan_tables.cylinder_table(generated[1]))
    data = scan_data(path, species="acer_pseudoplatanus", leafless=True)
    plate = scan_limbs(data["tree"]["scan"], data).root_stiffness
    sim = Simulation.from_data(data)
    result = pull(sim, 4.0, force=1000.0)
    assert math.radians(result.base_inclination_deg) == pytest.approx(
        result.base_moment_Nm / plate, rel=1e-9)
    assert float(sim.tree.stiffness[0, 0, 0]) < 0.99 * plate   # the limb is in series
