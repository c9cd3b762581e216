"""A run's arrays (`run.simulate`) as an `xarray.Dataset`, and as a NetCDF-4 file.

The variables keep the names of the NPZ file (`treedyn run`, docs/design.md §7), so that a
reader of either finds the same names; each carries CF-style ``units`` (UDUNITS spelling) and
``long_name`` attributes, and ``standard_name`` where the CF table has one. Dimensions:
``time`` (frames), ``limb`` (preset order), ``axis`` (x, y, z: inertial axes, +z up) and, for
the rotations ``C_IF`` (limb → inertial), the pair ``row``/``column``.

xarray is imported when a function here is called, never when `treedyn_core` is.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import TreedynError
from ..output_file import write_atomically

ENGINE = "h5netcdf"   # NetCDF-4 through h5py: a wheel on every platform, no C library to build

# NPZ name → (dimensions, units, long_name, CF standard_name or None)
VARIABLES = {
    "base": (("time", "limb", "axis"), "m", "position of the limb's base, inertial axes", None),
    "tip": (("time", "limb", "axis"), "m", "position of the limb's tip, inertial axes", None),
    "C_IF": (("time", "limb", "row", "column"), "1",
             "rotation from limb axes to inertial axes (v_I = C_IF v_F)", None),
    "omega": (("time", "limb", "axis"), "rad s-1", "angular velocity of the limb, limb axes",
              None),
    "kinetic": (("time",), "J", "kinetic energy of the tree", None),
    "potential": (("time",), "J", "potential energy (gravity and springs)", None),
    "energy": (("time",), "J", "mechanical energy (kinetic + potential)", None),
    "probe_wind": (("time", "axis"), "m s-1", "wind velocity at the top of the crown",
                   "wind_speed"),
    "aero_force": (("time", "axis"), "N", "total aerodynamic force on the tree", None),
    "base_moment": (("time", "axis"), "N m", "moment at the root joint (base bending moment)",
                    None),
    "parent": (("limb",), "1", "index of the parent limb in preset order (-1: the root)", None),
    "radius": (("limb",), "m", "limb radius", None),
    "leaf_area": (("limb",), "m2", "one-sided leaf area carried by the limb", None),
    "foliage_colour": (("rgb",), "1", "foliage colour, RGB 0..1", None),
    "bark_colour": (("rgb",), "1", "bark colour, RGB 0..1", None),
}


def run_dataset(arrays: dict[str, np.ndarray], attrs: dict | None = None):
    """The arrays of a run as an `xarray.Dataset` with units.

    Parameters
    ----------
    arrays : dict of str to ndarray
        `run.RunResult.arrays`, or the arrays of a `treedyn run` NPZ file: ``t`` (T,) s,
        ``names`` (N,), ``base``/``tip`` (T, N, 3) m, ``C_IF`` (T, N, 3, 3) limb → inertial,
        ``omega`` (T, N, 3) rad/s, energies (T,) J, and with the probe ``probe_wind``
        (T, 3) m/s, ``aero_force`` (T, 3) N, ``base_moment`` (T, 3) N·m.
    attrs : dict, optional
        Global attributes to add (for example the preset's name).

    Returns
    -------
    xarray.Dataset
        Coordinates ``time`` (s), ``limb`` (names), ``axis`` (x, y, z); one variable per
        array with ``units`` and ``long_name``; the foliage form as a global attribute.
    """
    import xarray as xr

    coords = {
        "time": ("time", np.asarray(arrays["t"], dtype=float),
                 {"units": "s", "standard_name": "time", "long_name": "simulated time",
                  "axis": "T"}),
        "limb": ("limb", np.asarray(arrays["names"]).astype(str),
                 {"long_name": "limb name, preset order"}),
        "axis": ("axis", np.array(["x", "y", "z"]), {"long_name": "inertial axis, +z up"}),
        "row": ("row", np.arange(3)), "column": ("column", np.arange(3)),
        "rgb": ("rgb", np.array(["red", "green", "blue"])),
    }
    variables = {}
    for name, (dims, units, long_name, standard_name) in VARIABLES.items():
        if name not in arrays:
            continue
        meta = {"units": units, "long_name": long_name}
        if standard_name:
            meta["standard_name"] = standard_name
        variables[name] = (dims, np.asarray(arrays[name]), meta)
    used = {dim for dims, _, _ in variables.values() for dim in dims} | {"time", "limb", "axis"}
    global_attrs = {"Conventions": "CF-1.10", "source": "treedyn run"}
    if "foliage_form" in arrays:
        global_attrs["foliage_form"] = str(np.asarray(arrays["foliage_form"]))
    global_attrs.update(attrs or {})
    return xr.Dataset(variables, coords={k: v for k, v in coords.items() if k in used},
                      attrs=global_attrs)


def dataset_arrays(dataset) -> dict[str, np.ndarray]:
    """The NPZ arrays of a run's dataset (`run_dataset`'s inverse)."""
    arrays = {"t": dataset["time"].values, "names": dataset["limb"].values.astype(str)}
    for name in VARIABLES:
        if name in dataset:
            arrays[name] = dataset[name].values
    if "foliage_form" in dataset.attrs:
        arrays["foliage_form"] = np.array(dataset.attrs["foliage_form"])
    return arrays


def netcdf_writer(arrays: dict[str, np.ndarray], attrs: dict | None = None):
    """A writer of the arrays as a NetCDF-4 file for `output_file.write_atomically`."""
    dataset = run_dataset(arrays, attrs)

    def write(name: str) -> None:
        dataset.to_netcdf(name, engine=ENGINE)

    return write


def write_netcdf(arrays: dict[str, np.ndarray], path: str | os.PathLike,
                 attrs: dict | None = None) -> None:
    """Write a run's arrays to `path` as NetCDF-4, atomically (`output_file.write_atomically`)."""
    write_atomically(path, netcdf_writer(arrays, attrs))


def read_netcdf(path: str | os.PathLike):
    """A NetCDF file written by `write_netcdf`, loaded into memory as an `xarray.Dataset`."""
    import xarray as xr

    try:
        with xr.open_dataset(path, engine=ENGINE) as dataset:
            return dataset.load()
    except (OSError, ValueError) as error:
        raise TreedynError(f"cannot read {path}: {error}") from None
