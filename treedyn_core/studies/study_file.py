"""Study files: a base preset, a run length and the axes to vary (docs/studies.md).

    study: spruce-storms           # name; the default output folder
    preset: conifer                # a shipped preset's name or a path (relative to this file)
    duration: 600                  # s simulated per run
    dt: 0.01                       # optional time step, s (default: the preset's)
    set:                           # optional fixed overrides for every run
      material.modulus_of_rupture: 3.6e7
    grid:                          # every combination
      wind.speed: {from: 5, to: 40, step: 2.5}
      wind.seed: [1, 2, 3]
    samples:                       # random draws, each combined with every grid point
      count: 20
      seed: 1
      axes:
        tuning.stiffness_scale: {from: 0.8, to: 1.2}   # uniform (ints: uniform integers)
        wind.direction_deg: [0, 90, 180]               # one of the values

Every axis value is checked against the preset schema exactly as ``--set KEY=VALUE`` checks
it (`preset.apply_overrides`), before any run; a problem is one `PresetError` line naming the
file, the line and the key path. Nothing here imports Dask.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PresetError, TreedynError
from ..model import schema
from ..model.preset import (ReadDeadline, apply_overrides, error_at_key, load_preset,
                            read_preset_text, read_yaml_mapping, resolve_preset)

TOP_KEYS = ("study", "preset", "duration", "dt", "set", "grid", "samples", "series")
SAMPLE_KEYS = ("count", "seed", "axes")
RANGE_KEYS = ("from", "to", "step")
MAX_RUNS = 10_000_000  # refuse studies whose run list would not fit in memory


@dataclass
class Study:
    """A validated study.

    runs : one dict per run, axis key path → value, in a fixed order (grid axes vary slowest
    first, like nested loops, then the samples).
    """

    name: str
    preset_path: Path
    duration: float                      # s simulated per run
    dt: float | None                     # s, None: the preset's simulation.dt
    fixed: dict[str, Any]                # key path → value for every run
    axes: list[str]                      # parameter key paths, column order
    runs: list[dict[str, Any]]
    series: bool = False                 # also write one NPZ of time series per run
    base_data: dict = field(repr=False, default_factory=dict)  # preset with `fixed` applied

    def fingerprint(self) -> str:
        """A hash of what every run shares (preset text, fixed overrides, duration, dt):
        results written under another fingerprint belong to another study."""
        shared = {"preset": hashlib.sha256(self.preset_path.read_bytes()).hexdigest(),
                  "fixed": self.fixed, "duration": self.duration, "dt": self.dt}
        return hashlib.sha256(json.dumps(shared, sort_keys=True).encode()).hexdigest()[:16]


def run_key(params: dict[str, Any]) -> str:
    """The identity of one run within its study: a hash of its parameter values."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


def assignment(key: str, value: Any) -> str:
    """``KEY=VALUE`` for `apply_overrides` (JSON is YAML)."""
    return f"{key}={json.dumps(value)}"


def field_of(key: str) -> schema.Field | None:
    """The schema leaf a key path names (``tree.limbs[2].stiffness`` → LIMB's), else None."""
    table: Any = schema.PRESET
    for part in key.split("."):
        name = part.split("[")[0]
        if not isinstance(table, dict) or name not in table:
            return None
        table = table[name]
        if isinstance(table, schema.Field) and "[" in part:
            table = {"limbs": schema.LIMB, "initial_state": schema.INITIAL_STATE_ENTRY}.get(
                table.kind)
    return table if isinstance(table, schema.Field) else None


