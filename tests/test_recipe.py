"""Save As keeps the recipe (treedyn_core/model/recipe.py, docs/design.md §6.6): the file as written,
with only the changed keys; reloading it gives the same validated preset, hence the same run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from treedyn_core.errors import PresetError
from treedyn_core.dynamics.expand import expand_preset
from treedyn_core.model.preset import apply_overrides, load_preset, parse_preset
from treedyn_core.model.recipe import recipe, save_recipe
from treedyn_core.simulation import Simulation
from treedyn_core.dynamics.static_model import build_tree

# What the app's sliders and choices change, as key paths (docs/design.md §9).
SETTINGS = {"wind.speed": 12.5, "wind.direction_deg": 135.0,
            "wind.turbulence_intensity": 0.35, "tuning.stiffness_scale": 2.5,
            "tuning.damping_scale": 0.4, "simulation.model": "seed"}

EXPLICIT = """\
version: 1
name: Two limbs
tree:
  limbs:
    - {name: A, parent: null, length: 1.0, stiffness: 200}
    - {name: B, parent: A, length: 0.8, radius: 0.03, rest_rotation_deg: [30, 0, 0], stiffness: 80}
wind:
  speed: 3.0
"""


def overridden(preset, settings):
    """The independent route to the same preset: the original data with `treedyn run --set`
    style assignments."""
    return apply_overrides(preset.data, [f"{key}={value}" for key, value in settings.items()])


@pytest.mark.parametrize("name", ["young_oak", "conifer", "sapling"])
def test_saved_recipe_is_the_file_plus_the_changed_keys(name, tmp_path):
    preset = load_preset(name)
    path = tmp_path / f"{name}_tuned.yaml"
    written = save_recipe(preset, path, SETTINGS)
    reread = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert reread == written
    # The tree is the author's: the same generator (or species) keys, nothing derived added.
    assert reread["tree"] == preset.raw["tree"]
    assert set(reread) == set(preset.raw) | {key.split(".")[0] for key in SETTINGS}
    for section in ("wind", "simulation", "tuning"):
        original = preset.raw.get(section) or {}
        changed = {key.split(".")[1] for key in SETTINGS if key.startswith(section + ".")}
        assert set(reread[section]) == set(original) | changed
        for key, value in reread[section].items():
            assert value == (SETTINGS.get(f"{section}.{key}", original.get(key)))
    # The same preset, hence the same run, as the original with the settings assigned.
    assert load_preset(path).data == overridden(preset, SETTINGS)
    # Far smaller than the tree written out limb by limb.
    expanded = tmp_path / "expanded.yaml"
    save_recipe(dataclasses.replace(preset, data=expand_preset(preset)), expanded)
    assert path.stat().st_size * 10 < expanded.stat().st_size


def test_unchanged_preset_saves_its_own_mapping(tmp_path):
    preset = load_preset("young_oak")
    assert recipe(preset) == preset.raw
    assert recipe(preset, {"wind.speed": preset.data["wind"]["speed"]}) == preset.raw


def test_explicit_limbs_are_saved_as_listed(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(EXPLICIT, encoding="utf-8")
    preset = load_preset(path)
    out = tmp_path / "two_tuned.yaml"
    save_recipe(preset, out, {"tuning.stiffness_scale": 0.5})
    reread = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert reread["tree"]["limbs"] == preset.raw["tree"]["limbs"]
    assert reread["wind"] == {"speed": 3.0} and reread["tuning"] == {"stiffness_scale": 0.5}
    tree_a, tree_b = build_tree(preset.data), build_tree(load_preset(out).data)
    for field in ("parent", "mass", "stiffness", "damping", "rest_C_rel", "base_offset"):
        np.testing.assert_array_equal(getattr(tree_a, field), getattr(tree_b, field))


def test_overrides_beyond_the_settings_are_kept(tmp_path):
    """A preset whose data was changed after reading (`--set`) saves those changes too."""
    preset = load_preset("sapling")
    changed = dataclasses.replace(preset, data=apply_overrides(
        preset.data, ["material.density=650", "tree.generator.seed=5"]))
    data = recipe(changed)
    assert data["material"]["density"] == 650 and data["tree"]["generator"]["seed"] == 5
    assert parse_preset(yaml.safe_dump(data)).data == changed.data


def test_reopened_recipe_runs_the_same(tmp_path):
    """Stepping the saved file's simulation and the original's with the settings assigned
    gives bit-identical states (the same validated preset; deterministic steps)."""
    preset = load_preset("sapling")
    settings = {"wind.speed": 9.0, "tuning.stiffness_scale": 1.7}
    path = tmp_path / "sapling_tuned.yaml"
    save_recipe(preset, path, settings)
    reference = Simulation.from_data(overridden(preset, settings))
    reopened = Simulation(load_preset(path))
    reference.step(60)
    reopened.step(60)
    np.testing.assert_array_equal(reopened.q, reference.q)
    np.testing.assert_array_equal(reopened.v, reference.v)


def test_invalid_setting_is_refused_and_nothing_written(tmp_path):
    path = tmp_path / "bad.yaml"
    with pytest.raises(PresetError, match="wind.speed"):
        save_recipe(load_preset("sapling"), path, {"wind.speed": -4.0})
    assert not path.exists() and not list(tmp_path.iterdir())
