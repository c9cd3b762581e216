"""A preset saved as its recipe (docs/design.md §6.6): the file as its author wrote it — the
generator's keys or the explicit limb list, a species and its size — with only the keys whose
values were changed written into it.

`validate` fills in defaults and derives a species' keys; writing that out would turn a
1.4 KB recipe into every derived number, so that a saved tree could no longer be edited by its
recipe. Here the saved mapping is the preset's `raw` one, and a key is written only where the
preset (with the changed settings) differs from what `raw` validates to.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from .preset import Preset, set_key, validate, write_preset_file


def recipe(preset: Preset, settings: dict[str, Any] | None = None) -> dict:
    """The mapping to save for `preset` with `settings` applied.

    Parameters
    ----------
    preset : Preset
        Its `raw` mapping is the recipe kept; its `data` may differ from it (overrides).
    settings : dict, optional
        Key path → value (``{"wind.speed": 12.0, "tuning.stiffness_scale": 2.0}``), the
        values changed since the preset was loaded, in the preset's units.

    Returns
    -------
    dict
        `preset.raw` with every key where the preset and `settings` differ from the raw
        mapping's validated values set to their value; a section that differs in its kind
        (explicit limbs instead of a generator) or a list that differs is written whole.
    """
    data = copy.deepcopy(preset.data)
    for key, value in (settings or {}).items():
        set_key(data, key, value, "the app's setting")
    if preset.raw is None:
        return data
    out = copy.deepcopy(preset.raw)
    for path, value in _differences(validate(preset.raw, preset.filename), data):
        _put(out, path, value)
    return out


def save_recipe(preset: Preset, path: str | os.PathLike,
                settings: dict[str, Any] | None = None) -> dict:
    """Write `recipe(preset, settings)` to `path` atomically, after checking that it is a
    valid preset (PresetError names the problem); returns the mapping written."""
    data = recipe(preset, settings)
    validate(data, Path(path).name)
    write_preset_file(data, path)
    return data


def _differences(base: dict, target: dict, path: tuple[str, ...] = ()):
    """(key path, value) of every leaf of `target` that differs from `base`; two mappings with
    the same keys are compared key by key, anything else as a whole."""
    for key, value in target.items():
        old = base.get(key)
        if isinstance(value, dict) and isinstance(old, dict) and value.keys() == old.keys():
            yield from _differences(old, value, path + (key,))
        elif key not in base or old != value:
            yield path + (key,), copy.deepcopy(value)


def _put(out: dict, path: tuple[str, ...], value: Any) -> None:
    """Set `out[path[0]][path[1]]… = value`, making the mappings on the way (a section given
    as null in the file is one)."""
    for key in path[:-1]:
        if not isinstance(out.get(key), dict):
            out[key] = {}
        out = out[key]
    out[path[-1]] = value
