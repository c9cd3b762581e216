"""The tree model: breadth-first layout, traversals, and derived properties against the
formulas of docs/design.md §1 and §6 written out independently here."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from builders import preset_data
from random_trees import random_limbs
from treedyn_core.dynamics.static_model import build_tree
from treedyn_core.model.tree import breadth_first, depth_first, limb_frames

# Derived quantities are a handful of floating-point operations from the inputs.
RTOL = 1e-12

MATERIAL = {"density": 650.0, "youngs_modulus": 9.0e9, "poisson_ratio": 0.35,
            "damping_ratio": 0.04}


def _material_tree():
    """A trunk of two limbs, then a branching into three, one of which continues: every case
    of the ℓ rule (root, only child, branching), with derived mass, inertia, k and c."""
    limbs = [
        {"name": "t0", "length": 1.2, "radius": 0.08},
        {"name": "t1", "parent": "t0", "length": 1.0, "radius": 0.07},
        {"name": "a", "parent": "t1", "length": 0.8, "radius": 0.04,
         "rest_rotation_deg": [35.0, 0.0, 0.0]},
        {"name": "b", "parent": "t1", "length": 0.7, "radius": 0.04,
         "rest_rotation_deg": [0.0, -40.0, 10.0], "attach": 0.6},
        {"name": "c", "parent": "t1", "length": 0.6, "radius": 0.035,
         "rest_rotation_deg": [-20.0, 30.0, 0.0]},
        {"name": "a1", "parent": "a", "length": 0.5, "radius": 0.03,
         "rest_rotation_deg": [5.0, 5.0, 0.0]},
    ]
    data = preset_data(limbs, material=MATERIAL, root_position=[0.5, -0.2, 0.0])
    return limbs, build_tree(data)


def test_breadth_first_layout():
    data = preset_data(random_limbs(60, seed=4))
    tree = build_tree(data)
    assert tree.parent[0] == -1 and (tree.parent[1:] < np.arange(1, tree.n)).all()
    assert (np.diff(tree.depth) >= 0).all()  # each depth level a contiguous slice
    for d in range(tree.depth.max() + 1):
        level = np.arange(tree.level_start[d], tree.level_start[d + 1])
        assert (tree.depth[level] == d).all()
    for i in range(tree.n):  # the children of one parent are contiguous
        kids = np.flatnonzero(tree.parent == i)
        assert list(kids) == list(tree.children(i))
    limbs = data["tree"]["limbs"]
    assert [limbs[k]["name"] for k in tree.preset_index] == tree.names
    values = np.arange(tree.n) * 1.5
    np.testing.assert_array_equal(tree.from_preset_order(tree.to_preset_order(values)), values)


def test_traversals_match_naive_definitions():
    tree = build_tree(preset_data(random_limbs(40, seed=9)))
    for start in (0, 5, 17):
        naive = {start}
        changed = True
        while changed:
            changed = False
            for i in range(tree.n):
                if tree.parent[i] in naive and i not in naive:
                    naive.add(i)
                    changed = True
        assert set(breadth_first(tree, start)) == naive == set(depth_first(tree, start))
        order = list(depth_first(tree, start))
        for i in order[1:]:  # pre-order: a parent before its subtree
            assert order.index(tree.parent[i]) < order.index(i)
    chain = tree.ancestors(tree.n - 1)
    assert chain[-1] == 0 and all(tree.parent[a] == b for a, b in zip([tree.n - 1] + chain, chain))


def test_rest_pose_follows_the_drawing_formula():
    limbs, tree = _material_tree()
    C = {}
    base = {}
    for spec in limbs:
        R = Rotation.from_rotvec(np.radians(spec.get("rest_rotation_deg", [0, 0, 0]))).as_matrix()
        parent = spec.get("parent")
        if parent is None:
            C[spec["name"]], base[spec["name"]] = R, np.array([0.5, -0.2, 0.0])
        else:
            Lp = next(s["length"] for s in limbs if s["name"] == parent)
            C[spec["name"]] = C[parent] @ R
            base[spec["name"]] = base[parent] + C[parent] @ (spec.get("attach", 1.0) * Lp
                                                             * np.array([0, 0, 1.0]))
    for spec in limbs:
        i = tree.index_of[spec["name"]]
        np.testing.assert_allclose(tree.rest_C_IF[i], C[spec["name"]], atol=1e-14)
        np.testing.assert_allclose(tree.rest_base[i], base[spec["name"]], atol=1e-14)
        np.testing.assert_allclose(tree.rest_tip[i], base[spec["name"]] + spec["length"]
                                   * C[spec["name"]][:, 2], atol=1e-14)


def test_material_mass_inertia_and_stiffness():
    limbs, tree = _material_tree()
    E, nu, rho = MATERIAL["youngs_modulus"], MATERIAL["poisson_ratio"], MATERIAL["density"]
    G = E / (2 * (1 + nu))
    ell = {"t0": 0.6, "t1": (1.2 + 1.0) / 2, "a": 0.4, "b": 0.35, "c": 0.3, "a1": (0.8 + 0.5) / 2}
    for spec in limbs:
        i = tree.index_of[spec["name"]]
        r, L = spec["radius"], spec["length"]
        m = rho * np.pi * r ** 2 * L
        assert tree.mass[i] == pytest.approx(m, rel=RTOL)
        I_perp, I_axial = m * (3 * r ** 2 + L ** 2) / 12, m * r ** 2 / 2
        np.testing.assert_allclose(tree.inertia_com[i], np.diag([I_perp, I_perp, I_axial]),
                                   rtol=RTOL)
        np.testing.assert_allclose(tree.com_offset[i], [0, 0, L / 2], rtol=RTOL)
        k_bend = E * np.pi * r ** 4 / 4 / ell[spec["name"]]
        k_twist = G * np.pi * r ** 4 / 2 / ell[spec["name"]]
        np.testing.assert_allclose(tree.stiffness[i], np.diag([k_bend, k_bend, k_twist]),
                                   rtol=RTOL)


def test_material_damping_uses_the_subtree_inertia_about_the_joint():
    limbs, tree = _material_tree()
    zeta = MATERIAL["damping_ratio"]
    com = tree.rest_base + np.einsum("nij,nj->ni", tree.rest_C_IF, tree.com_offset)
    for i in range(tree.n):
        J = np.zeros((3, 3))
        for j in tree.subtree(i):
            rho = com[j] - tree.rest_base[i]
            J += (tree.rest_C_IF[j] @ tree.inertia_com[j] @ tree.rest_C_IF[j].T
                  + tree.mass[j] * (rho @ rho * np.eye(3) - np.outer(rho, rho)))
        J_limb = tree.rest_C_IF[i].T @ J @ tree.rest_C_IF[i]
        k = np.diag(tree.stiffness[i])
        expected = np.diag(2 * zeta * np.sqrt(k * np.diag(J_limb)))
        np.testing.assert_allclose(tree.damping[i], expected, rtol=RTOL)


def test_material_damping_of_limbs_along_x_and_tilted():
    """Two unbranched limbs from the ground, one along x (its damping frame starts from y), one
    tilted: each is axisymmetric about its axis u, so C = c_bend (1 − uuᵀ) + c_twist uuᵀ with
    c = 2ζ sqrt(k J) from the joint's bending and twisting stiffness and the limb's inertia
    about the joint, whatever the frame's first axis."""
    zeta = MATERIAL["damping_ratio"]
    E, nu = MATERIAL["youngs_modulus"], MATERIAL["poisson_ratio"]
    directions = {"x": np.array([1.0, 0.0, 0.0]), "tilted": np.array([1.0, 2.0, 2.0]) / 3.0}
    for name, u in directions.items():
        r, L = 0.05, 1.5
        tree = build_tree(preset_data([{"name": name, "direction": list(u), "length": L,
                                        "radius": r}], material=MATERIAL))
        m = tree.mass[0]
        J_bend = m * (3 * r ** 2 + L ** 2) / 12 + m * (L / 2) ** 2
        J_twist = m * r ** 2 / 2
        k_bend = E * np.pi * r ** 4 / 4 / (L / 2)
        k_twist = E / (2 * (1 + nu)) * np.pi * r ** 4 / 2 / (L / 2)
        uu = np.outer(u, u)
        expected = 2 * zeta * (np.sqrt(k_bend * J_bend) * (np.eye(3) - uu)
                               + np.sqrt(k_twist * J_twist) * uu)
        np.testing.assert_allclose(tree.damping[0], expected, rtol=RTOL,
                                   atol=1e-12 * expected.max())


