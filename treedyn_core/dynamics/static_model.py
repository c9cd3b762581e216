"""The static model of a preset: what a `Simulation` is built from and never changes.

`Model.from_data(data)` builds it from a validated preset dict: the tree's arrays
(`tree.Tree`), gravity, the limbs' inertias about their bases, whether the springs are
prestressed, the preset's initial joint state, and whether there is any drag at all.
What changes as the tree moves is a `simulation.State`; the settings that may change between
two steps (scales, integrator, dt, loads, the wind's targets) are the `Simulation`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import TreedynError
from ..model.tree import Tree, assemble_tree, preset_limbs
from .damping import stiffness_proportional


def build_tree(data: dict, error: Callable[[str, str], Exception] | None = None,
               *, damping_model: bool = True) -> Tree:
    """Build the tree of a validated preset (`preset.Preset.data`), with its damping model.

    `error(key_path, message)` makes the exception for problems only visible now (a generated
    tree too large, a limb that cannot be supported); default: PresetError("key: message").
    `damping_model=False` leaves the per-joint damping of the material's rule in place of
    ``stiffness_proportional`` damping, whose lowest mode needs compiled kernels: for drawing a
    tree before they are ready.
    """
    limbs = preset_limbs(data, error)
    tree = assemble_tree(data, limbs, error)
    if damping_model and data["material"].get("damping_model") == "stiffness_proportional":
        C = stiffness_proportional(tree, data["material"]["damping_ratio"],
                                   np.asarray(data["simulation"]["gravity"], dtype=float),
                                   data["tuning"]["stiffness_scale"])
        given = np.array([limb["damping"] is not None for limb in
                          (limbs[k] for k in tree.preset_index)], dtype=bool)
        tree.damping = np.where(given[:, None, None], tree.damping, C)
    return tree


@dataclass(frozen=True)
class Model:
    """tree : the limbs' static arrays, breadth-first order;  gravity : (3,) m/s², inertial;
    inertia_base : (N, 3, 3) kg m², each limb's inertia about its base, limb axes;
    prestress : the preset asks for prestressed springs;  initial_state : [(limb index,
    rotation vector (3,) rad, joint rate (3,) rad/s)] from the preset;  has_drag : the preset
    has air and a drag coefficient (no drag: no aerodynamic force at all, still-air damping
    included)."""

    tree: Tree
    gravity: np.ndarray
    inertia_base: np.ndarray
    prestress: bool
    initial_state: list
    has_drag: bool

    @classmethod
    def from_data(cls, data: dict, error=None) -> "Model":
        """The model of a validated preset dict; error(key, message) makes the exception for a
        bad key (a `preset.Preset`'s ``error``), else `TreedynError`."""
        tree = build_tree(data, error)
        c = tree.com_offset
        parallel_axis = (np.einsum("ni,ni->n", c, c)[:, None, None] * np.eye(3)
                         - np.einsum("ni,nj->nij", c, c))
        wind = data["wind"]
        return cls(
            tree=tree,
            gravity=np.array(data["simulation"]["gravity"], dtype=float),
            inertia_base=tree.inertia_com + tree.mass[:, None, None] * parallel_axis,
            prestress=bool(data["simulation"]["prestress"]),
            initial_state=_initial_state(data, tree, error),
            has_drag=bool(wind["drag_coefficient"] > 0 or (
                wind["leaf_drag_coefficient"] > 0 and tree.leaf_area.any())))


def _initial_state(data: dict, tree: Tree, error) -> list[tuple[int, np.ndarray, np.ndarray]]:
    out = []
    for k, entry in enumerate(data.get("initial_state") or []):
        name = entry["limb"]
        if name not in tree.index_of:
            message = f"no limb named '{name}'"
            raise (error(f"initial_state[{k}].limb", message) if error
                   else TreedynError(f"initial_state[{k}].limb: {message}"))
        out.append((tree.index_of[name], np.radians(entry["rotation_deg"]),
                    np.array(entry["angular_velocity"], dtype=float)))
    return out
