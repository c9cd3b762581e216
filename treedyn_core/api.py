"""The public Python API: what the `treedyn` command does, as functions for scripts and
notebooks (re-exported by `treedyn_core`; its `__all__` is the list of public names).

Each function calls the same core functions as the command line; none holds physics or file
format logic of its own. Units are SI throughout: m, s, N, N·m, rad (angles in degrees where
the name says ``_deg``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .errors import TreedynError
from .model.preset import Preset, apply_overrides
from .model.preset import load_preset as _load_preset_file
from .model.preset import validate
from .studies.study_file import Study, assignment
from .studies.study_file import load_study as _load_study_file

if TYPE_CHECKING:   # heavy imports only when a function needs them
    import pyarrow
    import xarray

    from .analysis.fragility import Fragility
    from .analysis.modes import ModeResult
    from .analysis.pull import PullResult
    from .simulation import Simulation
    from .studies.study import Outcome

PresetSource = Union[str, os.PathLike, Mapping, Preset]
Overrides = Union[Mapping[str, Any], Sequence[str], None]


def load_preset(source: PresetSource, overrides: Overrides = None) -> Preset:
    """Load and validate a preset, with overrides by key path as ``--set`` applies them.

    Parameters
    ----------
    source : str, path, dict or Preset
        A preset file's path, a shipped preset's name (``"young_oak"``), a preset as a dict
        (the YAML's mapping; missing keys take their defaults), or a `Preset` (copied).
    overrides : mapping or sequence of str, optional
        Key path → value (``{"wind.speed": 12.0}``: m/s, as every key's schema unit), or
        ``"KEY=VALUE"`` strings as given to ``--set`` (``["wind.speed=12"]``). Applied in
        order, each checked against the schema.

    Returns
    -------
    Preset
        The validated preset: ``.data`` the complete dict, ``.name`` its name.

    Raises
    ------
    PresetError
        One line naming the file, the line and the key path of the problem.
    """
    if isinstance(source, Preset):
        preset = Preset(validate(source.data, source.filename), source.path, dict(source.marks),
                        source.filename, source.raw)
    elif isinstance(source, Mapping):
        raw = dict(source)
        raw.setdefault("name", "Untitled tree")
        preset = Preset(validate(raw, "<dict>"), filename="<dict>", raw=raw)
    elif isinstance(source, (str, os.PathLike)):
        preset = _load_preset_file(source)
    else:
        raise TreedynError(f"a preset is a path, a shipped name, a dict or a Preset, not "
                           f"{type(source).__name__}")
    assignments = override_assignments(overrides)
    if assignments:
        preset.data = apply_overrides(preset.data, assignments)
    return preset


def override_assignments(overrides: Overrides) -> list[str]:
    """``KEY=VALUE`` strings (``--set``'s form) of a mapping or a sequence of overrides.

    Parameters
    ----------
    overrides : mapping or sequence of str or None
        Key path → value, or ``"KEY=VALUE"`` strings (returned as they are).

    Returns
    -------
    list of str
    """
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [assignment(str(key), value) for key, value in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return [str(item) for item in overrides]


def new_simulation(preset: PresetSource, *, integrator: str | None = None,
                   model: str | None = None, dt: float | None = None) -> Simulation:
    """A `Simulation` of a preset, ready to step (the object the app's worker drives).

    Parameters
    ----------
    preset : str, path, dict or Preset
        As for `load_preset`.
    integrator : {"implicit", "galpha", "rk4", "dop853"}, optional
        Default: the preset's ``simulation.integrator``.
    model : {"articulated", "seed"}, optional
        Default: the preset's ``simulation.model``.
    dt : float, optional
        Time step, s. Default: the preset's ``simulation.dt``.

    Returns
    -------
    Simulation
        ``step(n)`` advances n steps of ``dt`` s; ``time`` s; ``base``/``tip`` (N, 3) m and
        ``C_IF`` (N, 3, 3) limb → inertial, in the simulator's breadth-first limb order.
    """
    from .simulation import Simulation

    return Simulation(_as_preset(preset), integrator=integrator, model=model, dt=dt)


def run(preset: PresetSource, duration: float, *, dt: float | None = None,
        integrator: str | None = None, model: str | None = None, every: int | None = None,
        probe: bool = False) -> xarray.Dataset:
    """Simulate a preset headless, as ``treedyn run``, and return the trajectory.

    Parameters
    ----------
    preset : str, path, dict or Preset
        As for `load_preset`.
    duration : float
        Simulated time, s (> 0).
    dt : float, optional
        Time step, s. Default: the preset's ``simulation.dt``.
    integrator : {"implicit", "galpha", "rk4", "dop853"}, optional
        Default: the preset's ``simulation.integrator``.
    model : {"articulated", "seed"}, optional
        Default: the preset's ``simulation.model``.
    every : int, optional
        Save every ``every``-th step (default: about 30 frames per simulated second). The
        first (t = 0) and the last state are always saved.
    probe : bool, default False
        Also save per frame the wind at the crown top ``probe_wind`` (m/s), the total
        aerodynamic force ``aero_force`` (N) and the base moment ``base_moment`` (N·m).

    Returns
    -------
    xarray.Dataset
        Dimensions ``time`` (s), ``limb`` (names, preset order), ``axis`` (x, y, z inertial,
        +z up) and ``row``/``column`` for ``C_IF``; every variable has a ``units`` attribute
        (`netcdf.VARIABLES`); ``to_netcdf`` writes it. The NPZ arrays are
        `run_arrays(dataset)`.

    Raises
    ------
    SimulationDiverged
        The state left the physical bounds (docs/hardening.md).
    """
    from .io.netcdf import run_dataset
    from .io.run import simulate

    preset = _as_preset(preset)
    if dt is not None:   # as --dt: the preset's simulation.dt, checked by the schema
        preset.data = apply_overrides(preset.data, [f"simulation.dt={float(dt)!r}"], "dt")
    result = simulate(new_simulation(preset, integrator=integrator, model=model), duration, every,
                      probe=probe)
    return run_dataset(result.arrays, {"preset": preset.name})


def run_arrays(dataset: xarray.Dataset) -> dict:
    """The arrays of a ``treedyn run`` NPZ file (names as there) from a run's dataset.

    Parameters
    ----------
    dataset : xarray.Dataset
        As returned by `run` or `read_run`.

    Returns
    -------
    dict of str to ndarray
        ``t`` (T,) s, ``names`` (N,), ``base``/``tip`` (T, N, 3) m, ``C_IF`` (T, N, 3, 3),
        ``omega`` (T, N, 3) rad/s, energies (T,) J, ...
    """
    from .io.netcdf import dataset_arrays

    return dataset_arrays(dataset)


def read_run(path: str | os.PathLike) -> xarray.Dataset:
    """Read a run written by ``treedyn run`` (``.npz`` or ``.nc``) as a dataset with units.

    Parameters
    ----------
    path : str or path
        An NPZ or NetCDF file.

    Returns
    -------
    xarray.Dataset
        As `run` returns.
    """
    from .io.netcdf import read_netcdf, run_dataset

    path = Path(path)
    if path.suffix == ".nc":
        return read_netcdf(path)
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except (OSError, ValueError) as error:
        raise TreedynError(f"cannot read {path}: {error}") from None
    return run_dataset(arrays)


def modes(preset: PresetSource | Simulation, count: int = 10) -> ModeResult:
    """Natural frequencies and mode shapes about the static equilibrium, as ``treedyn modes``.

    Parameters
    ----------
    preset : str, path, dict, Preset or Simulation
        The tree (a `Simulation`: with its stiffness and damping scales in force).
    count : int, default 10
        How many of the lowest modes.

    Returns
    -------
    ModeResult
        ``frequencies_hz`` (count,) Hz, ``damping_ratios`` (count,), ``periods`` (count,) s,
        ``shapes`` (count, N, 3) rad and ``tip_displacements`` (count, N, 3) m per unit modal
        amplitude, ``descriptions``.
    """
    from .analysis.modes import modes as tree_modes
    from .simulation import Simulation

    return tree_modes(preset if isinstance(preset, Simulation) else _as_preset(preset), count)


def pull(preset: PresetSource | Simulation, height: float, force: float | None = None,
         inclination_deg: float | None = None, direction_deg: float = 0.0,
         release: bool = False) -> PullResult:
    """The pulling test, as ``treedyn pull`` (docs/validation.md).

    Parameters
    ----------
    preset : str, path, dict, Preset or Simulation
        The tree.
    height : float
        Rope height above the stem base, m.
    force : float, optional
        Rope force, N. Give either this or `inclination_deg`.
    inclination_deg : float, optional
        Pull until the stem base tilts by this, degrees (default 0.25 when `force` is None).
    direction_deg : float, default 0.0
        Azimuth of the pull, degrees (0 = +x, 90 = +y).
    release : bool, default False
        Cut the rope and fit the free sway's frequency (Hz) and damping ratio.

    Returns
    -------
    PullResult
        ``deflection_m`` m, ``base_inclination_deg`` deg, ``base_moment_Nm`` N·m,
        ``max_stem_stress_Pa`` Pa, ``force_N`` N; with `release`, ``frequency_hz`` Hz,
        ``damping_ratio`` and the ``release`` record.
    """
    from .analysis.pull import pull as pulling_test
    from .simulation import Simulation

    if force is not None and inclination_deg is not None:
        raise TreedynError("pull: give a force or an inclination, not both")
    sim = preset if isinstance(preset, Simulation) else new_simulation(preset)
    return pulling_test(sim, height, force, inclination_deg, direction_deg, release)


def load_study(path: str | os.PathLike) -> Study:
    """Read and validate a study file (docs/studies.md).

    Parameters
    ----------
    path : str or path
        A study YAML file.

    Returns
    -------
    Study
        ``name``, ``duration`` s, ``dt`` s, ``axes`` (key paths), ``runs`` (one dict each).
    """
    return _load_study_file(path)


def study(source: str | os.PathLike | Study, out: str | os.PathLike | None = None, *,
          workers: int | None = 1, scheduler: str | None = None) -> Outcome:
    """Run a study's runs on Dask, as ``treedyn study``; rerun to resume.

    Parameters
    ----------
    source : str, path or Study
        A study file, or a `Study` from `load_study`.
    out : str or path, optional
        Output folder (default: the study's name); rows go to ``out/results.parquet``.
    workers : int, optional, default 1
        Local worker processes (one thread each); None: the CPU count.
    scheduler : str, optional
        The address of an existing Dask scheduler instead of local workers.

    Returns
    -------
    Outcome
        ``total``, ``skipped``, ``written`` runs, ``by_status``, ``wall_s`` s.
    """
    from .studies.study import run_study

    plan = source if isinstance(source, Study) else load_study(source)
    folder = Path(out) if out is not None else Path(plan.name)
    return run_study(plan, folder, workers=None if scheduler else workers, scheduler=scheduler)


def read_study(out: str | os.PathLike) -> pyarrow.Table:
    """The rows of a study's output folder: one per run (``table.to_pandas()`` for pandas).

    Parameters
    ----------
    out : str or path
        The folder given to `study`.

    Returns
    -------
    pyarrow.Table
        Columns ``run``, the axes, ``peak_base_moment_Nm`` N·m, ``peak_crown_displacement_m``
        m, ``sway_frequency_hz`` Hz, ``breaking_moment_Nm`` N·m, ``status``, ... (docs/studies.md).
    """
    from .studies.results import read_results

    return read_results(out)


def study_fragility(plan: Study, out: str | os.PathLike) -> list[tuple[str, Fragility, float]]:
    """The fitted fragility curve of every tree of a study (stem breakage at breast height).

    Parameters
    ----------
    plan : Study
        The study (``wind.speed`` among its axes).
    out : str or path
        Its output folder.

    Returns
    -------
    list of (str, Fragility, float)
        Per tree (a combination of the axes other than speed and seed): its label, the
        lognormal fit (``critical_speed`` U50 m/s, ``beta``, ``probability(speed)``) and the
        breaking moment M_break, N·m.
    """
    from .studies.report import critical_speeds

    if "wind.speed" not in plan.axes:
        raise TreedynError(f"{plan.name}: a fragility needs wind.speed among the axes")
    return critical_speeds(read_study(out).to_pydict(), plan.axes)


def study_figures(plan: Study, out: str | os.PathLike) -> list[str]:
    """Write ``treedyn study --plot``'s figures (PNG) to the study's folder.

    Parameters
    ----------
    plan : Study
        The study (``wind.speed`` among its axes).
    out : str or path
        Its output folder.

    Returns
    -------
    list of str
        The lines ``--plot`` prints: the critical wind speed (m/s) per tree, the files.
    """
    from .studies.report import plot_study

    if "wind.speed" not in plan.axes:
        raise TreedynError(f"{plan.name}: the figures need wind.speed among the axes")
    return plot_study(plan, read_study(out).to_pydict(), Path(out))


def expand(preset: PresetSource, out: str | os.PathLike | None = None) -> dict:
    """A preset as an explicit limb list with every physical parameter the simulator uses
    (``treedyn expand``; docs/design.md §7).

    Parameters
    ----------
    preset : str, path, dict or Preset
        As `load_preset` takes it.
    out : str or path, optional
        A ``.yaml`` or ``.yml`` file to write the explicit preset to, atomically.

    Returns
    -------
    dict
        The explicit preset, limbs in preset order: derived masses (kg), inertias (kg·m²),
        stiffnesses (N·m/rad) and damping (N·m·s/rad) written out, the spring rest rotations
        in force baked in, ``prestress: false``. It loads to the same simulation.
    """
    from .dynamics.expand import expand_preset
    from .model.preset import save_preset

    if out is not None and Path(out).suffix not in (".yaml", ".yml"):
        raise TreedynError(f"expand: the output must be a .yaml file, got '{out}'")
    data = expand_preset(_as_preset(preset))
    if out is not None:
        save_preset(data, out)
    return data


def export_gltf(run: str | os.PathLike | xarray.Dataset, out: str | os.PathLike,
                fps: float | None = None) -> int:
    """A run's motion as animated binary glTF 2.0 (``treedyn export``; docs/export.md): one
    node per limb with its rotation animated, +Y up, metres.

    Parameters
    ----------
    run : str, path or xarray.Dataset
        A ``treedyn run`` NPZ file, or a run's dataset (`run`, `read_run`).
    out : str or path
        The ``.glb`` file, written atomically.
    fps : float, optional
        Resample the animation at this many frames per second (default: the run's frames).

    Returns
    -------
    int
        Bytes written.
    """
    from .io.gltf_export import Motion, load_motion, motion_problem, raw_size, write_glb
    from .output_file import check_output
    from .resources import check_memory

    path = check_output(out, (".glb",), "the output")
    if isinstance(run, (str, os.PathLike)):
        motion, what = load_motion(run), str(run)
    else:
        motion, what = Motion.from_arrays(run_arrays(run)), "the run"
        problem = motion_problem(motion)
        if problem:
            raise TreedynError(f"the run cannot be exported: {problem}")
    # The file is built in memory, with its samples resampled at fps (a few copies of them).
    check_memory(4.0 * raw_size(motion, fps), f"the animation of {what}"
                 + (f" at {fps:g} frames per second" if fps else ""), "give a lower fps")
    return write_glb(motion, path, fps)


def render(preset: PresetSource, duration: float, out: str | os.PathLike, *,
           size: tuple[int, int] = (1280, 720), fps: float = 30.0) -> str:
    """The app's 3-D view of a simulation as an H.264 MP4 film (``treedyn render``;
    docs/export.md): duration·fps frames, each shown 1/fps s, frame k at simulated time k/fps.
    Drawn by the app (installed with treedyn) in a hidden window, or off-screen through EGL
    where there is no display.

    Parameters
    ----------
    preset : str, path, dict or Preset
        As `load_preset` takes it.
    duration : float
        Simulated time, s; at most an hour of film (108,000 frames).
    out : str or path
        The ``.mp4`` file, written atomically.
    size : (int, int)
        Frame width and height, px, even numbers.
    fps : float
        Frames per second of simulated time.

    Returns
    -------
    str
        One line: the file, its frames and size, the wall time taken.
    """
    from .io.frame_clock import film_frame_count
    from .output_file import check_output

    app = app_commands()
    app.check_film_size(*size)
    frames = duration * fps   # counted as a float: 1e300 s is no integer to make
    if frames > MAX_FILM_FRAMES or film_frame_count(duration, fps) > MAX_FILM_FRAMES:
        raise TreedynError(f"render: {duration:g} s at {fps:g} frames per second is "
                           f"{frames:.4g} frames, more than {MAX_FILM_FRAMES:,} (an hour at 30 "
                           f"frames per second): shorten the duration or lower the frame rate")
    path = check_output(out, (".mp4",), "the output")
    return app.render_film(_as_preset(preset), duration, path, size, fps)


MAX_FILM_FRAMES = 108_000   # a film of an hour at 30 frames per second


def app_commands():
    """The app's commands (`treedyn_app.commands`: the window, films, the frame benchmark),
    found through the entry point group ``treedyn.app``: the core never imports the app
    (docs/design.md §9)."""
    from importlib.metadata import entry_points

    found = entry_points(group="treedyn.app", name="commands")
    if not found:
        raise TreedynError("the app (treedyn_app) is not installed: reinstall treedyn "
                           "(pip install .)")
    return next(iter(found)).load()


def _as_preset(source: PresetSource) -> Preset:
    """A `Preset` of any source `load_preset` takes (a `Preset` given is copied)."""
    return load_preset(source)
