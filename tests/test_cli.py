"""The `treedyn` command line: run, expand, and one-line errors with exit status 2."""

import subprocess
import sys

import numpy as np
import pytest

from treedyn_core.cli import main
from treedyn_core.model.preset import load_preset, shipped_presets
from treedyn_core.simulation import Simulation
from treedyn_core.dynamics.static_model import build_tree

NPZ_KEYS = {"t", "names", "parent", "base", "tip", "C_IF", "omega", "kinetic", "potential",
            "energy"}
# Expanding writes derived floats with repr precision and rotation vectors through
# exp/log in degrees: a few ulps of the largest value involved.
ROUND_OFF = 1e-12


def _one_line_error(capsys, argv):
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("treedyn: error:"), err
    assert "Traceback" not in err
    return lines[0]


def test_run_writes_every_key_in_preset_order(tmp_path, capsys):
    out = tmp_path / "two.npz"
    assert main(["run", "two_limbs", "--duration", "0.5", "--out", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "real time" in summary and "energy drift" in summary
    data = np.load(out)
    assert NPZ_KEYS <= set(data.files)
    n_frames = len(data["t"])
    assert n_frames == 1 + round(0.5 / (1 / 120)) // 4  # dt 1/120 s, ~30 frames per second
    assert list(data["names"]) == ["A", "B"] and list(data["parent"]) == [-1, 0]
    assert data["C_IF"].shape == (n_frames, 2, 3, 3)
    np.testing.assert_allclose(data["energy"], data["kinetic"] + data["potential"], rtol=1e-12)
    # B's base is A's tip: the drawing formula.
    np.testing.assert_allclose(data["base"][:, 1], data["tip"][:, 0], atol=1e-12)


def test_run_set_changes_the_run(tmp_path, capsys):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    main(["run", "sapling", "--duration", "1", "--out", str(a)])
    main(["run", "sapling", "--duration", "1", "--out", str(b), "--set", "wind.speed=15",
          "--probe"])
    capsys.readouterr()
    sway = lambda path: np.abs(np.load(path)["tip"][-1] - np.load(path)["tip"][0]).max()  # noqa
    assert sway(b) > 2 * sway(a)
    probed = np.load(b)
    assert {"probe_wind", "aero_force", "base_moment"} <= set(probed.files)
    assert np.linalg.norm(probed["probe_wind"], axis=1).max() > 10.0


def test_run_order_is_the_generator_order(tmp_path, capsys):
    out = tmp_path / "s.npz"
    main(["run", "sapling", "--duration", "0.1", "--out", str(out)])
    capsys.readouterr()
    preset = load_preset("sapling")
    tree = build_tree(preset.data)
    names = [spec["name"] for spec in tree.limb_specs]
    assert list(np.load(out)["names"]) == names


@pytest.mark.parametrize("argv, fragment", [
    (["run", "no_such_tree", "--duration", "1"], "no such file"),
    (["run", "two_limbs"], "--duration"),
    (["run", "two_limbs", "--duration", "-1"], "--duration"),
    (["run", "two_limbs", "--duration", "1", "--set", "wind.sped=3"], "did you mean 'wind.speed'"),
    (["run", "two_limbs", "--duration", "1", "--set", "wind.speed=fast"], "expected a number"),
    (["run", "two_limbs", "--duration", "1", "--set", "wind.speed"], "="),
    (["run", "two_limbs", "--duration", "1", "--integrator", "euler"], "invalid choice"),
    (["run", "two_limbs", "--duration", "1", "--every", "0"], "--every"),
    (["expand", "two_limbs"], "OUT.yaml"),
    (["expand", "two_limbs", "out.txt"], ".yaml"),
    (["bench", "performance", "--repeat", "0"], "--repeat"),
    (["bench", "accuracy", "--repeat", "3"], "bench performance only"),
    (["bench", "performance", "--sizes", "10,300000"], "≤ 250,000"),
])
def test_bad_input_is_one_line_exit_2(argv, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(capsys, argv)
    assert fragment in line
    assert list(tmp_path.iterdir()) == []  # no partial output


def test_invalid_preset_file_names_file_line_and_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntree:\n  limbs:\n    - {name: A, length: -1}\n")
    line = _one_line_error(capsys, ["run", str(bad), "--duration", "1",
                                    "--out", str(tmp_path / "x.npz")])
    assert "bad.yaml:4: tree.limbs[0].length" in line
    assert not (tmp_path / "x.npz").exists()


def test_console_script_exit_status(tmp_path):
    result = subprocess.run([sys.executable, "-m", "treedyn_core", "run", "nowhere.yaml",
                             "--duration", "1"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "giant" else n
                                  for n in shipped_presets()])
def test_expand_loads_to_the_same_limbs(name, tmp_path, capsys):
    out = tmp_path / f"{name}_expanded.yaml"
    assert main(["expand", name, str(out)]) == 0
    capsys.readouterr()
    original, expanded = Simulation(load_preset(name)), Simulation(load_preset(out))
    assert expanded.data["simulation"]["prestress"] is False
    a, b = original.tree, expanded.tree
    assert a.names == b.names
    for key in ("rest_base", "rest_tip", "rest_C_IF", "mass", "inertia_com", "stiffness",
                "damping", "length", "radius", "leaf_area"):
        x, y = getattr(a, key), getattr(b, key)
        np.testing.assert_allclose(y, x, rtol=ROUND_OFF, atol=ROUND_OFF * np.abs(x).max(),
                                   err_msg=key)
    np.testing.assert_allclose(expanded.spring_C_rel, original.spring_C_rel, atol=ROUND_OFF)


def test_expanded_preset_runs_the_same(tmp_path, capsys):
    """`expand` bakes the prestress in: the expanded file simulates like the original."""
    out = tmp_path / "young.yaml"
    main(["expand", "young_oak", str(out)])
    runs = []
    for source in ("young_oak", str(out)):
        sim = Simulation(load_preset(source))
        sim.step(240)
        runs.append(sim.tip)
    capsys.readouterr()
    scale = np.abs(runs[0]).max()
    assert np.abs(runs[1] - runs[0]).max() <= 1e-9 * scale


def test_modes_prints_a_table_with_units(capsys):
    assert main(["modes", "sapling", "--count", "3"]) == 0
    out = capsys.readouterr().out
    assert "Hz" in out and "damping" in out
    assert len([line for line in out.splitlines() if line.strip()[:1].isdigit()]) == 3
