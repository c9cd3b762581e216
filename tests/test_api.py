"""The public API (`treedyn_core.__all__`, `treedyn_core/api.py`): its names and signatures
pinned, and its results the command line's."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

import treedyn_core as td

# The public names and signatures. A change here is a change of the public API: deliberate,
# noted in docs/api.md, and versioned.
PUBLIC = {
    "load_preset": "(source: 'PresetSource', overrides: 'Overrides' = None) -> 'Preset'",
    "override_assignments": "(overrides: 'Overrides') -> 'list[str]'",
    "new_simulation": "(preset: 'PresetSource', *, integrator: 'str | None' = None, "
                      "model: 'str | None' = None, dt: 'float | None' = None) -> 'Simulation'",
    "run": "(preset: 'PresetSource', duration: 'float', *, dt: 'float | None' = None, "
           "integrator: 'str | None' = None, model: 'str | None' = None, "
           "every: 'int | None' = None, probe: 'bool' = False) -> 'xarray.Dataset'",
    "run_arrays": "(dataset: 'xarray.Dataset') -> 'dict'",
    "read_run": "(path: 'str | os.PathLike') -> 'xarray.Dataset'",
    "modes": "(preset: 'PresetSource | Simulation', count: 'int' = 10) -> 'ModeResult'",
    "pull": "(preset: 'PresetSource | Simulation', height: 'float', force: 'float | None' = "
            "None, inclination_deg: 'float | None' = None, direction_deg: 'float' = 0.0, "
            "release: 'bool' = False) -> 'PullResult'",
    "load_study": "(path: 'str | os.PathLike') -> 'Study'",
    "study": "(source: 'str | os.PathLike | Study', out: 'str | os.PathLike | None' = None, *, "
             "workers: 'int | None' = 1, scheduler: 'str | None' = None) -> 'Outcome'",
    "read_study": "(out: 'str | os.PathLike') -> 'pyarrow.Table'",
    "study_fragility": "(plan: 'Study', out: 'str | os.PathLike') -> "
                       "'list[tuple[str, Fragility, float]]'",
    "study_figures": "(plan: 'Study', out: 'str | os.PathLike') -> 'list[str]'",
    "expand": "(preset: 'PresetSource', out: 'str | os.PathLike | None' = None) -> 'dict'",
    "export_gltf": "(run: 'str | os.PathLike | xarray.Dataset', out: 'str | os.PathLike', "
                   "fps: 'float | None' = None) -> 'int'",
    "render": "(preset: 'PresetSource', duration: 'float', out: 'str | os.PathLike', *, "
              "size: 'tuple[int, int]' = (1280, 720), fps: 'float' = 30.0) -> 'str'",
}
CLASSES = ("Preset", "Simulation", "ModeResult", "PullResult", "Study", "Outcome", "Fragility",
           "TreedynError", "PresetError", "SimulationDiverged")


def test_all_is_pinned():
    assert sorted(td.__all__) == sorted(["__version__", *PUBLIC, *CLASSES])


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_signature_is_pinned(name):
    assert str(inspect.signature(getattr(td, name))) == PUBLIC[name]


@pytest.mark.parametrize("name", sorted(PUBLIC) + list(CLASSES))
def test_every_public_name_is_documented_with_units_or_types(name):
    doc = inspect.getdoc(getattr(td, name)) or ""
    assert doc, name
    if name in PUBLIC:
        assert "Returns\n-------" in doc, name   # numpydoc


def test_the_simulation_is_the_apps():
    from treedyn_core.simulation import Simulation

    assert td.Simulation is Simulation


def test_importing_a_module_keeps_the_function():
    """`treedyn_core.run` stays the API's function after the module `treedyn_core.io.run` is
    imported (by the command line, a test, a worker)."""
    module = importlib.import_module("treedyn_core.io.run")
    assert callable(td.run) and td.run is not module
    from treedyn_core import run

    assert run is td.run and hasattr(module, "simulate")


def test_import_is_light():
    """No numba, Qt, vispy, Dask, matplotlib or xarray on import, and ≤ 0.5 s warm (#41)."""
    code = ("import sys, time; t = time.perf_counter(); import treedyn_core; "
            "print(time.perf_counter() - t); print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    loaded = {name.split(".")[0] for name in out[1].split()}
    assert not loaded & {"numba", "PyQt6", "vispy", "dask", "distributed", "matplotlib",
                         "xarray"}
    assert float(out[0]) <= 0.5


def test_load_preset_overrides_as_mapping_or_set_strings():
    by_mapping = td.load_preset("two_limbs", {"wind.speed": 12, "tuning.damping_scale": 2.0})
    by_strings = td.load_preset("two_limbs", ["wind.speed=12", "tuning.damping_scale=2"])
    assert by_mapping.data == by_strings.data
    assert by_mapping.data["wind"]["speed"] == 12
    from_dict = td.load_preset(by_mapping.data, {"wind.speed": 3})
    assert from_dict.data["wind"]["speed"] == 3 and by_mapping.data["wind"]["speed"] == 12
    with pytest.raises(td.PresetError, match="wind.sped"):
        td.load_preset("two_limbs", {"wind.sped": 3})


def test_run_is_a_dataset_with_units_and_round_trips_through_netcdf(tmp_path):
    ds = td.run("two_limbs", 0.5, probe=True, every=5)
    assert ds.sizes["limb"] == 2 and ds.sizes["axis"] == 3
    assert ds["time"].attrs["units"] == "s" and ds["time"].values[-1] == pytest.approx(0.5)
    for name in ("base", "tip", "C_IF", "omega", "energy", "probe_wind", "aero_force",
                 "base_moment"):
        assert ds[name].attrs["units"], name
    assert ds["base_moment"].dims == ("time", "axis")
    assert ds["C_IF"].dims == ("time", "limb", "row", "column")
    ds.to_netcdf(tmp_path / "r.nc", engine="h5netcdf")
    back = td.read_run(tmp_path / "r.nc")
    for name in ds.data_vars:
        np.testing.assert_array_equal(back[name].values, ds[name].values)
        assert back[name].attrs["units"] == ds[name].attrs["units"]


def test_run_agrees_with_the_command_line(tmp_path):
    """The API's run and `treedyn run`'s NPZ hold the same numbers: to round-off, as two
    processes may run kernels compiled apart (the command's first run compiles its step from
    both ends, `warm_up`), and bit for bit in one process (test_the_simulation_is_the_apps)."""
    out = tmp_path / "cli.npz"
    subprocess.run([sys.executable, "-m", "treedyn_core", "run", "two_limbs", "--duration",
                    "0.4", "--set", "wind.speed=9", "--dt", "0.005", "--out", str(out)],
                   check=True, capture_output=True, cwd=tmp_path)
    ds = td.run(td.load_preset("two_limbs", {"wind.speed": 9}), 0.4, dt=0.005)
    arrays = td.run_arrays(ds)
    with np.load(out) as npz:
        for name in ("t", "base", "tip", "C_IF", "omega", "energy", "parent", "radius"):
            np.testing.assert_allclose(arrays[name], npz[name], rtol=1e-9, atol=1e-12,
                                       err_msg=name)
        assert list(arrays["names"]) == list(npz["names"])
    np.testing.assert_allclose(td.read_run(out)["tip"].values, ds["tip"].values, rtol=1e-9,
                               atol=1e-12)


def test_modes_agree_with_the_command_line():
    result = td.modes("two_limbs", count=3)
    text = subprocess.run([sys.executable, "-m", "treedyn_core", "modes", "two_limbs",
                           "--count", "3", "--json"], check=True, capture_output=True,
                          text=True).stdout
    frequencies = [mode["frequency_hz"] for mode in json.loads(text)["modes"]]
    np.testing.assert_allclose(result.frequencies_hz, frequencies, rtol=1e-12)


def test_pull_agrees_with_the_command_line():
    result = td.pull("sapling", 0.5, force=20.0, direction_deg=30.0)
    text = subprocess.run([sys.executable, "-m", "treedyn_core", "pull", "sapling", "--height",
                           "0.5", "--force", "20", "--direction", "30", "--json"], check=True,
                          capture_output=True, text=True).stdout
    shown = json.loads(text)
    assert result.base_moment_Nm == pytest.approx(shown["base_moment_Nm"], rel=1e-12)
    assert result.deflection_m == pytest.approx(shown["deflection_m"], rel=1e-12)
    with pytest.raises(td.TreedynError, match="not both"):
        td.pull("sapling", 0.5, force=20.0, inclination_deg=0.1)


@pytest.mark.slow
def test_study_agrees_with_the_command_line(tmp_path):
    """The same two runs through `td.study` and `treedyn study`: the same rows."""
    (tmp_path / "s.yaml").write_text("study: tiny\npreset: sapling\nduration: 0.5\n"
                                     "grid:\n  wind.speed: [5, 15]\n", encoding="utf-8")
    plan = td.load_study(tmp_path / "s.yaml")
    outcome = td.study(plan, tmp_path / "api", workers=1)
    assert outcome.written == 2 and outcome.by_status.get("ok") == 2
    subprocess.run([sys.executable, "-m", "treedyn_core", "study", str(tmp_path / "s.yaml"),
                    "--out", str(tmp_path / "cli"), "--workers", "1"], check=True,
                   capture_output=True)
    ours, theirs = (td.read_study(tmp_path / name).sort_by("run").to_pydict()
                    for name in ("api", "cli"))
    for column in ("wind.speed", "peak_base_moment_Nm", "peak_crown_displacement_m",
                   "breaking_moment_Nm", "status"):
        assert ours[column] == theirs[column], column
    (label, fit, strength), = td.study_fragility(plan, tmp_path / "api")
    assert label == "" and fit.runs == 2 and strength == theirs["breaking_moment_Nm"][0]


def test_expand_agrees_with_the_command_line(tmp_path):
    """`td.expand` writes what `treedyn expand` writes, and its dict loads to the same tree."""
    data = td.expand("sapling", tmp_path / "api.yaml")
    subprocess.run([sys.executable, "-m", "treedyn_core", "expand", "sapling",
                    str(tmp_path / "cli.yaml")], check=True, capture_output=True)
    assert (tmp_path / "api.yaml").read_text() == (tmp_path / "cli.yaml").read_text()
    assert td.load_preset(data).data["tree"]["limbs"] == data["tree"]["limbs"]
    with pytest.raises(td.TreedynError, match=r"\.yaml"):
        td.expand("sapling", tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()


def test_export_gltf_of_a_dataset_is_the_npz_files(tmp_path):
    """A run exported from its dataset and from its NPZ file: the same glTF, byte for byte."""
    out = tmp_path / "run.npz"
    subprocess.run([sys.executable, "-m", "treedyn_core", "run", "two_limbs", "--duration",
                    "0.2", "--out", str(out)], check=True, capture_output=True)
    size = td.export_gltf(td.read_run(out), tmp_path / "a.glb")
    assert size == td.export_gltf(out, tmp_path / "b.glb") == (tmp_path / "a.glb").stat().st_size
    assert (tmp_path / "a.glb").read_bytes() == (tmp_path / "b.glb").read_bytes()
    with pytest.raises(td.TreedynError, match=r"\.glb"):
        td.export_gltf(out, tmp_path / "c.gltf")


@pytest.mark.slow
def test_render_makes_the_commands_film(qtbot, tmp_path):   # qtbot: the tests' QApplication
    """`td.render` is `treedyn render`: a film of duration·fps frames, found through the app's
    entry point; a film over an hour long is refused before anything is drawn."""
    import imageio

    line = td.render("sapling", 0.2, tmp_path / "f.mp4", size=(160, 120), fps=30.0)
    assert "6 frames of 160x120 px" in line
    reader = imageio.get_reader(str(tmp_path / "f.mp4"), format="FFMPEG")
    try:
        assert np.array([frame for frame in reader]).shape[:3] == (6, 120, 160)
    finally:
        reader.close()
    with pytest.raises(td.TreedynError, match="more than 108,000"):
        td.render("sapling", 3601.0, tmp_path / "g.mp4")
    assert not (tmp_path / "g.mp4").exists()
