"""`treedyn expand`: a preset as an explicit limb list with every physical parameter the
simulator uses (docs/design.md §7): derived masses, inertias, stiffnesses and damping written
out, the spring rest rotations in force baked in, ``prestress: false``."""

from __future__ import annotations

import copy

import numpy as np

from ..model.tree import Tree
from ..numerics import so3
from .equilibrium import start_of
from .prestress import prestressed_spring_rotations
from .seed_model import seed_prestressed_spring_rotations
from .static_model import build_tree


def _diagonal(matrix: np.ndarray) -> list[float] | None:
    """The diagonal of a matrix that is exactly diagonal, else None."""
    if np.any(matrix - np.diag(np.diag(matrix))):
        return None
    return [float(x) for x in np.diag(matrix)]


def expand_preset(preset) -> dict:
    """The explicit preset dict of a loaded preset (`preset.Preset`), limbs in preset order:
    the spring rest rotations of the prestressed rest pose baked in, if prestress is on."""
    data = preset.data
    tree = build_tree(data, preset.error)
    for k, entry in enumerate(data.get("initial_state") or []):
        # Checked here, against the preset, or saving would name the output file instead.
        if entry["limb"] not in tree.index_of:
            raise preset.error(f"initial_state[{k}].limb", f"no limb named '{entry['limb']}'")
    prestressed = data["simulation"]["prestress"] and not tree.spring_given.any()
    solve = (seed_prestressed_spring_rotations if data["simulation"]["model"] == "seed"
             else prestressed_spring_rotations)
    spring = (solve(tree, np.array(data["simulation"]["gravity"], float),
                    data["tuning"]["stiffness_scale"]) if prestressed else None)
    return expanded_data(data, tree, spring)


def expanded_data(data: dict, tree: Tree, spring_C_rel: np.ndarray | None) -> dict:
    """`data` with its tree written as explicit limbs; `spring_C_rel` (N, 3, 3), child → parent,
    breadth-first, the spring rest orientations to bake in (None: keep the limbs' own)."""
    data = copy.deepcopy(data)
    limbs = []
    for k, spec in enumerate(tree.limb_specs):
        i = tree.index_of[spec["name"]]
        limb = copy.deepcopy(spec)
        limb["mass"] = float(tree.mass[i])
        # A derived matrix that is not diagonal in limb axes (a tilted `direction`) cannot be
        # written as a 3-vector: it stays null and is derived again by the same rule on load.
        for key, matrix in (("inertia", tree.inertia_com[i]), ("stiffness", tree.stiffness[i]),
                            ("damping", tree.damping[i])):
            if limb[key] is None:
                limb[key] = _diagonal(matrix)
        if spring_C_rel is not None:
            limb["spring_rest_rotation_deg"] = [
                float(x) for x in np.degrees(so3.log(spring_C_rel[i]))]
        limbs.append(limb)
    data["tree"] = {"limbs": limbs}
    data["simulation"]["start"] = start_of(data)   # as the prestressed preset starts
    data["simulation"]["prestress"] = False
    return data
