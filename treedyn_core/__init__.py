"""treedyn's core: tree model, presets, physics, wind and command-line back ends.

The public API is the names in `__all__` (docs/api.md), stable under semantic versioning:
a change to them is deliberate and documented. They are loaded on first use (PEP 562), so
``import treedyn_core`` stays light: no numba, Qt, vispy, Dask, matplotlib or xarray.

Arranged by concern (docs/design.md §9), each layer importing only the layers below it
(an import contract in pyproject.toml checks it): `numerics`, `model`, `dynamics`,
`integrators`, then `simulation` and `warm_up`, then `analysis`, `io`, `studies`, `bench`,
and over them all `api` and `cli`. Never imports Qt, vispy or the app.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name → the module that defines it
_PUBLIC = {
    "load_preset": "api", "override_assignments": "api", "new_simulation": "api", "run": "api",
    "run_arrays": "api", "read_run": "api", "modes": "api", "pull": "api",
    "load_study": "api", "study": "api", "read_study": "api", "study_fragility": "api",
    "study_figures": "api", "expand": "api", "export_gltf": "api", "render": "api",
    "Preset": "model.preset", "Simulation": "simulation", "ModeResult": "analysis.modes",
    "PullResult": "analysis.pull", "Study": "studies.study_file", "Outcome": "studies.study",
    "Fragility": "analysis.fragility",
    "TreedynError": "errors", "PresetError": "errors", "SimulationDiverged": "errors",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'treedyn_core' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
