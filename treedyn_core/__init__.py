"""treedyn's core: tree model, presets, physics, wind and command-line back ends.

The public API is the names in `__all__` (docs/api.md), stable under semantic versioning:
a change to them is deliberate and documented. They are loaded on first use (PEP 562), so
``import treedyn_core`` stays light: no numba, Qt, vispy, Dask, matplotlib or xarray.

Never imports Qt or vispy (a test checks it).
"""

from __future__ import annotations

import importlib
import sys
import types

__version__ = "0.1.0"

# public name → the module that defines it
_PUBLIC = {
    "load_preset": "api", "override_assignments": "api", "new_simulation": "api", "run": "api",
    "run_arrays": "api", "read_run": "api", "modes": "api", "pull": "api",
    "load_study": "api", "study": "api", "read_study": "api", "study_fragility": "api",
    "study_figures": "api",
    "Preset": "preset", "Simulation": "simulation", "ModeResult": "modes",
    "PullResult": "pull", "Study": "study_file", "Outcome": "study", "Fragility": "fragility",
    "TreedynError": "errors", "PresetError": "errors", "SimulationDiverged": "errors",
}

__all__ = ["__version__", *_PUBLIC]


# API functions named like the core modules that implement them (`treedyn_core.run` the
# function, `treedyn_core.run` the module in sys.modules): importing the module does not
# replace the function. The modules stay importable by their full names
# (``from treedyn_core.run import simulate``, ``importlib.import_module("treedyn_core.run")``).
_NAMED_LIKE_A_MODULE = frozenset({"run", "modes", "pull", "study"})


class _Package(types.ModuleType):
    """The package's module type: keeps the API's functions over same-named submodules."""

    def __setattr__(self, name: str, value) -> None:
        if name in _NAMED_LIKE_A_MODULE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'treedyn_core' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
