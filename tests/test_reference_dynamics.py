"""Self-checks of the reference dynamics (tests/reference_dynamics.py).

The reference is what the production ABA is judged by, so each of its parts is
checked against something computed another way: M by Jacobians against CRBA;
the bias by RNEA against Kane's equations with accelerations differentiated in
time, against the gradient of the gravity potential, and against the power
and angular-momentum balances; the spring torque against the closed form with
the right Jacobian of SO(3); the pendulum against its closed forms.

Time derivatives are central differences along a path with ``dR/dt = R v^×``
and ``dv/dt = a`` at t = 0, Richardson-extrapolated (h, h/2) at h = 1e-3:
truncation O(h⁴), rounding ≈ 1e-16/h. Observed relative errors on the random
10-limb problems are 1e-12–5e-10, hence ``RTOL_FD = 1e-8``.
"""

from __future__ import annotations

import numpy as np
import pytest

from treedyn_core.model.schema import LIMB

if __package__:
    from . import random_trees as rt
    from . import reference_dynamics as rd
else:
    import random_trees as rt
    import reference_dynamics as rd

G = np.array([0.0, 0.0, -9.81])
SEEDS = [0, 1, 2, 3]
# Algebraic identities between two exact formulas: a few hundred ulps of the
# largest entry.
RTOL_EXACT = 1e-12
# Finite-difference checks (see module docstring): ≥ 20× the observed error.
RTOL_FD = 1e-8


def random_problem(seed, n=10, topology="random"):
    tree = rt.random_reference_tree(n, seed, topology=topology)
    R, v = rt.random_state(tree, seed + 100, amplitude=2.0, rate=1.5)
    rng = np.random.default_rng(seed + 200)
    tau = 20.0 * rng.normal(size=3 * n)
    force = 5.0 * rng.normal(size=(n, 3))
    torque = 2.0 * rng.normal(size=(n, 3))
    return tree, R, v, tau, force, torque


def path(R, v, a, t):
    """State at time t on a path through (R, v) with dR/dt = R v^×, dv/dt = a."""
    v = v.reshape(-1, 3)
    a = np.asarray(a).reshape(-1, 3)
    R_t = np.array([R[i] @ rd.rotation_exp(t * v[i]) for i in range(len(R))])
    return R_t, v + t * a


def time_derivative(f, h=1e-3):
    """df/dt at t = 0: central differences at h and h/2, Richardson-extrapolated."""
    def central(k):
        return (np.asarray(f(k)) - np.asarray(f(-k))) / (2.0 * k)
    return (4.0 * central(h / 2.0) - central(h)) / 3.0


def right_gradient(f, R, i, h=1e-3):
    """(3,) ∂f/∂ε for R_i → R_i exp(ε^×), central differences + Richardson."""
    grad = np.empty(3)
    for k in range(3):
        def along(t, k=k):
            Rp = R.copy()
            e = np.zeros(3)
            e[k] = t
            Rp[i] = R[i] @ rd.rotation_exp(e)
            return f(Rp)
        grad[k] = time_derivative(along, h)
    return grad


# --- trees and limbs ------------------------------------------------------------------

@pytest.mark.parametrize("topology", rt.TOPOLOGIES)
def test_random_trees_are_valid_and_deterministic(topology):
    a = rt.random_reference_tree(12, 5, topology=topology)
    b = rt.random_reference_tree(12, 5, topology=topology)
    c = rt.random_reference_tree(12, 6, topology=topology)
    assert np.array_equal(a.parent, b.parent) and np.array_equal(a.inertia_com, b.inertia_com)
    assert not np.array_equal(a.base_offset, c.base_offset)
    assert a.parent[0] == -1 and all(0 <= a.parent[i] < i for i in range(1, 12))
    assert np.all((a.mass >= 0.1) & (a.mass <= 5.0))
    for J in a.inertia_com:
        principal = np.linalg.eigvalsh(J)
        assert principal.min() > 0
        assert principal[0] + principal[1] > principal[2]
    R, v = rt.random_state(a, 1)
    assert np.allclose(np.einsum("nji,njk->nik", R, R), np.eye(3), atol=1e-14)
    assert np.allclose(np.linalg.det(R), 1.0, atol=1e-14)


