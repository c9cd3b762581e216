"""Tests of `treedyn_core.model.preset`: reading, validation messages, saving, overrides.

Error cases are YAML texts with the offending line marked ``# <-``; the test
derives the expected line number from the marker, so the texts can be edited
without recounting lines.
"""

from __future__ import annotations

import builtins
import errno
import math
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from treedyn_core.model import preset as preset_module
from treedyn_core.model import schema, species
from treedyn_core.errors import PresetError, TreedynError
from treedyn_core.model.preset import (HEADER, Preset, apply_overrides, load_preset, parse_preset,
                                       resolve_preset, save_preset, shipped_presets, validate)

TWO_LIMBS = """\
version: 1
name: Two limbs
tree:
  limbs:
    - name: A
      parent: null
      length: 1.0
      stiffness: 200
    - {name: B, parent: A, length: 0.8, radius: 0.03, rest_rotation_deg: [30, 0, 0], stiffness: 80, damping: 0.4}
material:
  youngs_modulus: 1e10
initial_state:
  - {limb: B, rotation_deg: [0, 20, 0]}
"""

GENERATED = """\
# a small generated tree
name: Sapling
tree:
  generator:
    seed: 3
    trunk: {length: 2.0, segments: 2}
    levels: 2
    children: [3, 2]
wind:
  speed: 8            # m/s
  turbulence_intensity: 0.3
simulation:
  integrator: rk4
  gravity: [0, 0, -9.81]
"""

ROOT = "{name: A}"


def limbs(*entries: str, after: str = "") -> str:
    """A preset text whose tree is the given limb entries (one flow mapping per line)."""
    return "tree:\n  limbs:\n" + "".join(f"    - {entry}\n" for entry in entries) + after


def marked_line(text: str) -> int:
    """The 1-based line carrying the ``# <-`` marker."""
    lines = [i for i, line in enumerate(text.splitlines(), 1) if "# <-" in line]
    assert len(lines) == 1, "each error case marks exactly one line"
    return lines[0]


def write(folder: Path, text: str | bytes, name: str = "bad.yaml") -> Path:
    path = folder / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def load_error(path) -> str:
    """The message of the PresetError loading `path` raises, checked to be one line."""
    with pytest.raises(PresetError) as info:
        load_preset(path)
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    return message