def load_study(path: str | Path) -> Study:
    """Read and validate a study file; raises PresetError/TreedynError with one line."""
    path = Path(path)
    if not path.is_file():
        raise TreedynError(f"{path}: no such study file")
    deadline = ReadDeadline(path.name)
    raw, marks = read_yaml_mapping(read_preset_text(path, deadline), path.name, deadline)
    # The reader quotes keys that are not identifiers (grid.'wind.speed'); errors name them plain.
    marks.update({key.replace("'", ""): line for key, line in list(marks.items())})
    fail = lambda key, message: error_at_key(path.name, marks, key, message)  # noqa: E731
    for key in raw:
        if key not in TOP_KEYS:
            raise fail(key, f"unknown key (study files take {', '.join(TOP_KEYS)})")
    for key in ("study", "preset", "duration"):
        if key not in raw:
            raise fail("", f"missing key '{key}'")
    name = raw["study"]
    if not isinstance(name, str) or not name.strip() or "/" in name or name.startswith("."):
        raise fail("study", "must be a plain name (it names the output folder)")
    duration = _positive(raw["duration"], "duration", fail)
    dt = None if raw.get("dt") is None else _positive(raw["dt"], "dt", fail)
    if not isinstance(raw["preset"], str):
        raise fail("preset", "must be a shipped preset's name or a file path")
    local = path.parent / raw["preset"]
    try:
        preset_path = local if local.is_file() else resolve_preset(raw["preset"])
        preset = load_preset(preset_path)
    except TreedynError as error:
        raise fail("preset", str(error)) from None
    series = raw.get("series", False)
    if not isinstance(series, bool):
        raise fail("series", "must be true or false")

    fixed = _mapping(raw.get("set", {}), "set", fail)
    # applied together, as one --set line: a species, its height and DBH make one tree
    data = _applied(preset.data, fixed.items(), lambda key: f"set.{key}", fail)
    if dt is not None:
        _checked(data, "simulation.dt", dt, "dt", fail)

    grid = {key: _axis_values(values, f"grid.{key}", fail)
            for key, values in _mapping(raw.get("grid", {}), "grid", fail).items()}
    count, draws = _samples(raw.get("samples"), fail)
    both = set(grid) & set(draws)
    if both:
        raise fail("samples.axes", f"{sorted(both)[0]} is also a grid axis")
    for key, values in grid.items():
        for value in values:
            _checked(data, key, value, f"grid.{key}", fail)
    for key, spec in draws.items():
        for value in (spec if isinstance(spec, list) else spec[:2]):  # ranges: both ends
            _checked(data, key, value, f"samples.axes.{key}", fail)
    if not grid and not draws:
        raise fail("", "no axes: give a grid, samples, or both")

    # Counted before anything is drawn or combined: the limit bounds the memory too.
    points = math.prod(len(v) for v in grid.values())
    total = points * (count if draws else 1)
    if total > MAX_RUNS:
        where = "samples.count" if draws and count > MAX_RUNS // max(points, 1) else "grid"
        raise fail(where, f"{total:,} runs ({points:,} grid points × "
                          f"{count if draws else 1:,} samples): more than {MAX_RUNS:,}")
    sampled = _draw(draws, count, raw["samples"].get("seed", 0) if draws else 0)
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    runs = [{**combo, **draw} for combo in combos for draw in (sampled or [{}])]
    runs = list({run_key(run): run for run in reversed(runs)}.values())[::-1]  # once each
    return Study(name.strip(), Path(preset_path).resolve(), duration, dt, fixed,
                 list(grid) + list(draws), runs, series, data)


def _positive(value: Any, key: str, fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value > 0):
        raise fail(key, f"must be a finite number > 0 s, got {value!r}")
    return float(value)


def _mapping(value: Any, key: str, fail) -> dict:
    if not isinstance(value, dict):
        raise fail(key, "must be a mapping of key paths (e.g. wind.speed: ...)")
    return value


def _checked(data: dict, key: str, value: Any, where: str, fail) -> dict:
    """`data` with KEY=VALUE applied and validated like --set; a problem names `where`."""
    return _applied(data, [(key, value)], lambda _: where, fail)


