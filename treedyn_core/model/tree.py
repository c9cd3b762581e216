"""The tree model: topology and every limb's static properties, as arrays.

Limbs are stored in breadth-first order (parents before children, the children
of one parent contiguous, each depth level a contiguous slice) so that the
compiled kernels sweep them outward and inward with plain loops. `preset_index`
maps back to the preset's order (explicit limbs) or the generator's order,
which every output uses.

Frames (docs/design.md §1): a limb's own axes are its body frame; ``rest_C_IF`` maps
limb → inertial coordinates, ``rest_C_rel`` and ``spring_C_rel`` map child →
parent limb coordinates.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from ..errors import PresetError
from ..numerics import so3


@dataclass
class Tree:
    """Topology and static properties of N limbs, breadth-first order.

    Attributes
    ----------
    names : list[str]
    parent : (N,) int64, index of the parent limb, −1 for the root (index 0)
    depth : (N,) int64, 0 at the root
    level_start : (D + 2,) int64, limbs of depth d are ``level_start[d]:level_start[d+1]``
    child_start, child_count : (N,) int64, children of i are ``child_start[i]:+child_count[i]``
    preset_index : (N,) int64, position of each limb in the preset's (or generator's) order
    length : (N,) m;  radius : (N,) m;  leaf_area : (N,) m²
    u : (N, 3) unit limb direction, limb axes
    attach : (N,) fraction of the parent's length where the base sits
    base_offset : (N, 3) m, base relative to the parent's base, parent axes
        (the root: its base in the inertial frame, ``root_position``)
    mass : (N,) kg
    com_offset : (N, 3) m, centre of mass relative to the base, limb axes
    inertia_com : (N, 3, 3) kg m², about the centre of mass, limb axes
    stiffness : (N, 3, 3) N m/rad, joint spring K in the child's limb axes (unscaled)
    damping : (N, 3, 3) N m s/rad, joint damper C in the child's limb axes (unscaled)
    rest_C_rel : (N, 3, 3) rest orientation relative to the parent's rest frame, child → parent
    spring_C_rel : (N, 3, 3) where the spring exerts no torque, child → parent (from the
        preset; prestress replaces it in the simulation)
    spring_given : (N,) bool, the preset gave ``spring_rest_rotation_deg``
    limb_specs : the limb mappings as given (explicit or generated), preset order
    rest_C_IF : (N, 3, 3) rest orientation, limb → inertial
    rest_base, rest_tip : (N, 3) m, inertial positions at rest
    """

    names: list[str]
    parent: np.ndarray
    depth: np.ndarray
    level_start: np.ndarray
    child_start: np.ndarray
    child_count: np.ndarray
    preset_index: np.ndarray
    length: np.ndarray
    radius: np.ndarray
    leaf_area: np.ndarray
    u: np.ndarray
    attach: np.ndarray
    base_offset: np.ndarray
    mass: np.ndarray
    com_offset: np.ndarray
    inertia_com: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    rest_C_rel: np.ndarray
    spring_C_rel: np.ndarray
    spring_given: np.ndarray
    rest_C_IF: np.ndarray
    rest_base: np.ndarray
    rest_tip: np.ndarray
    index_of: dict[str, int] = field(repr=False, default_factory=dict)
    limb_specs: list[dict] = field(repr=False, default_factory=list)  # preset order, as given

    @property
    def n(self) -> int:
        """Number of limbs."""
        return len(self.names)

    @property
    def height(self) -> float:
        """Height of the highest rest point above the root's base, m (at least the root length)."""
        top = max(self.rest_tip[:, 2].max(), self.rest_base[:, 2].max())
        return float(max(top - self.rest_base[0, 2], self.length[0]))

    def children(self, i: int) -> range:
        """Indices of the children of limb i."""
        return range(self.child_start[i], self.child_start[i] + self.child_count[i])

    def subtree(self, i: int) -> list[int]:
        """Indices of limb i and all its descendants, breadth-first."""
        return list(breadth_first(self, i))

    def ancestors(self, i: int) -> list[int]:
        """Indices from the parent of i up to the root."""
        out = []
        while self.parent[i] >= 0:
            i = int(self.parent[i])
            out.append(i)
        return out

    def to_preset_order(self, a: np.ndarray, axis: int = 0) -> np.ndarray:
        """Per-limb values rearranged from breadth-first to preset order along `axis`."""
        internal = np.empty_like(self.preset_index)
        internal[self.preset_index] = np.arange(self.n)
        return np.take(a, internal, axis=axis)

    def from_preset_order(self, a: np.ndarray, axis: int = 0) -> np.ndarray:
        """Per-limb values rearranged from preset to breadth-first order along `axis`."""
        return np.take(a, self.preset_index, axis=axis)