def typed(value):
    """`value` with every scalar paired with its type, so that 1 != 1.0 when compared."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


# --------------------------------------------------------------------------- error messages

def case(id_: str, text: str, expected: str):
    return pytest.param(text, expected, id=id_)


ERROR_CASES = [
    # YAML itself
    case("syntax", "wind:\n  speed: 6: 7  # <-\n",
         r"YAML syntax error: mapping values are not allowed"),
    case("syntax-tab", "wind:\n\tspeed: 3  # <-\n", r"YAML syntax error: found character"),
    case("two-documents", "name: a\n---  # <-\nname: b\n", r"YAML syntax error: .*document"),
    case("top-level-list", "- a  # <-\n- b\n", r"the top level must be a mapping"),
    case("top-level-scalar", "\n\njust words  # <-\n", r"the top level must be a mapping"),
    case("duplicate-key", "wind:\n  speed: 3\n  speed: 4  # <-\n" + limbs(ROOT),
         r"wind\.speed: duplicate key \(first at line 2\)"),
    case("number-key", "wind:\n  1: 3  # <-\n", r"wind: a key must be a name \(text\), got 1"),
    case("list-key", "wind:\n  ? [a]  # <-\n  : 3\n", r"wind: a key must be a name, not a list"),
    case("merge-key", limbs("{name: A, <<: {length: 2}}  # <-"),
         r"tree\.limbs\[0\]: YAML merge keys \(<<\) are not supported"),
    case("unknown-tag", "wind:\n  speed: !foo 3  # <-\n",
         r"wind\.speed: cannot read the value: .*!foo"),
    case("bad-date", "name: 2024-13-45  # <-\n", r"name: cannot read the value: month must be"),
    case("recursive-alias", "wind: &w  # <-\n  speed: *w\n",
         r"wind\.speed: a YAML alias refers to itself"),
    case("control-character", "name: a\x01b  # <-\n", r"not a text file: character '\\x01'"),
    # unknown keys, at every level
    case("unknown-top", limbs(ROOT, after="colour: red  # <-\n"),
         r"colour: unknown key \(allowed: version, name, description, tree, material,"),
    case("unknown-wind", limbs(ROOT, after="wind:\n  sped: 3  # <-\n"),
         r"wind\.sped: unknown key \(did you mean 'speed'\?\)"),
    case("unknown-limb", limbs(ROOT, "{name: B, parent: A, lenght: 2}  # <-"),
         r"tree\.limbs\[1\]\.lenght: unknown key \(did you mean 'length'\?\)"),
    case("unknown-tree", "tree:\n  limb: []  # <-\n",
         r"tree\.limb: unknown key \(did you mean 'limbs'\?\)"),
    case("unknown-generator", "tree:\n  generator:\n    level: 3  # <-\n",
         r"tree\.generator\.level: unknown key \(did you mean 'levels'\?\)"),
    case("unknown-trunk", "tree:\n  generator:\n    trunk: {lenght: 3}  # <-\n",
         r"tree\.generator\.trunk\.lenght: unknown key \(did you mean 'length'\?\)"),
    case("unknown-initial-state",
     limbs(ROOT, after="initial_state:\n  - {limb: A, rotation: [0, 0, 1]}  # <-\n"),
         r"initial_state\[0\]\.rotation: unknown key \(did you mean 'rotation_deg'\?\)"),
    case("unknown-material", limbs(ROOT, after="material:\n  young_modulus: 1  # <-\n"),
         r"material\.young_modulus: unknown key \(did you mean 'youngs_modulus'\?\)"),
    case("unknown-simulation", limbs(ROOT, after="simulation:\n  integrater: rk4  # <-\n"),
         r"simulation\.integrater: unknown key \(did you mean 'integrator'\?\)"),
    case("unknown-tuning", limbs(ROOT, after="tuning:\n  zoom: 2  # <-\n"),
         r"tuning\.zoom: unknown key \(allowed: stiffness_scale, damping_scale\)"),
    # wrong types
    case("text-for-number", limbs(ROOT, after="wind:\n  speed: fast  # <-\n"),
         r"wind\.speed: expected a number, got 'fast'$"),
    case("bool-for-number", limbs(ROOT, after="wind:\n  speed: true  # <-\n"),
         r"wind\.speed: expected a number, got true$"),
    case("bool-in-vector", limbs(ROOT, after="root_position: [0, true, 0]  # <-\n"),
         r"root_position: expected a list of 3 numbers, got \[0, true, 0\]$"),
    case("float-for-int", limbs(ROOT, after="wind:\n  modes: 3.5  # <-\n"),
         r"wind\.modes: expected an integer, got 3\.5$"),
    case("integral-float-for-int", limbs(ROOT, after="wind:\n  modes: 64.0  # <-\n"),
         r"wind\.modes: expected an integer, got 64\.0$"),
    case("bool-for-int", limbs(ROOT, after="wind:\n  seed: false  # <-\n"),
         r"wind\.seed: expected an integer, got false$"),
    case("int-for-bool", limbs(ROOT, after="simulation:\n  prestress: 1  # <-\n"),
         r"simulation\.prestress: expected true or false, got 1$"),
    case("number-for-text", limbs(ROOT, after="name: 12  # <-\n"),
         r"name: expected a string, got 12$"),
    case("null-for-text", limbs(ROOT, after="description:  # <-\n"),
         r"description: expected a string, got null$"),
    case("text-for-nullable", limbs("{name: A, mass: heavy}  # <-"),
         r"tree\.limbs\[0\]\.mass: expected a number or null, got 'heavy'$"),
    case("enum-integrator", limbs(ROOT, after="simulation:\n  integrator: euler  # <-\n"),
         r"simulation\.integrator: must be one of implicit, galpha, rk4, dop853; got 'euler'$"),
    case("enum-model", limbs(ROOT, after="simulation:\n  model: 3  # <-\n"),
         r"simulation\.model: must be one of articulated, seed; got 3$"),
    case("scalar-for-vector", limbs(ROOT, after="simulation:\n  gravity: -9.81  # <-\n"),
         r"simulation\.gravity: expected a list of 3 numbers, got -9\.81$"),
    case("vector-of-2", limbs(ROOT, after="root_position: [0, 0]  # <-\n"),
         r"root_position: expected a list of 3 numbers, got \[0, 0\]$"),
    case("vector-of-4", limbs("{name: A, direction: [0, 0, 1, 0]}  # <-"),
         r"tree\.limbs\[0\]\.direction: expected a list of 3 numbers, got \[0, 0, 1, 0\]$"),
    case("stiffness-vector-of-2", limbs("{name: A, stiffness: [1, 2]}  # <-"),
         r"tree\.limbs\[0\]\.stiffness: expected a number or a list of 3 numbers or null, got"),
    case("section-not-mapping", limbs(ROOT, after="wind: 5  # <-\n"),
         r"wind: expected a mapping, got 5$"),
    case("limbs-mapping", "tree:\n  limbs: {name: A}  # <-\n",
         r"tree\.limbs: expected a non-empty list of limbs, got a mapping$"),
    case("limbs-empty", "tree:\n  limbs: []  # <-\n",
         r"tree\.limbs: expected a non-empty list of limbs, got \[\]$"),
    case("limbs-null", "tree:\n  limbs:  # <-\n",
         r"tree\.limbs: expected a non-empty list of limbs, got null$"),
    case("limb-not-mapping", limbs(ROOT, "B  # <-"),
         r"tree\.limbs\[1\]: expected a mapping \(one limb\), got 'B'$"),
    case("initial-state-mapping", limbs(ROOT, after="initial_state: {limb: A}  # <-\n"),
         r"initial_state: expected a list of entries, got a mapping$"),
    case("initial-state-entry-text", limbs(ROOT, after="initial_state:\n  - A  # <-\n"),
         r"initial_state\[0\]: expected a mapping \(one entry\), got 'A'$"),
    # non-finite numbers
    case("nan", limbs(ROOT, after="wind:\n  speed: .nan  # <-\n"),
         r"wind\.speed: must be finite, got \.nan$"),
    case("inf", limbs(ROOT, after="simulation:\n  dt: .inf  # <-\n"),
         r"simulation\.dt: must be finite, got \.inf$"),
    case("minus-inf-in-vector", limbs(ROOT, after="root_position: [0, -.inf, 0]  # <-\n"),
         r"root_position: must be finite, got \[0, -\.inf, 0\]$"),
    case("nan-stiffness", limbs("{name: A, stiffness: [1, .nan, 1]}  # <-"),
         r"tree\.limbs\[0\]\.stiffness: must be finite"),
    case("int-too-large-for-float",
     limbs(ROOT, after="wind:\n  direction_deg: 1" + "0" * 400 + "  # <-\n"),
         r"wind\.direction_deg: must be finite, got 1000"),
    # sizes
    case("zero-length", limbs("{name: A, length: 0}  # <-"),
         r"tree\.limbs\[0\]\.length: must be > 0 m and <= 1000 m, got 0$"),
    case("negative-length", limbs(ROOT, "{name: B, parent: A}", "{name: C, parent: B}",
                                  "{name: D, parent: C, length: -1}  # <-"),
         r"tree\.limbs\[3\]\.length: must be > 0 m and <= 1000 m, got -1$"),
    case("zero-radius", limbs("{name: A, radius: 0.0}  # <-"),
         r"tree\.limbs\[0\]\.radius: must be > 0 m and <= 100 m, got 0\.0$"),
    case("negative-mass", limbs("{name: A, mass: -2}  # <-"),
         r"tree\.limbs\[0\]\.mass: must be > 0 kg and <= 1e\+12 kg, got -2$"),
    case("zero-density", limbs(ROOT, after="material:\n  density: 0  # <-\n"),
         r"material\.density: must be > 0 kg/m³ and <= 100000 kg/m³, got 0$"),
    case("negative-trunk", "tree:\n  generator:\n    trunk:\n      length: -1  # <-\n",
         r"tree\.generator\.trunk\.length: must be > 0 m and <= 1000 m, got -1$"),
    case("zero-inertia", limbs("{name: A, inertia: [0, 1, 1]}  # <-"),
         r"tree\.limbs\[0\]\.inertia: each element must be > 0 kg m² and <= 1e\+18 kg m², got \[0, 1, 1\]$"),
    case("inertia-triangle", limbs("{name: A, inertia: [1, 0.1, 0.1]}  # <-"),
         r"tree\.limbs\[0\]\.inertia: principal moments must satisfy the triangle inequality"),
    case("negative-stiffness", limbs("{name: A, stiffness: -5}  # <-"),
         r"tree\.limbs\[0\]\.stiffness: must be >= 0 N m/rad and <= 1e\+20 N m/rad, got -5$"),
    case("negative-damping-element", limbs("{name: A, damping: [1, -0.1, 1]}  # <-"),
         r"tree\.limbs\[0\]\.damping: each element must be >= 0 N m s/rad and <= 1e\+20 N m s/rad, got \[1, -0\.1, 1\]$"),
    case("zero-direction", limbs("{name: A, direction: [0, 0.0, 0]}  # <-"),
         r"tree\.limbs\[0\]\.direction: must not be the zero vector"),
    case("attach-above-1", limbs(ROOT, "{name: B, parent: A, attach: 1.5}  # <-"),
         r"tree\.limbs\[1\]\.attach: must be >= 0 and <= 1, got 1\.5$"),
    case("attach-negative", limbs(ROOT, "{name: B, parent: A, attach: -0.1}  # <-"),
         r"tree\.limbs\[1\]\.attach: must be >= 0 and <= 1, got -0\.1$"),
    # topology
    case("no-such-parent", limbs(ROOT, "{name: B, parent: X}  # <-"),
         r"tree\.limbs\[1\]\.parent: no limb named 'X'$"),
    case("parent-near-miss", limbs("{name: Trunk}", "{name: B, parent: trunk}  # <-"),
         r"tree\.limbs\[1\]\.parent: no limb named 'trunk' \(did you mean 'Trunk'\?\)$"),
    case("duplicate-name", limbs(ROOT, "{name: B, parent: A}", "{name: B, parent: A}  # <-"),
         r"tree\.limbs\[2\]\.name: duplicate limb name 'B' \(also tree\.limbs\[1\]\)$"),
    case("cycle", limbs(ROOT, "{name: B, parent: C}  # <-", "{name: C, parent: B}"),
         r"tree\.limbs\[1\]\.parent: parent cycle 'B' -> 'C' -> 'B' \(no root among them\)$"),
    case("own-parent", limbs(ROOT, "{name: B, parent: B}  # <-"),
         r"tree\.limbs\[1\]\.parent: parent cycle 'B' -> 'B'"),
    case("no-root",
     "tree:\n  limbs:  # <-\n    - {name: A, parent: B}\n    - {name: B, parent: A}\n",
         r"tree\.limbs: no root limb: exactly one limb must have parent: null$"),
    case("two-roots", limbs(ROOT, "{name: B, parent: A}", "{name: E, parent: null}  # <-"),
         r"tree\.limbs\[2\]\.parent: 2 root limbs \('A', 'E'\):"
         r" exactly one limb may have parent: null$"),
    case("two-roots-parent-omitted", limbs(ROOT, "{name: B, parent: A}", "{name: E}  # <-"),
         r"tree\.limbs\[2\]\.parent: 2 root limbs \('A', 'E'\)"),
    case("initial-state-unknown-limb", limbs(ROOT, after="initial_state:\n  - {limb: Z}  # <-\n"),
         r"initial_state\[0\]\.limb: no limb named 'Z'$"),
    case("initial-state-twice",
     limbs(ROOT, after="initial_state:\n  - {limb: A}\n  - {limb: A}  # <-\n"),
         r"initial_state\[1\]\.limb: limb 'A' already has an entry \(initial_state\[0\]\)$"),
    case("limbs-and-generator", "tree:  # <-\n  limbs: [{name: A}]\n  generator: {}\n",
         r"tree: give exactly one of 'limbs' .* and 'generator' .*, not both$"),
    case("neither-limbs-nor-generator", "name: x\ntree: {}  # <-\n",
         r"tree: give exactly one of 'limbs'"),
    case("missing-limb-name", limbs(ROOT, "{parent: A, length: 2}  # <-"),
         r"tree\.limbs\[1\]\.name: missing required key$"),
    case("missing-limb-name-block", "tree:\n  limbs:\n    - parent: null  # <-\n      length: 2\n",
         r"tree\.limbs\[0\]\.name: missing required key$"),
    case("missing-initial-state-limb",
     limbs(ROOT, after="initial_state:\n  - {rotation_deg: [1, 0, 0]}  # <-\n"),
         r"initial_state\[0\]\.limb: missing required key$"),
    # version
    case("version-2", "version: 2  # <-\n" + limbs(ROOT),
         r"version: unsupported format version 2 \(this treedyn reads version 1\)$"),
    case("version-2-new-keys", "fancy: 1\nversion: 2  # <-\n",
         r"version: unsupported format version 2 \(this treedyn reads version 1\)$"),
    case("version-text", "version: '1'  # <-\n" + limbs(ROOT),
         r"version: expected an integer, got '1'$"),
    # ranges of simulation, wind, tuning, material, generator
    case("dt-zero", limbs(ROOT, after="simulation:\n  dt: 0  # <-\n"),
         r"simulation\.dt: must be >= 1e-09 s and <= 0\.1 s, got 0$"),
    case("dt-large", limbs(ROOT, after="simulation:\n  dt: 0.5  # <-\n"),
         r"simulation\.dt: must be >= 1e-09 s and <= 0\.1 s, got 0\.5$"),
    case("theta-half", limbs(ROOT, after="simulation:\n  implicit_theta: 0.5  # <-\n"),
         r"simulation\.implicit_theta: must be > 0\.5 and <= 1, got 0\.5$"),
    case("wind-negative", limbs(ROOT, after="wind:\n  speed: -1  # <-\n"),
         r"wind\.speed: must be >= 0 m/s and <= 60 m/s, got -1$"),
    case("turbulence", limbs(ROOT, after="wind:\n  turbulence_intensity: 1.5  # <-\n"),
         r"wind\.turbulence_intensity: must be >= 0 and <= 1, got 1\.5$"),
    case("vogel", limbs(ROOT, after="wind:\n  vogel_exponent: 0.5  # <-\n"),
         r"wind\.vogel_exponent: must be >= -1 and <= 0, got 0\.5$"),
    case("modes-zero", limbs(ROOT, after="wind:\n  modes: 0  # <-\n"),
         r"wind\.modes: must be >= 1 and <= 4096, got 0$"),
    case("stiffness-scale-zero", limbs(ROOT, after="tuning:\n  stiffness_scale: 0  # <-\n"),
         r"tuning\.stiffness_scale: must be > 0 and <= 1000, got 0$"),
    case("damping-scale-negative", limbs(ROOT, after="tuning:\n  damping_scale: -1  # <-\n"),
         r"tuning\.damping_scale: must be >= 0 and <= 1000, got -1$"),
    case("poisson", limbs(ROOT, after="material:\n  poisson_ratio: -0.5  # <-\n"),
         r"material\.poisson_ratio: must be >= 0 and <= 0\.5, got -0\.5$"),
    case("generator-seed", "tree:\n  generator:\n    seed: -1  # <-\n",
         r"tree\.generator\.seed: must be >= 0, got -1$"),
    case("generator-levels-float", "tree:\n  generator:\n    levels: 1.5  # <-\n",
         r"tree\.generator\.levels: expected an integer, got 1\.5$"),
    case("children-empty", "tree:\n  generator:\n    children: []  # <-\n",
         r"tree\.generator\.children: expected an integer or a"
         r" non-empty list of integers, got \[\]$"),
    case("children-element-zero", "tree:\n  generator:\n    children: [3, 0]  # <-\n",
         r"tree\.generator\.children: each element must be >= 1, got \[3, 0\]$"),
    case("children-float-element", "tree:\n  generator:\n    children: [2.5]  # <-\n",
         r"tree\.generator\.children: expected an integer or a"
         r" non-empty list of integers, got \[2\.5\]$"),
    case("children-text", "tree:\n  generator:\n    children: many  # <-\n",
         r"tree\.generator\.children: expected an integer or a"
         r" non-empty list of integers, got 'many'$"),
    case("segments-zero", "tree:\n  generator:\n    segments: 0  # <-\n",
         r"tree\.generator\.segments: must be >= 1, got 0$"),
    case("branch-angle", "tree:\n  generator:\n    branch_angle_deg: 200  # <-\n",
         r"tree\.generator\.branch_angle_deg: must be >= 0 deg and <= 180 deg, got 200$"),
    # prestress against explicit spring rest rotations (docs/design.md §6)
    case("prestress-default-with-spring-rest",
     limbs(ROOT, "{name: B, parent: A, spring_rest_rotation_deg: [0, 0, 0]}  # <-"),
         r"tree\.limbs\[1\]\.spring_rest_rotation_deg: must be null"
         r" when simulation\.prestress is true"),
    case("prestress-with-spring-rest-block",
         "tree:\n  limbs:\n    - name: A\n      spring_rest_rotation_deg: [1, 0, 0]  # <-\n"
         "simulation:\n  prestress: true\n",
         r"tree\.limbs\[0\]\.spring_rest_rotation_deg: must be null"
         r" when simulation\.prestress is true"),
]


@pytest.mark.parametrize("text, expected", ERROR_CASES)
def test_error_names_file_line_and_key_path(tmp_path, text, expected):
    line = marked_line(text)
    message = load_error(write(tmp_path, text))
    assert re.match(rf"bad\.yaml:{line}: {expected}", message), message


@pytest.mark.parametrize("content, expected", [
    pytest.param("", r"bad\.yaml: empty file \(no YAML content\)$", id="empty"),
    pytest.param("\n   \n", r"bad\.yaml: empty file \(no YAML content\)$", id="blank"),
    pytest.param("# only a comment\n", r"bad\.yaml: empty file \(no YAML content\)$", id="comments"),
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
                 r"bad\.yaml: not a text file \(it contains NUL bytes\)$", id="binary"),
    pytest.param(b"name: ok\ndescription: caf\xe9\n",
                 r"bad\.yaml:2: not a UTF-8 text file \(byte 0xe9\)$", id="latin-1"),
    pytest.param("name: x\n", r"bad\.yaml: tree: give exactly one of 'limbs'", id="tree-missing"),
    # libyaml's C parser has its own depth limit and reports it as a syntax error.
    pytest.param("name: " + "[" * 5000 + "]" * 5000 + "\n",
                 r"bad\.yaml(: YAML nested too deeply|:1: YAML syntax error: exceeded maximum "
                 r"nesting depth|:1: YAML nested deeper than 64 levels)$", id="deep"),
])
def test_error_without_a_line(tmp_path, content, expected):
    message = load_error(write(tmp_path, content))
    assert re.match(expected, message), message


def test_missing_file_and_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(preset_module, "_shipped_folder", lambda: tmp_path / "no_presets")
    missing = tmp_path / "nope.yaml"
    message = load_error(missing)
    assert message.startswith(f"{missing}: no such file, and no shipped preset of that name")
    assert "shipped presets: none installed" in message
    assert load_error(tmp_path) == f"{tmp_path}: is a folder, not a preset file"


def test_unreadable_file(tmp_path, monkeypatch):
    path = write(tmp_path, TWO_LIMBS, "locked.yaml")

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(os, "open", refuse)
    assert load_error(path) == f"{path}: cannot read the file: Permission denied"


def test_validate_without_marks_leaves_the_line_out():
    raw = yaml.safe_load(limbs("{name: A, length: -1}"))
    with pytest.raises(PresetError,
                       match=r"^raw: tree\.limbs\[0\]\.length: must be > 0 m and <= 1000 m, got -1$"):
        validate(raw, "raw")
    with pytest.raises(PresetError,
                       match=r"^raw: the top level must be a mapping of keys, got \[1, 2\]$"):
        validate([1, 2], "raw")


def test_parse_preset_names_string_sources():
    with pytest.raises(PresetError, match=r"^<string>:3: tree\.limbs\[0\]\.length: must be > 0 m"):
        parse_preset(limbs("{name: A, length: 0}"))


# --------------------------------------------------------------------------- valid presets

def test_two_limbs_loads_complete_in_schema_order(tmp_path):
    p = load_preset(write(tmp_path, TWO_LIMBS, "two.yaml"))
    assert list(p.data) == list(schema.PRESET)
    assert list(p.data["tree"]) == ["limbs"]
    for table in ("material", "simulation", "wind", "tuning"):
        assert list(p.data[table]) == list(getattr(schema, table.upper()))
    a, b = p.data["tree"]["limbs"]
    assert list(a) == list(schema.LIMB) and list(b) == list(schema.LIMB)
    assert typed(a["stiffness"]) == ("float", 200.0)
    assert typed(b["rest_rotation_deg"]) == typed([30.0, 0.0, 0.0])
    assert a["mass"] is None and a["inertia"] is None and b["spring_rest_rotation_deg"] is None
    assert typed(p.data["material"]["youngs_modulus"]) == ("float", 1e10)  # written 1e10
    assert typed(p.data["wind"]["modes"]) == ("int", 64)
    assert p.data["initial_state"] == [{"limb": "B", "rotation_deg": [0.0, 20.0, 0.0],
                                        "angular_velocity": [0.0, 0.0, 0.0]}]
    assert p.name == "Two limbs" and p.path == tmp_path / "two.yaml" and p.filename == "two.yaml"
    assert p.marks["tree.limbs[0].length"] == 7
    assert p.marks["tree.limbs[1]"] == p.marks["tree.limbs[1].stiffness"] == 9
    assert p.marks["initial_state[0].limb"] == 13


def test_generator_gets_every_default():
    data = parse_preset(GENERATED).data
    generator = data["tree"]["generator"]
    assert list(data["tree"]) == ["generator"]
    assert list(generator) == list(schema.GENERATOR)
    assert generator["trunk"] == {"length": 2.0, "radius": 0.12, "segments": 2}
    assert generator["children"] == [3, 2] and generator["segments"] == 2
    assert generator["max_limbs"] == 250000
    assert data["wind"]["speed"] == 8.0 and data["simulation"]["integrator"] == "rk4"


def test_null_sections_mean_all_defaults():
    data = parse_preset("tree:\n  generator:\nwind:\n").data
    assert data["tree"]["generator"]["levels"] == schema.GENERATOR["levels"].default
    assert data["wind"]["speed"] == schema.WIND["speed"].default


def test_name_defaults_to_the_file_stem(tmp_path):
    text = limbs(ROOT)
    assert load_preset(write(tmp_path, text, "my_oak.yaml")).name == "my_oak"
    assert parse_preset(text, "other.yaml").name == "other"
    assert parse_preset(text).name == "Untitled tree"


def test_values_are_kept_as_given():
    data = parse_preset(limbs(
        "{name: A, direction: &up [0, 2, 0], stiffness: 5, damping: [1, 2, 3], "
        "inertia: [2, 1, 1]}",
        "{name: B, parent: A, direction: *up}")).data
    a, b = data["tree"]["limbs"]
    assert a["direction"] == b["direction"] == [0.0, 2.0, 0.0]  # not normalised
    assert a["direction"] is not b["direction"]
    assert typed(a["stiffness"]) == ("float", 5.0)
    assert typed(a["damping"]) == typed([1.0, 2.0, 3.0])
    assert a["inertia"] == [2.0, 1.0, 1.0]  # on the triangle inequality's boundary


@pytest.mark.parametrize("moments, valid", [
    ([2.0, 1.0, 1.0], True),
    ([1.0, 2.0 + 1e-13, 1.0], True),  # within the relative tolerance 1e-12
    ([1.0, 1.0, 2.0 + 1e-9], False),
    ([0.1, 1.0, 0.1], False),
])
def test_inertia_triangle_inequality(moments, valid):
    text = limbs(f"{{name: A, inertia: [{', '.join(map(repr, moments))}]}}")
    if valid:
        assert parse_preset(text).data["tree"]["limbs"][0]["inertia"] == moments
    else:
        with pytest.raises(PresetError,
                           match=r"^<string>:3: tree\.limbs\[0\]\.inertia: principal moments"):
            parse_preset(text)


def test_spring_rest_rotation_without_prestress_and_unknown_limbs_of_generated_trees():
    text = limbs(ROOT, "{name: B, parent: A, spring_rest_rotation_deg: [1, 2, 3]}",
                 after="simulation:\n  prestress: false\n")
    b = parse_preset(text).data["tree"]["limbs"][1]
    assert b["spring_rest_rotation_deg"] == [1.0, 2.0, 3.0]
    generated = parse_preset("tree:\n  generator: {}\ninitial_state:\n  - {limb: b3_2}\n").data
    assert generated["initial_state"][0]["limb"] == "b3_2"


def test_limbs_may_come_before_their_parents():
    data = parse_preset(limbs("{name: C, parent: B}", "{name: B, parent: A}", ROOT)).data
    assert [limb["name"] for limb in data["tree"]["limbs"]] == ["C", "B", "A"]


def test_validate_is_idempotent():
    for text in (TWO_LIMBS, GENERATED):
        data = parse_preset(text).data
        assert typed(validate(data, "again")) == typed(data)


def test_preset_error_points_at_the_line_of_a_key():
    p = parse_preset(TWO_LIMBS, "two.yaml")
    assert str(p.error("tree.limbs[1].stiffness", "too soft")) == \
        "two.yaml:9: tree.limbs[1].stiffness: too soft"
    # a key the file omits: the line of the mapping that holds it
    assert str(p.error("tree.limbs[0].mass", "too light")) == \
        "two.yaml:5: tree.limbs[0].mass: too light"
    assert str(p.error("simulation.dt", "too long")) == "two.yaml: simulation.dt: too long"
    assert isinstance(p.error("x", "y"), PresetError)
    assert str(Preset(p.data).error("wind.speed", "a\nb")) == "<string>: wind.speed: a b"


# --------------------------------------------------------------------------- shipped presets

def test_shipped_presets_lists_the_yaml_files_of_assets():
    folder = Path(str(preset_module.resources.files("treedyn_assets") / "presets"))
    expected = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    found = shipped_presets()
    assert list(found.values()) == sorted(expected, key=lambda path: path.stem)
    assert list(found) == sorted(path.stem for path in expected)


def test_every_shipped_preset_loads_and_saves_to_the_same_data(tmp_path):
    for name, path in shipped_presets().items():
        p = load_preset(name)
        assert p.path == path and p.filename == path.name
        save_preset(p.data, tmp_path / path.name)
        assert typed(load_preset(tmp_path / path.name).data) == typed(p.data), name


def test_load_by_shipped_name(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    write(shipped, TWO_LIMBS, "two_limbs.yaml")
    write(shipped, GENERATED, "sapling.yaml")
    write(shipped, "not a preset", "README.txt")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(preset_module, "_shipped_folder", lambda: shipped)

    assert list(shipped_presets()) == ["sapling", "two_limbs"]
    assert resolve_preset("two_limbs") == shipped / "two_limbs.yaml"
    p = load_preset("two_limbs")
    assert p.name == "Two limbs" and p.path == shipped / "two_limbs.yaml"
    message = load_error("two_limb")
    assert message == ("two_limb: no such file, and no shipped preset of that name "
                       "(did you mean 'two_limbs'? shipped presets: sapling, two_limbs)")
    # an existing file wins over a shipped name
    write(elsewhere, GENERATED.replace("Sapling", "Local"), "two_limbs")
    assert load_preset("two_limbs").name == "Local"


# --------------------------------------------------------------------------- saving

def test_saved_file_is_complete_and_readable(tmp_path):
    data = parse_preset(TWO_LIMBS).data
    path = tmp_path / "out.yaml"
    save_preset(data, path)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert text.startswith(HEADER) and lines[0] == "# treedyn preset, format version 1"
    assert "\nwind:\n  speed: 6.0\n" in text
    assert "\nroot_position: [0.0, 0.0, 0.0]\n" in text
    limb_lines = [line for line in lines if line.lstrip().startswith("- {name:")]
    assert len(limb_lines) == 2
    assert "parent: A" in limb_lines[1] and "rest_rotation_deg: [30.0, 0.0, 0.0]" in limb_lines[1]
    raw = yaml.safe_load(text)
    assert list(raw) == list(schema.PRESET)
    assert list(raw["tree"]["limbs"][0]) == list(schema.LIMB)
    assert typed(load_preset(path).data) == typed(data)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_text_that_looks_like_a_number_stays_text(tmp_path):
    data = parse_preset(limbs("{name: '1e5'}", "{name: '2E-3', parent: '1e5'}",
                              after="name: '1e10'\ndescription: '0x1F'\n")).data
    save_preset(data, tmp_path / "numbers.yaml")
    loaded = load_preset(tmp_path / "numbers.yaml").data
    assert (loaded["name"], loaded["description"]) == ("1e10", "0x1F")
    assert [limb["name"] for limb in loaded["tree"]["limbs"]] == ["1e5", "2E-3"]


def test_save_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "private.yaml"
    save_preset(parse_preset(TWO_LIMBS).data, path)
    path.chmod(0o600)
    save_preset(parse_preset(GENERATED).data, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_preset(path).name == "Sapling"


def test_save_refuses_an_invalid_preset(tmp_path):
    data = parse_preset(TWO_LIMBS).data
    data["tree"]["limbs"][1]["length"] = -1.0
    with pytest.raises(PresetError, match=r"^bad\.yaml: tree\.limbs\[1\]\.length: must be > 0 m"):
        save_preset(data, tmp_path / "bad.yaml")
    assert os.listdir(tmp_path) == []


def test_save_into_a_missing_folder(tmp_path):
    target = tmp_path / "no" / "such" / "p.yaml"
    with pytest.raises(TreedynError,
                       match=rf"^cannot save the preset to {re.escape(str(target))}: "):
        save_preset(parse_preset(TWO_LIMBS).data, target)


def _fail_writes_after_the_header(monkeypatch):
    """Make the temporary file's writes fail half-way with a full disk; returns the calls."""
    real = builtins.open
    calls = []

    def open_temporary(file, mode="r", *args, **kwargs):
        handle = real(file, mode, *args, **kwargs)
        if ".tmp" not in os.fspath(file) or "w" not in mode:
            return handle
        write_through = handle.write

        def write(text):
            calls.append(text)
            if len(calls) > 1:
                write_through(text[: len(text) // 2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return write_through(text)

        handle.write = write
        return handle

    monkeypatch.setattr(builtins, "open", open_temporary)
    return calls


def _raise_oserror(*args, **kwargs):
    raise OSError(errno.EIO, os.strerror(errno.EIO))


def _dump_half_then_fail(data, stream, **kwargs):
    stream.write("version: 1\nname: half")
    raise RuntimeError("emitter exploded")


@pytest.mark.parametrize("failure", ["write", "fsync", "replace", "dump"])
def test_failed_save_leaves_the_previous_file_intact(tmp_path, monkeypatch, failure):
    target = tmp_path / "p.yaml"
    save_preset(parse_preset(TWO_LIMBS).data, target)
    before = target.read_bytes()
    new = parse_preset(GENERATED).data
    calls = None
    if failure == "write":
        calls = _fail_writes_after_the_header(monkeypatch)
    elif failure == "dump":
        monkeypatch.setattr(yaml, "dump", _dump_half_then_fail)
    else:
        monkeypatch.setattr(os, failure, _raise_oserror)

    if failure == "dump":
        with pytest.raises(RuntimeError, match="emitter exploded"):
            save_preset(new, target)
    else:
        with pytest.raises(TreedynError) as info:
            save_preset(new, target)
        message = str(info.value)
        assert message.startswith(f"cannot save the preset to {target}: ")
        assert len(message.splitlines()) == 1
    if calls is not None:
        assert len(calls) == 2  # the failure came half-way, after the header
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["p.yaml"]


# --------------------------------------------------------------------------- overrides

@pytest.mark.parametrize("assignments, key, expected", [
    (["wind.speed=12"], ("wind", "speed"), ("float", 12.0)),
    (["tuning.damping_scale=2", "tuning.damping_scale=3"], ("tuning", "damping_scale"),
     ("float", 3.0)),
    (["simulation.dt=1e-3"], ("simulation", "dt"), ("float", 0.001)),
    (["simulation.integrator=rk4"], ("simulation", "integrator"), ("str", "rk4")),
    (["simulation.prestress=false"], ("simulation", "prestress"), ("bool", False)),
    (["simulation.gravity=[0,0,-1]"], ("simulation", "gravity"), typed([0.0, 0.0, -1.0])),
    (["name=Another tree"], ("name",), ("str", "Another tree")),
    (["wind={speed: 3}"], ("wind", "turbulence_intensity"), ("float", 0.2)),
])
def test_overrides_set_values(assignments, key, expected):
    data = parse_preset(TWO_LIMBS).data
    before = typed(data)
    result = apply_overrides(data, assignments)
    value = result
    for part in key:
        value = value[part]
    assert typed(value) == expected
    assert typed(data) == before  # the input is untouched
    assert list(result) == list(schema.PRESET)


def test_overrides_reach_limbs_and_generator():
    data = parse_preset(TWO_LIMBS).data
    result = apply_overrides(data, ["tree.limbs[1].stiffness=[1, 2, 3]",
                                    "initial_state[0].limb=A"])
    assert result["tree"]["limbs"][1]["stiffness"] == [1.0, 2.0, 3.0]
    assert result["initial_state"][0]["limb"] == "A"
    assert data["tree"]["limbs"][1]["stiffness"] == 80.0
    generated = apply_overrides(parse_preset(GENERATED).data,
                                ["tree.generator.levels=4", "tree.generator.trunk.length=5"])
    assert generated["tree"]["generator"]["levels"] == 4
    assert generated["tree"]["generator"]["trunk"] == {"length": 5.0, "radius": 0.12,
                                                       "segments": 2}
    assert typed(apply_overrides(data, [])) == typed(data)


@pytest.mark.parametrize("assignment, expected", [
    ("wind.sped=12", "--set wind.sped=12: unknown key 'wind.sped' (did you mean 'wind.speed'?)"),
    ("wnd.speed=12", "--set wnd.speed=12: unknown key 'wnd.speed' (did you mean 'wind.speed'?)"),
    ("tree.limbs[1].stifness=3",
     "--set tree.limbs[1].stifness=3: unknown key 'tree.limbs[1].stifness' "
     "(did you mean 'tree.limbs[1].stiffness'?)"),
    ("tuning.zoom=2", "--set tuning.zoom=2: unknown key 'tuning.zoom' "
                      "(keys of tuning: stiffness_scale, damping_scale)"),
    ("wind.speed", "--set wind.speed: expected KEY=VALUE, e.g. --set wind.speed=12"),
    ("wind.speed=fast", "--set wind.speed=fast: wind.speed: expected a number, got 'fast'"),
    ("wind.speed=-3", "--set wind.speed=-3: wind.speed: must be >= 0 m/s and <= 60 m/s, got -3"),
    ("wind.speed=true", "--set wind.speed=true: wind.speed: expected a number, got true"),
    ("simulation.integrator=euler",
     "--set simulation.integrator=euler: simulation.integrator: must be one of implicit, galpha, "
     "rk4, dop853; got 'euler'"),
    ("tree.limbs[1].length=0",
     "--set tree.limbs[1].length=0: tree.limbs[1].length: must be > 0 m and <= 1000 m, got 0"),
    ("tree.limbs[1].parent=B",
     "--set tree.limbs[1].parent=B: tree.limbs[1].parent: parent cycle 'B' -> 'B' "
     "(no root among them)"),
    ("tree.limbs[7].length=1",
     "--set tree.limbs[7].length=1: tree.limbs[7]: no such entry (tree.limbs has 2)"),
    ("tree.limbs.length=1",
     "--set tree.limbs.length=1: tree.limbs: is a list: give an index, e.g. tree.limbs[0]"),
    ("wind.speed.x=1", "--set wind.speed.x=1: wind.speed: is a single value, not a section"),
    ("wind[0]=1", "--set wind[0]=1: wind: is not a list and takes no index"),
    ("tree.generator.levels=2",
     "--set tree.generator.levels=2: tree: give exactly one of 'limbs' (an explicit limb list) "
     "and 'generator' (a generated tree), not both"),
    ("tree.limbs[1].spring_rest_rotation_deg=[1, 0, 0]",
     "--set tree.limbs[1].spring_rest_rotation_deg=[1, 0, 0]: "
     "tree.limbs[1].spring_rest_rotation_deg: must be null when simulation.prestress is true "
     "(prestress computes the spring rest rotations)"),
    ("wind..speed=1", "--set wind..speed=1: bad key 'wind..speed' (write a key path such as "
                      "wind.speed or tree.limbs[2].stiffness)"),
    ("wind.speed=[1", "--set wind.speed=[1: wind.speed: cannot read the value as YAML: "
                      "did not find expected ',' or ']'"),
])
def test_bad_overrides(assignment, expected):
    with pytest.raises(PresetError) as info:
        apply_overrides(parse_preset(TWO_LIMBS).data, [assignment])
    assert str(info.value) == expected


def test_overrides_on_a_generated_tree_have_no_limbs():
    with pytest.raises(PresetError,
                       match=r"^-s tree\.limbs\[0\]\.length=1: tree\.limbs: this preset"
                             r" has none$"):
        apply_overrides(parse_preset(GENERATED).data, ["tree.limbs[0].length=1"], source="-s")


# --------------------------------------------------------------------------- properties

def _bounded_numbers(spec: schema.Field, integers: bool) -> st.SearchStrategy:
    """Numbers within the range of `spec` (floats, or ints when `integers`)."""
    if integers:
        low = (-(2**70) if spec.min is None
               else math.floor(spec.min) + 1 if spec.min_open else math.ceil(spec.min))
        high = (2**70 if spec.max is None
                else math.ceil(spec.max) - 1 if spec.max_open else math.floor(spec.max))
        return st.integers(low, high) if low <= high else st.nothing()
    return st.floats(-1e300 if spec.min is None else spec.min,
                     1e300 if spec.max is None else spec.max,
                     exclude_min=spec.min_open and spec.min is not None,
                     exclude_max=spec.max_open and spec.max is not None)


def _vectors(spec: schema.Field) -> st.SearchStrategy:
    numbers = st.one_of(_bounded_numbers(spec, False), _bounded_numbers(spec, True))
    vectors = st.lists(numbers, min_size=3, max_size=3)
    # A nonzero vector must also be at least MIN_VECTOR_LENGTH long (preset.py).
    if not spec.nonzero:
        return vectors
    return vectors.filter(lambda v: math.hypot(*v) >= preset_module.MIN_VECTOR_LENGTH)


def field_values(spec: schema.Field) -> st.SearchStrategy:
    """Valid values of a leaf of the schema, as a YAML file may hold them."""
    numbers = st.one_of(_bounded_numbers(spec, False), _bounded_numbers(spec, True))
    ints = _bounded_numbers(spec, True)
    by_kind = {
        "float": lambda: numbers,
        "int": lambda: ints,
        "bool": st.booleans,
        "str": lambda: st.text(max_size=12),
        "enum": lambda: st.sampled_from(spec.choices),
        "vec3": lambda: _vectors(spec),
        "float_or_vec3": lambda: st.one_of(numbers, _vectors(spec)),
        "int_or_list": lambda: st.one_of(ints, st.lists(ints, min_size=1, max_size=4)),
        "float_or_list": lambda: st.one_of(numbers, st.lists(numbers, min_size=1, max_size=4)),
        "colour": lambda: st.from_regex(r"#[0-9a-fA-F]{6}", fullmatch=True),
    }
    values = by_kind[spec.kind]()
    return st.one_of(st.none(), values) if spec.nullable else values


def table_values(table: dict, skip: tuple[str, ...] = ()) -> st.SearchStrategy:
    """Mappings with a random subset of the keys of `table`, each with a valid value."""
    optional = {key: table_values(spec) if isinstance(spec, dict) else field_values(spec)
                for key, spec in table.items() if key not in skip}
    return st.fixed_dictionaries({}, optional=optional)


# Principal moments (x+y, y+z, z+x) of a body with second moments x, y, z > 0:
# they satisfy the triangle inequality by construction.
inertias = st.lists(st.floats(1e-6, 1e3), min_size=3, max_size=3).map(
    lambda m: [m[0] + m[1], m[1] + m[2], m[2] + m[0]])


@st.composite
def explicit_trees(draw, prestress: bool) -> tuple[dict, list[str]]:
    """A random small limb tree (any order in the file) and its limb names."""
    count = draw(st.integers(1, 6))
    names = draw(st.lists(st.text(min_size=1, max_size=6), min_size=count, max_size=count,
                          unique=True))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, count)]
    limbs_ = []
    for i in draw(st.permutations(range(count))):
        limb = draw(table_values(schema.LIMB, skip=("name", "parent", "inertia",
                                                    "spring_rest_rotation_deg")))
        limb["name"] = names[i]
        if parents[i] is not None or draw(st.booleans()):
            limb["parent"] = None if parents[i] is None else names[parents[i]]
        if draw(st.booleans()):
            limb["inertia"] = draw(st.one_of(st.none(), inertias))
        if not prestress and draw(st.booleans()):
            spring_rest = schema.LIMB["spring_rest_rotation_deg"]
            limb["spring_rest_rotation_deg"] = draw(field_values(spring_rest))
        limbs_.append(limb)
    return {"limbs": limbs_}, names


