"""Validated preset dicts built in code, for tests that need a tree without a file."""

from __future__ import annotations

import copy

from treedyn_core.model.preset import validate


def preset_data(limbs: list[dict] | None = None, generator: dict | None = None,
                **sections) -> dict:
    """A complete, validated preset dict: explicit `limbs` (partial limb mappings) or a
    `generator` mapping, plus sections given as keyword mappings, e.g.
    ``preset_data(limbs, simulation={"gravity": [0, 0, 0]}, wind={"speed": 0})``.

    These trees start at rest (``simulation.start: rest``) unless the simulation section says
    otherwise: the tests compare loads and motions from a known pose (a shipped preset's run
    starts in balance under the mean wind, docs/design.md §6.7)."""
    raw: dict = {"version": 1, "tree": {"limbs": limbs} if limbs is not None else
                 {"generator": generator or {}}}
    for key, value in sections.items():
        raw[key] = copy.deepcopy(value)
    raw.setdefault("simulation", {}).setdefault("start", "rest")
    return validate(raw, "<test>")