def breadth_first(tree: Tree, start: int = 0) -> Iterator[int]:
    """Limb indices of the subtree at `start`, breadth-first (parents before children)."""
    queue = deque([start])
    while queue:
        i = queue.popleft()
        yield i
        queue.extend(tree.children(i))


def depth_first(tree: Tree, start: int = 0) -> Iterator[int]:
    """Limb indices of the subtree at `start`, depth-first pre-order."""
    stack = [start]
    while stack:
        i = stack.pop()
        yield i
        stack.extend(reversed(tree.children(i)))


def _vec(value, n: int = 3) -> np.ndarray:
    return np.asarray(value, dtype=float).reshape(n)


def _axis_matrix(value) -> np.ndarray:
    """3×3 matrix of a scalar (isotropic) or 3-vector (diagonal in limb x, y, z) setting."""
    if np.isscalar(value):
        return float(value) * np.eye(3)
    return np.diag(_vec(value))


def _given(ordered: list[dict], key: str) -> Iterator[tuple[int, np.ndarray]]:
    """(index, 3×3 matrix) of the limbs whose mapping gives ``key`` (inertia, stiffness,
    damping)."""
    for i, limb in enumerate(ordered):
        if limb[key] is not None:
            yield i, _axis_matrix(limb[key])


def _axial_split(along: np.ndarray, across: np.ndarray, u: np.ndarray) -> np.ndarray:
    """(N, 3, 3): ``along`` u uᵀ + ``across`` (1 − u uᵀ), unit axes u (N, 3), values (N,)."""
    uu = u[:, :, None] * u[:, None, :]
    return across[:, None, None] * (np.eye(3) - uu) + along[:, None, None] * uu


def limb_frames(u: np.ndarray) -> np.ndarray:
    """Orthonormal frames (N, 3, 3), columns (e1, e2, u), in limb axes, of unit axes u (N, 3);
    e1 is the limb x axis made orthogonal to u (or y when u is along x): the frames of material
    stiffness and damping."""
    trial = np.zeros_like(u)
    along_x = np.abs(u[:, 0]) >= 0.9
    trial[~along_x, 0] = 1.0
    trial[along_x, 1] = 1.0
    e1 = trial - np.einsum("ni,ni->n", trial, u)[:, None] * u
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    return np.stack([e1, np.cross(u, e1), u], axis=-1)


def default_error(error: Callable[[str, str], Exception] | None
                  ) -> Callable[[str, str], Exception]:
    """`error(key_path, message)` or, if None, one that makes PresetError("key: message")."""
    return error or (lambda key, message: PresetError(f"{key}: {message}"))


def preset_limbs(data: dict, error: Callable[[str, str], Exception] | None = None) -> list[dict]:
    """The limb dicts of a validated preset (`preset.Preset.data`), in preset order: listed,
    read from its scan, or generated from its species."""
    error = default_error(error)
    spec = data["tree"]
    if "limbs" in spec and spec["limbs"] is not None:
        return spec["limbs"]
    if spec.get("scan") is not None:
        from .scan import scan_limbs

        return scan_limbs(spec["scan"], data, error=error).limbs
    from .generator import generate

    return generate(spec["generator"], error, data["material"])


def assemble_tree(data: dict, limbs: list[dict],
                  error: Callable[[str, str], Exception] | None = None) -> Tree:
    """The tree of a validated preset's `limbs` (`preset_limbs`), with the per-joint damping
    of the material's rule (`dynamics.static_model.build_tree` applies the other damping
    models, which need the tree's modes).

    `error(key_path, message)` makes the exception for problems only visible now (a limb that
    cannot be supported); default: PresetError("key: message").
    """
    error = default_error(error)
    tree = _tree_from_limbs(limbs, data["material"], _vec(data["root_position"]))
    if not tree.mass.min() > 0.0:
        # ρ π r² L underflows for radii below ~1e-160 m: a limb without mass has no dynamics.
        i = int(np.argmin(tree.mass))
        raise error("tree.generator" if data["tree"].get("limbs") is None else "tree.limbs",
                    f"limb '{tree.names[i]}' would weigh 0 kg (radius {tree.radius[i]:.3g} m "
                    f"is too thin for its mass to be a number); give it a larger radius")
    return tree