def test_random_limbs_follow_the_schema():
    limbs = rt.random_limbs(30, seed=3)
    assert limbs == rt.random_limbs(30, seed=3)
    assert limbs != rt.random_limbs(30, seed=4)
    names = []
    for limb in limbs:
        assert list(limb) == list(LIMB)
        assert limb["parent"] is None if limb["name"] == "L0" else limb["parent"] in names
        names.append(limb["name"])
        for key, field in LIMB.items():
            value = limb[key]
            if value is None:
                assert field.nullable, key
                continue
            values = value if isinstance(value, list) else [value]
            for x in values:
                if field.min is not None:
                    assert x > field.min if field.min_open else x >= field.min, key
                if field.max is not None:
                    assert x < field.max if field.max_open else x <= field.max, key
        assert np.isclose(np.linalg.norm(limb["direction"]), 1.0)
        assert 0.2 <= limb["length"] <= 1.5 and 0.2 <= limb["attach"] <= 1.0
        assert 0.2 <= limb["com"] <= 0.8 and limb["leaf_area"] == 0.0
        assert all(50.0 <= k <= 500.0 for k in limb["stiffness"])
        I1, I2, I3 = limb["inertia"]
        assert I1 + I2 > I3 and I1 + I3 > I2 and I2 + I3 > I1
    assert any(limb["direction"] != [0.0, 0.0, 1.0] for limb in limbs)
    assert any(isinstance(limb["damping"], float) for limb in limbs)
    assert any(isinstance(limb["damping"], list) for limb in limbs)


def test_reference_tree_from_limbs_draws_the_rest_pose():
    # At rest, each child's base is at `attach` along its parent's drawn axis.
    limbs = rt.random_limbs(8, seed=1)
    tree, R_rest = rt.reference_tree_from_limbs(limbs, root_position=(1.0, 2.0, 0.5))
    kin = rd.kinematics(tree, R_rest, np.zeros((8, 3)))
    assert np.allclose(kin["base"][0], [1.0, 2.0, 0.5])
    for i in range(1, 8):
        p = tree.parent[i]
        u_p = np.asarray(limbs[p]["direction"]) / np.linalg.norm(limbs[p]["direction"])
        expected = kin["base"][p] + limbs[i]["attach"] * limbs[p]["length"] * kin["C"][p] @ u_p
        assert np.allclose(kin["base"][i], expected, atol=1e-14)


# --- kinematics and mass matrix -------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_kinematics_velocities_are_time_derivatives(seed):
    tree, R, v, *_ = random_problem(seed)
    kin = rd.kinematics(tree, R, v)
    zero = np.zeros_like(v)
    C_dot = time_derivative(lambda t: rd.kinematics(tree, path(R, v, zero, t)[0], v)["C"])
    W = np.einsum("nji,njk->nik", kin["C"], C_dot)  # Cᵀ dC/dt = ω_body^×
    omega_fd = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)
    com_dot = time_derivative(lambda t: rd.kinematics(tree, path(R, v, zero, t)[0], v)["com_world"])
    assert np.allclose(omega_fd, kin["omega_body"], rtol=0, atol=RTOL_FD * np.abs(kin["omega_body"]).max())
    assert np.allclose(com_dot, kin["v_com"], rtol=0, atol=RTOL_FD * np.abs(kin["v_com"]).max())
    assert np.allclose(np.einsum("nij,nj->ni", kin["C"], kin["omega_body"]), kin["omega_world"])


@pytest.mark.parametrize("seed", SEEDS)
def test_jacobians_map_joint_rates_to_limb_velocities(seed):
    tree, R, v, *_ = random_problem(seed)
    kin = rd.kinematics(tree, R, v)
    J_omega, J_com = rd.jacobians(tree, R)
    scale = np.abs(kin["v_com"]).max()
    assert np.allclose(J_omega @ v.reshape(-1), kin["omega_world"], rtol=0, atol=RTOL_EXACT * scale)
    assert np.allclose(J_com @ v.reshape(-1), kin["v_com"], rtol=0, atol=RTOL_EXACT * scale)