def test_limb_frames_are_right_handed_orthonormal_frames_about_u():
    rng = np.random.default_rng(5)
    u = rng.normal(size=(200, 3))
    u[:20] = [1.0, 0.0, 0.0]                      # the x-axis case
    u[20:40] = [-1.0, 1e-3, 0.0]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    F = limb_frames(u)
    np.testing.assert_allclose(np.einsum("nji,njk->nik", F, F),
                               np.broadcast_to(np.eye(3), F.shape), atol=1e-15)
    np.testing.assert_allclose(np.linalg.det(F), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(F[:, :, 2], u)
    # e1 is limb x made orthogonal to u (y when u is within 26° of x): it lies in their plane
    trial = np.where(np.abs(u[:, :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(np.einsum("ni,ni->n", np.cross(trial, u), F[:, :, 0]), 0.0,
                               atol=1e-15)
    assert np.all(np.einsum("ni,ni->n", trial, F[:, :, 0]) > 0.0)


def test_given_values_override_the_material():
    limbs = [{"name": "A", "mass": 2.0, "inertia": [0.17, 0.18, 0.01], "stiffness": [1, 2, 3],
              "damping": 0.5, "com": 0.25, "length": 2.0, "direction": [1, 0, 0]}]
    tree = build_tree(preset_data(limbs))
    assert tree.mass[0] == 2.0
    np.testing.assert_array_equal(tree.inertia_com[0], np.diag([0.17, 0.18, 0.01]))
    np.testing.assert_array_equal(tree.stiffness[0], np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(tree.damping[0], 0.5 * np.eye(3))
    np.testing.assert_allclose(tree.com_offset[0], [0.5, 0, 0])
    np.testing.assert_allclose(tree.rest_tip[0], [2.0, 0, 0])


def test_default_inertia_and_stiffness_follow_a_tilted_direction():
    u = np.array([1.0, 2.0, 2.0]) / 3.0
    limbs = [{"name": "A", "direction": list(u * 3), "length": 1.5, "radius": 0.05}]
    tree = build_tree(preset_data(limbs, material=MATERIAL))
    m = tree.mass[0]
    I_perp, I_axial = m * (3 * 0.05 ** 2 + 1.5 ** 2) / 12, m * 0.05 ** 2 / 2
    uu = np.outer(u, u)
    np.testing.assert_allclose(tree.inertia_com[0], I_perp * (np.eye(3) - uu) + I_axial * uu,
                               rtol=RTOL)
    np.testing.assert_allclose(tree.u[0], u, rtol=RTOL)