def _stem_keys_with_form(generator: dict) -> dict:
    """A tapered stem's keys only with its stem_form (`species.STEM_KEYS`)."""
    if generator.get("stem_form") is None:
        generator = {k: v for k, v in generator.items() if k not in species.STEM_KEYS}
    return generator


@st.composite
def raw_presets(draw) -> dict:
    """A random valid preset as read from YAML: random keys left out, random in-range values."""
    prestress = draw(st.booleans())
    raw = draw(table_values(schema.PRESET,
                            skip=("version", "tree", "initial_state", "simulation")))
    if draw(st.booleans()):
        raw["version"] = 1
    simulation = draw(table_values(schema.SIMULATION, skip=("prestress",)))
    if not prestress or draw(st.booleans()):
        simulation["prestress"] = prestress
    raw["simulation"] = simulation
    if draw(st.booleans()):
        raw["tree"], names = draw(explicit_trees(prestress))
    else:
        # The species keys depend on each other (a species needs its height and DBH within
        # its allometry): tests/test_species.py checks them.
        generator = table_values(schema.GENERATOR, skip=("species", "height", "dbh"))
        raw["tree"] = {"generator": draw(st.one_of(st.none(), generator.map(_stem_keys_with_form)))}
        names = draw(st.lists(st.text(min_size=1, max_size=6), max_size=4))
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=3)) if names else []
    entries = [dict(draw(table_values(schema.INITIAL_STATE_ENTRY, skip=("limb",))), limb=name)
               for name in chosen]
    if entries or draw(st.booleans()):
        raw["initial_state"] = entries
    return raw


