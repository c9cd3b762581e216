"""The compiled articulated-body algorithm against the independent reference in the tests
(Jacobian mass matrix + recursive Newton–Euler, `reference_dynamics.py`), on random trees."""

import numpy as np
import pytest

import reference_dynamics as ref
from random_trees import random_reference_tree, random_state
from treedyn_core.numerics import so3
from treedyn_core.dynamics.articulated import (ArticulatedModel, Workspace, forward_kinematics,
                                               implicit_accelerations)

# Backward error of a stable O(N) recursion in double precision: a few ulps times a growth
# factor that stays far below 1e4 on trees of this size.
BACKWARD_ERROR = 1e-12
GRAVITY = np.array([0.0, 0.0, -9.81])


def _case(n, seed, topology="random"):
    tree = random_reference_tree(n, seed, topology=topology)
    R, v = random_state(tree, seed + 1, amplitude=1.5, rate=2.0)
    rng = np.random.default_rng(seed + 2)
    tau = rng.normal(scale=5.0, size=(n, 3))
    force = rng.normal(scale=3.0, size=(n, 3))
    torque = rng.normal(scale=1.0, size=(n, 3))
    A = rng.normal(size=(n, 3, 3))
    K = A @ np.transpose(A, (0, 2, 1)) * 50 + 10 * np.eye(3)
    B = rng.normal(size=(n, 3, 3))
    C = B @ np.transpose(B, (0, 2, 1)) + np.eye(3)
    return tree, R, v, tau, force, torque, K, C


def _production(tree, R, v, tau, force, torque, K, C, armature_k=0.0, armature_c=0.0,
                gravity_theta_h=0.0):
    """Run the production kernels on a reference tree; loads converted to base-point form."""
    n = tree.n
    w = Workspace.zeros(n)
    q = np.array([so3.quat_from_matrix(Ri) for Ri in R])
    c = tree.com
    inertia_base = tree.inertia_com + tree.mass[:, None, None] * (
        np.einsum("ni,ni->n", c, c)[:, None, None] * np.eye(3) - np.einsum("ni,nj->nij", c, c))
    forward_kinematics(np.arange(tree.n), tree.parent, tree.base_offset, q, v, w.C_IF, w.base,
                       w.omega, w.base_vel, w.omega_rel)
    com_world = w.base + np.einsum("nij,nj->ni", w.C_IF, c)
    torque_about_base = torque + np.cross(com_world - w.base, force)
    model = ArticulatedModel(tree.parent, tree.base_offset, tree.mass, c, inertia_base, K, C,
                             np.zeros((n, 4)), np.asarray(GRAVITY, float))
    w.tau[:] = tau
    implicit_accelerations(np.arange(n), model, w, force, torque_about_base, armature_k,
                           armature_c, gravity_theta_h, 0.0)
    return w


@pytest.mark.parametrize("n, seed, topology", [
    (1, 1, "random"), (2, 2, "chain"), (12, 3, "random"), (40, 4, "star"), (200, 5, "mixed"),
    (200, 6, "random"),
])
def test_aba_matches_mass_matrix_and_newton_euler(n, seed, topology):
    tree, R, v, tau, force, torque, K, C = _case(n, seed, topology)
    w = _production(tree, R, v, tau, force, torque, K, C)
    error = ref.backward_error(tree, R, v, w.vdot, tau, GRAVITY, force, torque)
    assert error <= BACKWARD_ERROR


def test_kinematics_match_reference():
    tree, R, v, *_ = _case(30, 11)
    w = _production(tree, R, v, *_case(30, 11)[3:])
    kin = ref.kinematics(tree, R, v)
    np.testing.assert_allclose(w.C_IF, kin["C"], atol=1e-14)
    np.testing.assert_allclose(w.base, kin["base"], atol=1e-13)
    np.testing.assert_allclose(w.omega, kin["omega_world"], atol=1e-13)


def _psd_gravity_block(tree, R, i):
    """PSD part of the subtree's gravity stiffness about joint i, child axes (eigen-solver)."""
    kin = ref.kinematics(tree, R, np.zeros((tree.n, 3)))
    sub = [j for j in range(tree.n) if j == i or i in tree.ancestors(j)]
    m = tree.mass[sub].sum()
    rho = (tree.mass[sub, None] * kin["com_world"][sub]).sum(0) / m - kin["base"][i]
    Kg = m * ((GRAVITY @ rho) * np.eye(3) - 0.5 * (np.outer(GRAVITY, rho) + np.outer(rho, GRAVITY)))
    lam, V = np.linalg.eigh(Kg)
    P = V @ np.diag(np.maximum(lam, 0.0)) @ V.T
    return kin["C"][i].T @ P @ kin["C"][i]


@pytest.mark.parametrize("n, seed", [(3, 21), (25, 22), (120, 23)])
def test_implicit_system_matches_dense_solve(n, seed):
    """(M + θhC + θ²h²(K + P_g)) a = f − θh(K + P_g) v, solved densely, equals the recursion."""
    tree, R, v, tau, force, torque, K, C = _case(n, seed)
    h, theta = 1.0 / 30.0, 0.6
    P = np.array([_psd_gravity_block(tree, R, i) for i in range(n)])
    w = _production(tree, R, v, tau, force, torque, K, C, armature_k=(theta * h) ** 2,
                    armature_c=theta * h, gravity_theta_h=theta * h)
    M = ref.mass_matrix(tree, R)
    for i in range(n):
        block = slice(3 * i, 3 * i + 3)
        M[block, block] += theta * h * C[i] + (theta * h) ** 2 * (K[i] + P[i])
    rhs = (tau - theta * h * np.einsum("nij,nj->ni", P, v)).ravel() - ref.bias(
        tree, R, v, GRAVITY, force, torque)
    a = np.linalg.solve(M, rhs)
    scale = np.abs(M).max() * np.abs(a).max() + np.abs(rhs).max()
    assert np.abs(M @ w.vdot.ravel() - rhs).max() / scale <= BACKWARD_ERROR
