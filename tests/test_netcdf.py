"""`treedyn run --out RUN.nc` (treedyn_core/io/netcdf.py): a NetCDF-4 file with CF-style units
that xarray reads, the same numbers as the NPZ, written atomically."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "treedyn_core", "run", "two_limbs",
                           "--duration", "0.3", *args], capture_output=True, text=True, cwd=cwd)


def test_run_writes_netcdf_with_units_like_the_npz(tmp_path):
    done = _run("--probe", "--out", "r.nc", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote r.nc" in done.stdout
    assert _run("--probe", "--out", "r.npz", cwd=tmp_path).returncode == 0
    with xr.open_dataset(tmp_path / "r.nc") as ds, np.load(tmp_path / "r.npz") as npz:
        assert ds.attrs["Conventions"].startswith("CF-")
        assert ds["time"].attrs == {"units": "s", "standard_name": "time",
                                    "long_name": "simulated time", "axis": "T"}
        units = {name: ds[name].attrs["units"] for name in ds.data_vars}
        assert units["tip"] == "m" and units["omega"] == "rad s-1"
        assert units["energy"] == "J" and units["base_moment"] == "N m"
        assert units["probe_wind"] == "m s-1" and units["aero_force"] == "N"
        assert all(ds[name].attrs["long_name"] for name in ds.data_vars)
        np.testing.assert_array_equal(ds["time"].values, npz["t"])
        for name in ("base", "tip", "C_IF", "omega", "energy", "base_moment", "parent"):
            np.testing.assert_array_equal(ds[name].values, npz[name], err_msg=name)
        assert list(ds["limb"].values) == list(npz["names"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.nc", "r.npz"]   # no temporaries


@pytest.mark.parametrize("name", ["r.txt", ".nc"])
def test_other_suffixes_are_refused_before_the_run(tmp_path, name):
    done = _run("--out", name, cwd=tmp_path)
    assert done.returncode == 2 and ".npz or .nc" in done.stderr
    assert list(tmp_path.iterdir()) == []
