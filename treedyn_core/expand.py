"""`treedyn expand`: a preset as an explicit limb list with every physical parameter the
simulator uses (DESIGN §7): derived masses, inertias, stiffnesses and damping written
out, the spring rest rotations in force baked in, ``prestress: false``."""

from __future__ import annotations

import copy

import numpy as np

from . import so3
from .simulation import Simulation


def _diagonal(matrix: np.ndarray) -> list[float] | None:
    """The diagonal of a matrix that is exactly diagonal, else None."""
    if np.any(matrix - np.diag(np.diag(matrix))):
        return None
    return [float(x) for x in np.diag(matrix)]


def expanded_data(sim: Simulation) -> dict:
    """The explicit preset dict of a simulation's tree, limbs in preset order."""
    tree = sim.tree
    data = copy.deepcopy(sim.data)
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
        if sim.prestressed:
            limb["spring_rest_rotation_deg"] = [
                float(x) for x in np.degrees(so3.log(sim.spring_C_rel[i]))]
        limbs.append(limb)
    data["tree"] = {"limbs": limbs}
    data["simulation"]["prestress"] = False
    return data