def _breadth_first_order(limbs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Preset indices in breadth-first order, and each one's parent preset index."""
    index = {limb["name"]: k for k, limb in enumerate(limbs)}
    parent_of = np.array([-1 if limb["parent"] is None else index[limb["parent"]]
                          for limb in limbs], dtype=np.int64)
    children: list[list[int]] = [[] for _ in limbs]
    for k, p in enumerate(parent_of):
        if p >= 0:
            children[p].append(k)
    root = int(np.flatnonzero(parent_of < 0)[0])
    order = [root]
    head = 0
    while head < len(order):
        order.extend(children[order[head]])
        head += 1
    return np.array(order, dtype=np.int64), parent_of


def _tree_from_limbs(limbs: list[dict], material: dict, root_position: np.ndarray) -> Tree:
    order, parent_of = _breadth_first_order(limbs)
    n = len(order)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    parent = np.where(parent_of[order] >= 0, position[np.maximum(parent_of[order], 0)], -1)
    depth = np.zeros(n, dtype=np.int64)
    for i in range(1, n):
        depth[i] = depth[parent[i]] + 1
    level_start = np.searchsorted(depth, np.arange(depth.max() + 2))
    child_count = np.bincount(parent[1:], minlength=n).astype(np.int64)
    first_child = np.full(n, n, dtype=np.int64)
    np.minimum.at(first_child, parent[1:], np.arange(1, n))
    child_start = np.where(child_count > 0, first_child, 0)

    ordered = [limbs[k] for k in order]
    length = np.array([limb["length"] for limb in ordered], dtype=float)
    radius = np.array([limb["radius"] for limb in ordered], dtype=float)
    leaf_area = np.array([limb["leaf_area"] for limb in ordered], dtype=float)
    attach = np.array([limb["attach"] for limb in ordered], dtype=float)
    u = np.array([limb["direction"] for limb in ordered], dtype=float)
    u /= np.linalg.norm(u, axis=1, keepdims=True)

    base_offset = np.empty((n, 3))
    base_offset[0] = root_position
    base_offset[1:] = (attach[1:] * length[parent[1:]])[:, None] * u[parent[1:]]

    density = material["density"]
    mass = np.array([density * np.pi * r * r * L if limb["mass"] is None else limb["mass"]
                     for limb, r, L in zip(ordered, radius, length)])
    com_offset = np.array([limb["com"] for limb in ordered])[:, None] * length[:, None] * u

    axial = 0.5 * mass * radius ** 2
    transverse = mass * (3.0 * radius ** 2 + length ** 2) / 12.0
    inertia_com = _axial_split(axial, transverse, u)
    for i, given in _given(ordered, "inertia"):
        inertia_com[i] = given

    rest_C_rel = so3.exp_many(np.radians([limb["rest_rotation_deg"] for limb in ordered]))
    spring_given = np.array([limb["spring_rest_rotation_deg"] is not None for limb in ordered])
    spring_C_rel = rest_C_rel.copy()
    given = np.flatnonzero(spring_given)
    spring_C_rel[given] = so3.exp_many(np.radians(
        [_vec(ordered[i]["spring_rest_rotation_deg"]) for i in given]))

    rest_C_IF, rest_base = pose_by_levels(parent, level_start, rest_C_rel, base_offset)
    rest_tip = rest_base + length[:, None] * np.einsum("nij,nj->ni", rest_C_IF, u)

    stiffness = _stiffness(ordered, material, parent, child_count, length, radius, u)
    subtree_J = subtree_inertia_about_joints(parent, level_start, mass, inertia_com, com_offset,
                                              rest_C_IF, rest_base)
    damping = _damping(ordered, material, stiffness, subtree_J, u)

    return Tree(
        names=[limb["name"] for limb in ordered], parent=parent, depth=depth,
        level_start=level_start, child_start=child_start, child_count=child_count,
        preset_index=order, length=length, radius=radius, leaf_area=leaf_area, u=u,
        attach=attach, base_offset=base_offset, mass=mass, com_offset=com_offset,
        inertia_com=inertia_com, stiffness=stiffness, damping=damping, rest_C_rel=rest_C_rel,
        spring_C_rel=spring_C_rel, spring_given=spring_given, rest_C_IF=rest_C_IF,
        rest_base=rest_base, rest_tip=rest_tip,
        index_of={limb["name"]: i for i, limb in enumerate(ordered)},
        limb_specs=limbs,
    )


def pose_by_levels(parent, level_start, C_rel, base_offset):
    """Orientations C_IF (N, 3, 3) limb → inertial and base positions (N, 3) m, inertial, of
    the tree posed with joint rotations C_rel (N, 3, 3) child → parent axes (the rest pose
    with the rest rotations); one vectorised sweep per depth level."""
    n = len(parent)
    C_IF = np.empty((n, 3, 3))
    base = np.empty((n, 3))
    C_IF[0] = C_rel[0]
    base[0] = base_offset[0]
    for d in range(1, len(level_start) - 1):
        s = slice(level_start[d], level_start[d + 1])
        p = parent[s]
        C_IF[s] = C_IF[p] @ C_rel[s]
        base[s] = base[p] + np.einsum("nij,nj->ni", C_IF[p], base_offset[s])
    return C_IF, base


def _stiffness(ordered, material, parent, child_count, length, radius, u):
    """Joint stiffness K (N, 3, 3), child limb axes: given, or from material by the ℓ rule
    (docs/design.md §6: ℓ = (L_parent + L_child)/2 for an only child, L_child/2 at the root and at
    a branching); K = k_bend (1 − uuᵀ) + k_twist uuᵀ."""
    E_Y = material["youngs_modulus"]
    G = E_Y / (2.0 * (1.0 + material["poisson_ratio"]))
    p = np.maximum(parent, 0)  # the root's own index stands in for its missing parent
    only_child = (parent >= 0) & (child_count[p] == 1)
    ell = np.where(only_child, 0.5 * (length[p] + length), 0.5 * length)
    second_moment = np.pi * radius ** 4 / 4.0
    K = _axial_split(G * 2.0 * second_moment / ell, E_Y * second_moment / ell, u)
    for i, given in _given(ordered, "stiffness"):
        K[i] = given
    return K


def subtree_inertia_about_joints(parent, level_start, mass, inertia_com, com_offset, C_IF, base):
    """Rotational inertia (N, 3, 3), kg m², of each limb's whole subtree about its joint (its
    base point), at rest, in the limb's own axes; accumulated inward in O(N)."""
    com = base + np.einsum("nij,nj->ni", C_IF, com_offset)
    I_world = C_IF @ inertia_com @ np.transpose(C_IF, (0, 2, 1))
    sub_m = mass.copy()
    sub_h = mass[:, None] * com                                  # first moment Σ m c
    sub_S = mass[:, None, None] * np.einsum("ni,nj->nij", com, com)  # Σ m c cᵀ
    sub_I = I_world.copy()                                       # Σ I_com (world axes)
    for d in range(len(level_start) - 2, 0, -1):
        s = np.arange(level_start[d], level_start[d + 1])
        p = parent[s]
        np.add.at(sub_m, p, sub_m[s])
        np.add.at(sub_h, p, sub_h[s])
        np.add.at(sub_S, p, sub_S[s])
        np.add.at(sub_I, p, sub_I[s])
    # Σ m (c − b)(c − b)ᵀ = S − h bᵀ − b hᵀ + m b bᵀ
    hb = np.einsum("ni,nj->nij", sub_h, base)
    second = sub_S - hb - np.transpose(hb, (0, 2, 1)) + sub_m[:, None, None] * np.einsum(
        "ni,nj->nij", base, base)
    trace = np.trace(second, axis1=1, axis2=2)
    J_world = sub_I + trace[:, None, None] * np.eye(3) - second
    return np.transpose(C_IF, (0, 2, 1)) @ J_world @ C_IF


def _damping(ordered, material, K, J, u):
    """Joint damping C (N, 3, 3), child limb axes: given, or per axis c_i = 2ζ sqrt(k_i J_ii) in
    the frame (e1, e2, u) of `limb_frames` (docs/design.md §6)."""
    F = limb_frames(u)
    k_axes = np.einsum("nji,njk,nki->ni", F, K, F)
    J_axes = np.einsum("nji,njk,nki->ni", F, J, F)
    c_axes = 2.0 * material["damping_ratio"] * np.sqrt(np.maximum(k_axes, 0.0) * J_axes)
    C = np.einsum("nij,nj,nkj->nik", F, c_axes, F)
    for i, given in _given(ordered, "damping"):
        C[i] = given
    return C
