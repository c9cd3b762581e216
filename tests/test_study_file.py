"""Study files: axes expanded as written, every value checked like --set, bad files refused with
one line, exit 2 and no output folder."""

import pytest

from treedyn_core.cli import main
from treedyn_core.errors import TreedynError
from treedyn_core.studies.study_file import load_study, run_key

GOOD = """\
study: tiny
preset: two_limbs
duration: 0.5
grid:
  wind.speed: {from: 5, to: 40, step: 2.5}
  wind.seed: [1, 2, 3]
"""


def _write(tmp_path, text, name="study.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_grid_is_every_combination_with_both_ends(tmp_path):
    study = load_study(_write(tmp_path, GOOD))
    speeds = [5 + 2.5 * i for i in range(15)]
    assert study.axes == ["wind.speed", "wind.seed"]
    assert study.runs == [{"wind.speed": u, "wind.seed": s} for u in speeds for s in (1, 2, 3)]
    assert len({run_key(run) for run in study.runs}) == 45


def test_samples_are_reproducible_within_bounds_and_typed(tmp_path):
    text = GOOD + ("samples:\n  count: 7\n  seed: 3\n  axes:\n"
                   "    tuning.stiffness_scale: {from: 0.5, to: 2}\n"
                   "    wind.modes: {from: 8, to: 16}\n"
                   "    wind.direction_deg: [0, 90]\n")
    first = load_study(_write(tmp_path, text))
    again = load_study(_write(tmp_path, text, "again.yaml"))
    other = load_study(_write(tmp_path, text.replace("seed: 3", "seed: 4"), "other.yaml"))
    assert first.runs == again.runs and first.runs != other.runs
    assert len(first.runs) == 45 * 7
    draws = first.runs[:7]
    assert all(0.5 <= d["tuning.stiffness_scale"] <= 2 for d in draws)
    assert all(isinstance(d["wind.modes"], int) and 8 <= d["wind.modes"] <= 16 for d in draws)
    assert {d["wind.direction_deg"] for d in first.runs} <= {0, 90}


@pytest.mark.parametrize("change, expected", [
    (("wind.speed:", "wind.sped:"), "unknown key 'wind.sped' (did you mean 'wind.speed'?)"),
    (("[1, 2, 3]", "[]"), "grid.wind.seed: empty axis"),
    (("to: 40", "to: 120"), "grid.wind.speed: wind.speed: must be"),
    (("step: 2.5", "step: 0"), "grid.wind.speed: step must be > 0"),
    (("preset: two_limbs", "preset: no_such_tree"), "preset: no_such_tree: no such file"),
    (("duration: 0.5", "duration: -1"), "duration: must be a finite number > 0"),
    (("grid:", "grids:"), "grids: unknown key"),
])
def test_bad_study_file_is_one_line_exit_2_and_no_folder(tmp_path, capsys, change, expected):
    path = _write(tmp_path, GOOD.replace(*change))
    out = tmp_path / "out"
    assert main(["study", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("treedyn: error: study.yaml"), err
    assert expected in lines[0], lines[0]
    assert "Traceback" not in err
    assert not out.exists()


def test_value_out_of_range_names_its_line(tmp_path):
    with pytest.raises(TreedynError, match=r"^study.yaml:6: grid.wind.seed: .*must be >= 0"):
        load_study(_write(tmp_path, GOOD.replace("[1, 2, 3]", "[1, -2]")))


def test_fixed_overrides_are_checked_and_change_the_fingerprint(tmp_path):
    base = load_study(_write(tmp_path, GOOD))
    strong = load_study(_write(tmp_path, GOOD + "set:\n  material.modulus_of_rupture: 5.0e7\n",
                               "strong.yaml"))
    assert strong.base_data["material"]["modulus_of_rupture"] == 5.0e7
    assert base.fingerprint() != strong.fingerprint()
    with pytest.raises(TreedynError, match="set.material.modulus_of_rupture: .*must be > 0"):
        load_study(_write(tmp_path, GOOD + "set:\n  material.modulus_of_rupture: -1\n", "bad.yaml"))


def test_fixed_species_and_size_make_that_tree_together(tmp_path):
    # One --set line: the species, its height and DBH each alone leave the tree incomplete.
    size = ("set:\n  tree.generator.species: quercus_rubra\n  tree.generator.height: 12\n"
            "  tree.generator.dbh: 0.3\n")
    sapling = GOOD.replace("preset: two_limbs", "preset: sapling")
    study = load_study(_write(tmp_path, sapling + size))
    assert study.base_data["tree"]["generator"]["trunk"]["length"] == 12.0
    with pytest.raises(TreedynError, match=r"^study.yaml:9: set.tree.generator.height: "
                                           r"tree.generator.dbh: required with species"):
        load_study(_write(tmp_path, sapling + size.replace("  tree.generator.dbh: 0.3\n", "")))