@settings(deadline=None, derandomize=True, max_examples=100)
@given(raw=raw_presets())
def test_saved_presets_load_to_the_same_data(tmp_path_factory, raw):
    data = validate(raw, "random.yaml")
    assert list(data) == list(schema.PRESET)
    path = tmp_path_factory.getbasetemp() / "round_trip.yaml"
    save_preset(data, path)
    loaded = load_preset(path)
    assert typed(loaded.data) == typed(data)
    assert typed(validate(data, "again")) == typed(data)


GARBAGE = [b" fast", b" [1, 2", b" {", b" -1", b" 0", b" .nan", b" ~", b" !!binary xyz", b" *nope",
           b" &a [*a]", b" 1e999", b" 2024-13-45", b" [[[[", b" \x00", b" \xff\xfe", b" yes",
           b" !!python/object/apply:os.system ['true']", b" |", b' "open', b" 1" + b"0" * 400,
           b" [0, 0, 0]", b" {name: A}", b" null", b"", b"\t3", b" !!set {a, b}", b" <<: *x"]


@st.composite
def corrupted(draw) -> bytes:
    """A valid preset's bytes with one to three random corruptions."""
    text = draw(st.sampled_from([TWO_LIMBS, GENERATED, SAVED_TWO_LIMBS])).encode()
    for _ in range(draw(st.integers(1, 3))):
        lines = text.splitlines(keepends=True) or [b""]
        i = draw(st.integers(0, len(lines) - 1))
        operation = draw(st.sampled_from(["delete", "duplicate", "byte", "garbage", "truncate"]))
        if operation == "delete":
            del lines[i]
        elif operation == "duplicate":
            lines.insert(i, lines[i])
        elif operation == "garbage" and b":" in lines[i]:
            head = lines[i].split(b":", 1)[0]
            lines[i] = head + b":" + draw(st.sampled_from(GARBAGE)) + b"\n"
        text = b"".join(lines)
        position = draw(st.integers(0, max(len(text) - 1, 0)))
        if operation == "byte":
            text = text[:position] + bytes([draw(st.integers(0, 255))]) + text[position + 1:]
        elif operation == "truncate":
            text = text[:position]
    return text


def _saved_two_limbs() -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "saved.yaml"
        save_preset(parse_preset(TWO_LIMBS).data, path)
        return path.read_text(encoding="utf-8")


SAVED_TWO_LIMBS = _saved_two_limbs()


@settings(deadline=None, derandomize=True, max_examples=300)
@given(content=corrupted())
def test_corrupted_files_load_or_give_one_line(tmp_path_factory, content):
    path = tmp_path_factory.getbasetemp() / "corrupt.yaml"
    path.write_bytes(content)
    try:
        p = load_preset(path)
    except PresetError as exc:
        message = str(exc)
        assert message.startswith("corrupt.yaml")
        assert len(message.splitlines()) == 1, message
    else:
        assert list(p.data) == list(schema.PRESET)
        assert typed(validate(p.data, "again")) == typed(p.data)


def test_importing_preset_loads_no_gui_module():
    code = ("import sys, treedyn_core.model.preset; "
            "gui = ('PyQt6', 'PyQt5', 'PySide6', 'vispy'); "
            "bad = [m for m in sys.modules if m.split('.')[0] in gui]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