def _applied(data: dict, pairs, where, fail) -> dict:
    """`data` with the (key, value) pairs applied in order and validated like one --set line
    (`apply_overrides`); a problem names where(key) of the pair it is told at."""
    texts = [(key, assignment(key, value)) for key, value in pairs]
    if not texts:
        return data
    try:
        return apply_overrides(data, [text for _, text in texts], source="study")
    except PresetError as error:
        message = str(error)
        for key, text in texts:
            prefix = f"study {text}: "
            if message.startswith(prefix):
                raise fail(where(key), message[len(prefix):]) from None
        raise fail(where(texts[-1][0]), message) from None


def _axis_values(spec: Any, key: str, fail) -> list:
    """An axis as a list: a list as given, or {from, to, step} expanded (both ends included
    when `to` is on the step)."""
    if isinstance(spec, list):
        if not spec:
            raise fail(key, "empty axis (give at least one value)")
        return spec
    if not isinstance(spec, dict):
        return [spec]
    unknown = set(spec) - set(RANGE_KEYS)
    if unknown or set(spec) != set(RANGE_KEYS):
        raise fail(key, "a range is {from: A, to: B, step: S}")
    start, stop, step = (spec[k] for k in RANGE_KEYS)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in (start, stop, step)):
        raise fail(key, "from, to and step must be finite numbers")
    if not step > 0:
        raise fail(key, f"step must be > 0, got {step}")
    if stop < start:
        raise fail(key, f"empty axis: to ({stop}) is below from ({start})")
    count = int(math.floor((stop - start) / step + 1e-9)) + 1
    if count > MAX_RUNS:
        raise fail(key, f"{count:,} values: more than {MAX_RUNS:,}")
    integral = all(isinstance(v, int) for v in (start, stop, step))
    return [start + i * step if integral else round(start + i * step, 12) for i in range(count)]


def _samples(spec: Any, fail) -> tuple[int, dict]:
    """(count, axis → [low, high, kind] range or list of choices)."""
    if spec is None:
        return 0, {}
    if not isinstance(spec, dict):
        raise fail("samples", "must be a mapping with count, seed and axes")
    unknown = set(spec) - set(SAMPLE_KEYS)
    if unknown:
        raise fail(f"samples.{sorted(unknown)[0]}",
                   f"unknown key (samples take {', '.join(SAMPLE_KEYS)})")
    count, seed = spec.get("count"), spec.get("seed", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise fail("samples.count", f"must be a whole number ≥ 1, got {count!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise fail("samples.seed", f"must be a whole number ≥ 0, got {seed!r}")
    axes = _mapping(spec.get("axes"), "samples.axes", fail)
    if not axes:
        raise fail("samples.axes", "empty: name at least one key path to sample")
    draws = {}
    for key, axis in axes.items():
        where = f"samples.axes.{key}"
        if isinstance(axis, list):
            if not axis:
                raise fail(where, "empty axis (give at least one value)")
            draws[key] = axis
            continue
        if not isinstance(axis, dict) or set(axis) != {"from", "to"}:
            raise fail(where, "a sampled axis is {from: A, to: B} or a list of values")
        low, high = axis["from"], axis["to"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   for v in (low, high)) or high < low:
            raise fail(where, "from and to must be finite numbers with from ≤ to")
        known = field_of(key)
        kind = "int" if known is not None and known.kind == "int" else "float"
        draws[key] = (low, high, kind)
    return count, draws


def _draw(draws: dict, count: int, seed: int) -> list[dict]:
    """`count` random draws of every sampled axis (numpy PCG64 of `seed`: same seed, same
    draws)."""
    if not draws:
        return []
    rng = np.random.default_rng(seed)
    columns = {}
    for key, spec in draws.items():
        if isinstance(spec, list):
            columns[key] = [spec[i] for i in rng.integers(0, len(spec), count)]
        elif spec[2] == "int":
            columns[key] = [int(v) for v in rng.integers(int(spec[0]), int(spec[1]) + 1, count)]
        else:
            columns[key] = [float(v) for v in rng.uniform(spec[0], spec[1], count)]
    return [{key: columns[key][i] for key in draws} for i in range(count)]