@pytest.mark.parametrize("topology", rt.TOPOLOGIES)
@pytest.mark.parametrize("seed", SEEDS)
def test_mass_matrix_spd_and_equal_to_crba(seed, topology):
    tree, R, v, *_ = random_problem(seed, topology=topology)
    M = rd.mass_matrix(tree, R)
    scale = np.abs(M).max()
    assert np.allclose(M, M.T, rtol=0, atol=RTOL_EXACT * scale)
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0
    assert np.allclose(rd.mass_matrix_crba(tree, R), M, rtol=0, atol=RTOL_EXACT * scale)
    T, _ = rd.energies(tree, R, v, G)
    assert np.isclose(0.5 * v.reshape(-1) @ M @ v.reshape(-1), T, rtol=RTOL_EXACT)


# --- bias and forward dynamics --------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_inverse_dynamics_is_mass_matrix_times_acceleration_plus_bias(seed):
    tree, R, v, _, force, torque = random_problem(seed)
    a = np.random.default_rng(seed).normal(size=3 * tree.n)
    tau = rd.inverse_dynamics(tree, R, v, a, G, force, torque)
    expected = rd.mass_matrix(tree, R) @ a + rd.bias(tree, R, v, G, force, torque)
    assert np.allclose(tau, expected, rtol=0, atol=RTOL_EXACT * np.abs(expected).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_equations_of_motion_against_kane_with_differentiated_accelerations(seed):
    """M a + b = Σ_k J_ωkᵀ(I α_k + ω_k × I ω_k − T_k) + J_vkᵀ(m a_k − m g − F_k).

    Kane's equations (virtual power with the partial velocities J) and limb
    accelerations differentiated in time from `kinematics`: independent of
    RNEA's recursion, in particular of its dR/dt term.
    """
    tree, R, v, _, force, torque = random_problem(seed)
    a = np.random.default_rng(seed).normal(size=3 * tree.n)
    kin = rd.kinematics(tree, R, v)
    alpha = time_derivative(lambda t: rd.kinematics(tree, *path(R, v, a, t))["omega_world"])
    acc = time_derivative(lambda t: rd.kinematics(tree, *path(R, v, a, t))["v_com"])
    J_omega, J_com = rd.jacobians(tree, R)
    I_world = rd.world_inertias(tree, R)
    Q = np.zeros(3 * tree.n)
    for k in range(tree.n):
        w = kin["omega_world"][k]
        Q += J_omega[k].T @ (I_world[k] @ alpha[k] + np.cross(w, I_world[k] @ w) - torque[k])
        Q += J_com[k].T @ (tree.mass[k] * (acc[k] - G) - force[k])
    expected = rd.mass_matrix(tree, R) @ a + rd.bias(tree, R, v, G, force, torque)
    assert np.allclose(Q, expected, rtol=0, atol=RTOL_FD * np.abs(expected).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_gravity_bias_is_gradient_of_potential(seed):
    # b(R, 0) = −(generalized gravity force) = +∂V_g/∂ε, per joint, child axes.
    tree, R, *_ = random_problem(seed)
    b = rd.bias(tree, R, np.zeros((tree.n, 3)), G).reshape(-1, 3)
    grad = np.array([right_gradient(lambda Rp: rd.energies(tree, Rp, np.zeros((tree.n, 3)), G)[1],
                                    R, i) for i in range(tree.n)])
    assert np.allclose(b, grad, rtol=0, atol=RTOL_FD * np.abs(b).max())


def test_velocity_bias_is_quadratic_in_rates():
    tree, R, v, *_ = random_problem(7)
    b1 = rd.bias(tree, R, v, np.zeros(3))
    b2 = rd.bias(tree, R, 2.0 * v, np.zeros(3))
    assert np.abs(b1).max() > 1.0
    assert np.allclose(b2, 4.0 * b1, rtol=0, atol=RTOL_EXACT * np.abs(b2).max())


@pytest.mark.parametrize("seed", SEEDS)
def test_power_balance(seed):
    """d(T + V_g)/dt = Σ τ·v + Σ F·v_com + T·ω along the motion."""
    tree, R, v, tau, force, torque = random_problem(seed)
    a = rd.forward_dynamics(tree, R, v, tau, G, force, torque)

    def energy(t):
        return sum(rd.energies(tree, *path(R, v, a, t), G))

    dE = time_derivative(energy)
    power = tau @ v.reshape(-1) + rd.external_power(tree, R, v, force, torque)
    scale = np.abs(tau * v.reshape(-1)).sum() + np.abs(rd.bias(tree, R, v, G) * v.reshape(-1)).sum()
    assert abs(dE - power) < RTOL_FD * scale


@pytest.mark.parametrize("seed", SEEDS)
def test_angular_momentum_balance_about_the_root_pivot(seed):
    """dL_P/dt = C_root τ_root + Σ (c_k − P) × (m_k g + F_k) + T_k.

    Internal joint torques cancel in pairs; the pivot force has no moment about
    P. Checks all three components of the whole-tree response to τ.
    """
    tree, R, v, tau, force, torque = random_problem(seed)
    a = rd.forward_dynamics(tree, R, v, tau, G, force, torque)
    P = tree.base_offset[0]

    def momentum(t):
        R_t, v_t = path(R, v, a, t)
        kin = rd.kinematics(tree, R_t, v_t)
        I_world = rd.world_inertias(tree, R_t)
        return sum(tree.mass[k] * np.cross(kin["com_world"][k] - P, kin["v_com"][k])
                   + I_world[k] @ kin["omega_world"][k] for k in range(tree.n))

    kin = rd.kinematics(tree, R, v)
    expected = kin["C"][0] @ tau[:3] + sum(
        np.cross(kin["com_world"][k] - P, tree.mass[k] * G + force[k]) + torque[k]
        for k in range(tree.n))
    dL = time_derivative(momentum)
    scale = np.abs(tau).max() + sum(tree.mass) * 9.81 * np.abs(kin["com_world"] - P).max()
    assert np.allclose(dL, expected, rtol=0, atol=RTOL_FD * scale)


def pendulum(length, mass, inertia, pivot=(0.3, -0.2, 1.0)):
    """One limb hanging along its body −z from a ball joint at ``pivot``."""
    return rd.ReferenceTree(parent=[-1], base_offset=[pivot], com=[[0.0, 0.0, -length]],
                            mass=[mass], inertia_com=[inertia * np.eye(3)])


@pytest.mark.parametrize("q, q_dot", [(0.3, 0.0), (-1.2, 2.0), (2.5, -0.7)])
def test_planar_pendulum_closed_form(q, q_dot):
    length, mass, g = 0.8, 1.7, 9.81
    R = rd.rotation_exp([q, 0.0, 0.0])[None]
    v = np.array([[q_dot, 0.0, 0.0]])
    # Point-ish mass: θ̈ = −(g/l) sin q (to a relative 1e-9 from the residual inertia).
    a = rd.forward_dynamics(pendulum(length, mass, 1e-9 * mass * length ** 2), R, v, np.zeros(3), G)
    assert np.allclose(a, [-(g / length) * np.sin(q), 0.0, 0.0], rtol=0, atol=1e-8 * g / length)
    # Compound pendulum with an isotropic inertia I about the COM: exact.
    inertia = 0.05
    a = rd.forward_dynamics(pendulum(length, mass, inertia), R, v, np.zeros(3), G)
    expected = -mass * g * length * np.sin(q) / (inertia + mass * length ** 2)
    assert np.allclose(a, [expected, 0.0, 0.0], rtol=0, atol=RTOL_EXACT * g / length)


@pytest.mark.parametrize("cone_deg", [10.0, 45.0, 80.0])
def test_conical_pendulum_is_steady(cone_deg):
    """Ω² = g / (l cos α): the body rate is constant in body axes, so v̇ = 0.

    C = Rz(Ωt) Rx(α) and ω_body = Rx(α)ᵀ Ω e_z; an isotropic inertia about the
    COM adds no moment (its ω is constant in space). Exercises the
    velocity-product terms of the bias against a closed form.
    """
    length, mass, g = 1.1, 2.3, 9.81
    alpha = np.radians(cone_deg)
    Omega = np.sqrt(g / (length * np.cos(alpha)))
    heading = rd.rotation_exp([0.0, 0.0, 0.7])
    R = (heading @ rd.rotation_exp([alpha, 0.0, 0.0]))[None]
    v = (Omega * rd.rotation_exp([alpha, 0.0, 0.0]).T @ [0.0, 0.0, 1.0])[None]
    tree = pendulum(length, mass, 0.02)
    a = rd.forward_dynamics(tree, R, v, np.zeros(3), G)
    assert np.abs(a).max() < RTOL_EXACT * Omega ** 2
    # Slower than steady: gravity wins and the cone closes (α̇ about body x turns negative).
    a_slow = rd.forward_dynamics(tree, R, 0.9 * v, np.zeros(3), G)
    assert a_slow[0] < 0


def test_backward_error_of_solutions():
    tree, R, v, tau, force, torque = random_problem(11, n=15)
    a = rd.forward_dynamics(tree, R, v, tau, G, force, torque)
    assert rd.backward_error(tree, R, v, a, tau, G, force, torque) < 1e-14
    assert np.allclose(rd.residual(tree, R, v, a, tau, G, force, torque), 0.0,
                       atol=1e-12 * np.abs(tau).max())
    wrong = a * (1.0 + 1e-9)
    assert rd.backward_error(tree, R, v, wrong, tau, G, force, torque) > 1e-12


# --- springs --------------------------------------------------------------------------

def right_jacobian_inverse(theta):
    """J_r(θ)⁻¹ = 1 + ½θ^× + (1/φ² − (1 + cos φ)/(2φ sin φ)) θ^×θ^× (closed form)."""
    phi = np.linalg.norm(theta)
    X = rd.skew(theta)
    return np.eye(3) + 0.5 * X + (1.0 / phi ** 2 - (1.0 + np.cos(phi)) / (2.0 * phi * np.sin(phi))) * X @ X


@pytest.mark.parametrize("seed", SEEDS)
def test_spring_torque_fd_matches_right_jacobian_form(seed):
    rng = np.random.default_rng(seed)
    C_sp = rt.random_rotation(rng)
    theta = rng.normal(size=3)
    theta *= rng.uniform(0.1, 2.5) / np.linalg.norm(theta)
    R = C_sp @ rd.rotation_exp(theta)
    Q = rt.random_rotation(rng)
    K = Q @ np.diag(rng.uniform(50.0, 500.0, size=3)) @ Q.T
    assert np.allclose(rd.rotation_log(C_sp.T @ R), theta, atol=1e-13)
    assert np.isclose(rd.spring_potential(theta, K), 0.5 * theta @ K @ theta)
    tau = rd.spring_torque_fd(R, C_sp, K)
    expected = -right_jacobian_inverse(theta).T @ K @ theta
    # Documented accuracy of spring_torque_fd: relative 1e-7.
    assert np.allclose(tau, expected, rtol=0, atol=1e-7 * np.abs(expected).max())
    # Isotropic stiffness: τ = −k θ exactly (J_r⁻ᵀ θ = θ).
    assert np.allclose(rd.spring_torque_fd(R, C_sp, 120.0), -120.0 * theta, atol=1e-7 * 120.0)


def test_spring_torque_fd_batched():
    rng = np.random.default_rng(4)
    R = np.array([rt.random_rotation(rng) for _ in range(3)])
    C_sp = np.array([rt.random_rotation(rng) for _ in range(3)])
    K = rng.uniform(50.0, 500.0, size=(3, 3))  # per joint, diagonal
    batched = rd.spring_torque_fd(R, C_sp, K)
    for i in range(3):
        assert np.array_equal(batched[i], rd.spring_torque_fd(R[i], C_sp[i], np.diag(K[i])))
