"""One run of a study: a preset with the run's parameters, simulated, reduced to one row.

`run_row` is the task each Dask worker executes; it is a plain function, so the same run
done without Dask gives the same row bit for bit. It never raises: a run that diverges or
fails is a row with its status and error.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import signal

from .. import __version__
from ..analysis.fragility import breaking_moment, stem_diameter_at
from ..errors import SimulationDiverged
from ..io.run import default_every, write_npz
from ..model.preset import apply_overrides, load_preset
from ..simulation import Simulation
from .study_file import assignment

OUTPUTS = ("peak_base_moment_Nm", "p99_base_moment_Nm", "peak_crown_displacement_m",
           "mean_crown_displacement_m", "peak_aero_force_N", "sway_frequency_hz")
# canopy_top_wind_m_s: the mean wind u_h at the top of the stand's canopy (``wind.canopy``), in
# which ForestGALES states its turning moments; on open ground, the mean wind at the tree's top.
TREE_OUTPUTS = ("dbh_m", "height_m", "breaking_moment_Nm", "canopy_top_wind_m_s")
STATUS = ("ok", "diverged", "failed")
SWAY_SEGMENT = 60.0  # s, Welch segment of the sway spectrum: resolution 1/60 Hz


@dataclass(frozen=True)
class RunSpec:
    """What a worker needs for one run (small: the preset travels as a path)."""

    index: int                      # position in the study's run list
    key: str                        # `study_file.run_key(params)`
    preset_path: str
    fixed: str                      # JSON of the study's fixed overrides
    params: dict[str, Any]
    duration: float                 # s
    dt: float | None                # s
    series_dir: str | None = None   # write DIR/KEY.npz of the time series when given


@functools.lru_cache(maxsize=4)
def _base_data(preset_path: str, fixed: str) -> dict:
    """The study's preset with its fixed overrides, validated (cached per worker process)."""
    data = load_preset(preset_path).data
    overrides = [assignment(key, value) for key, value in json.loads(fixed).items()]
    return apply_overrides(data, overrides) if overrides else data


def run_row(spec: RunSpec) -> dict[str, Any]:
    """Simulate `spec` and return its row: run, run_key, parameters, outputs, tree measures,
    status, error, wall_s (s of wall time, setup included), treedyn_version."""
    start = time.perf_counter()
    row: dict[str, Any] = {"run": spec.index, "run_key": spec.key, **spec.params}
    row.update({name: float("nan") for name in OUTPUTS + TREE_OUTPUTS})
    status, error = "ok", None
    try:
        data = _base_data(spec.preset_path, spec.fixed)
        data = apply_overrides(data, [assignment(k, v) for k, v in spec.params.items()],
                               source="study")
        # one thread a run: a study's workers already fill the cores, one run each
        sim = Simulation.from_data(data, dt=spec.dt, threads=1)
        dbh = stem_diameter_at(sim.tree)
        row.update(dbh_m=dbh, height_m=sim.tree.height,
                   breaking_moment_Nm=breaking_moment(data["material"]["modulus_of_rupture"],
                                                      dbh),
                   canopy_top_wind_m_s=canopy_top_wind(sim))
        series = record(sim, spec.duration)
        row.update(reduce(series, sim))
        if spec.series_dir:
            write_npz(series, Path(spec.series_dir) / f"{spec.key}.npz")
    except SimulationDiverged as exc:
        status, error = "diverged", str(exc)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a row, never ends a study
        status, error = "failed", f"{type(exc).__name__}: {exc}"
    row.update(status=status, error=error, wall_s=time.perf_counter() - start,
               treedyn_version=__version__)
    return row


def canopy_top_wind(sim: Simulation) -> float:
    """u_h, m/s: the mean wind at the canopy top in a stand, at the tree's top on open ground."""
    speed = sim.wind.canopy_top_speed
    if speed is None:
        speed = float(sim.wind.mean_speed(sim.tree.rest_base[0, 2] + sim.tree.height))
    return speed


def record(sim: Simulation, duration: float) -> dict[str, np.ndarray]:
    """Step `sim` for `duration` s, one step at a time, recording at t = 0 and after every
    step the base moment |M| (N·m, the root joint's moment, as `treedyn run --probe`) and the
    crown top's position (m); the total aerodynamic force (N) at the frame rate of `treedyn
    run` (about 30 per simulated second)."""
    steps = int(round(duration / sim.dt))
    every = default_every(sim.dt)
    top = sim.crown_top()
    t = np.arange(steps + 1) * sim.dt
    moment = np.empty(steps + 1)
    crown = np.empty((steps + 1, 3))
    force = np.empty(steps // every + 1)
    sim.warm_up()
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run ends in SimulationDiverged
        for i in range(steps + 1):
            if i > 0:
                sim.step(1)
            moment[i] = np.linalg.norm(sim.root_moment())
            crown[i] = sim.tip[top]
            if i % every == 0:
                force[i // every] = np.linalg.norm(sim.aerodynamic_forces().sum(axis=0))
    rest = sim.tree.rest_tip[top]
    return {"t": t, "base_moment": moment, "crown": crown, "crown_rest": rest,
            "aero_force": force}


def reduce(series: dict[str, np.ndarray], sim: Simulation) -> dict[str, float]:
    """The outputs of a recorded run (units in their names)."""
    moment = series["base_moment"]
    offset = series["crown"] - series["crown_rest"]
    distance = np.linalg.norm(offset, axis=1)
    return {"peak_base_moment_Nm": float(moment.max()),
            "p99_base_moment_Nm": float(np.percentile(moment, 99)),
            "peak_crown_displacement_m": float(distance.max()),
            "mean_crown_displacement_m": float(distance.mean()),
            "peak_aero_force_N": float(series["aero_force"].max()),
            "sway_frequency_hz": sway_frequency(offset[:, :2], sim.dt)}


def sway_frequency(displacement: np.ndarray, dt: float) -> float:
    """The frequency, Hz, of the largest peak of the power spectrum of the crown's horizontal
    *velocity* (`displacement`: (n,) or (n, 2) m, sampled every `dt` s; Welch, SWAY_SEGMENT s
    segments; 0 Hz excluded); nan for a still crown.

    The velocity, not the displacement: gusts put most of the displacement's power at the
    lowest frequencies, below the tree's resonance; weighting by ω² leaves the resonant peak
    on top (a damped oscillator driven by slow gusts, tests/test_study_run.py).
    """
    velocity = np.gradient(np.asarray(displacement, dtype=float), dt, axis=0)
    if velocity.shape[0] < 4 or not np.ptp(velocity, axis=0).max() > 0:
        return float("nan")
    segment = min(velocity.shape[0], int(round(SWAY_SEGMENT / dt)))
    frequency, power = signal.welch(velocity, fs=1.0 / dt, nperseg=segment, detrend="constant",
                                    axis=0)
    if power.ndim == 2:
        power = power.sum(axis=1)
    return float(frequency[1:][np.argmax(power[1:])])
