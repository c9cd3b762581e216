"""Rotations against scipy's independent implementation, including the hard angles."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from treedyn_core.numerics import so3

# A handful of floating-point operations from the inputs; near π the axis is recovered from
# the symmetric part, whose conditioning costs a few more digits.
TOL = 1e-13
ANGLES = [0.0, 1e-9, 1e-5, 1e-3, 0.3, 1.0, 2.5, np.pi - 1e-4, np.pi - 1e-9]


@pytest.mark.parametrize("angle", ANGLES)
def test_exp_and_log_match_scipy(angle):
    rng = np.random.default_rng(int(angle * 1e3) + 1)
    for _ in range(20):
        axis = rng.normal(size=3)
        theta = angle * axis / np.linalg.norm(axis)
        R = Rotation.from_rotvec(theta).as_matrix()
        np.testing.assert_allclose(so3.exp(theta), R, atol=TOL)
        np.testing.assert_allclose(so3.log(R), theta, atol=1e-8 if angle > 3 else TOL)


def test_right_jacobian_and_its_inverse():
    rng = np.random.default_rng(3)
    for _ in range(20):
        theta = rng.normal(size=3)
        delta = 1e-7 * rng.normal(size=3)
        # exp(θ + δ) = exp(θ) exp(J_r δ) to first order
        lhs = so3.log(so3.exp(theta).T @ so3.exp(theta + delta))
        np.testing.assert_allclose(lhs, so3.right_jacobian(theta) @ delta, atol=1e-13)
        np.testing.assert_allclose(so3.right_jacobian(theta) @ so3.right_jacobian_inverse(theta),
                                   np.eye(3), atol=TOL)


def test_quaternions_match_scipy():
    rng = np.random.default_rng(5)
    for _ in range(50):
        R = Rotation.random(random_state=rng)
        q = so3.quat_from_matrix(R.as_matrix())
        x, y, z, w = R.as_quat()  # scipy's order is [x, y, z, w]
        np.testing.assert_allclose(q, np.sign(w or 1.0) * np.array([w, x, y, z]), atol=TOL)
        np.testing.assert_allclose(so3.quat_to_matrix(q), R.as_matrix(), atol=TOL)


@pytest.mark.parametrize("angle", [1e-6, 0.05, 0.0999, 0.2, 2.0])
def test_quat_advance_turns_by_the_exponential(angle):
    """Both branches (series below 0.1 rad, trigonometric above) of q ← q ⊗ exp(θ)."""
    rng = np.random.default_rng(7)
    q = so3.quat_from_matrix(Rotation.random(random_state=rng).as_matrix())
    axis = rng.normal(size=3)
    theta = angle * axis / np.linalg.norm(axis)
    expected = so3.quat_to_matrix(q) @ so3.exp(theta)
    so3.quat_advance(q, theta)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-15
    np.testing.assert_allclose(so3.quat_to_matrix(q), expected, atol=TOL)


def test_quat_rate_is_the_derivative_of_quat_advance():
    rng = np.random.default_rng(9)
    q = so3.quat_from_matrix(Rotation.random(random_state=rng).as_matrix())
    w = rng.normal(size=3)
    rate = np.empty(4)
    so3.quat_rate(q, w, rate)
    h = 1e-6
    ahead, behind = q.copy(), q.copy()
    so3.quat_advance(ahead, h * w)
    so3.quat_advance(behind, -h * w)
    np.testing.assert_allclose(rate, (ahead - behind) / (2 * h), atol=1e-9)


# Either side of the joints' series limit tan(φ/2) = 0.2, its far end, and near π.
SPRING_ANGLES = ANGLES + [2 * np.arctan(0.2) * (1 - 1e-12), 2 * np.arctan(0.2) * (1 + 1e-12),
                          0.05, 0.39]


@pytest.mark.parametrize("angle", SPRING_ANGLES + [np.pi])
def test_quaternion_spring_torque_matches_the_matrix_form(angle):
    """joints.spring_torque_q (error quaternion, used by the step) against spring_torque (error
    matrix E = C_springᵀ R_rel), and its θ against scipy: the same rotation vector, torque and
    energy, with anisotropic stiffness and both signs of each quaternion."""
    from treedyn_core.dynamics.joints import spring_torque, spring_torque_q

    rng = np.random.default_rng(int(angle * 1e6) + 11)
    for _ in range(20):
        axis = rng.normal(size=3)
        theta = angle * axis / np.linalg.norm(axis)
        spring = Rotation.random(random_state=rng)
        joint = spring * Rotation.from_rotvec(theta)
        A = rng.normal(size=(3, 3))
        K = A @ A.T + np.eye(3)
        q_joint = np.roll(joint.as_quat(), 1) * rng.choice([-1.0, 1.0])  # scipy: [x, y, z, w]
        q_spring = np.roll(spring.as_quat(), 1) * rng.choice([-1.0, 1.0])
        th_q, tau_q, V_q = spring_torque_q(q_joint, q_spring, K, 1.7)
        th_m, tau_m, V_m = spring_torque(joint.as_matrix(), spring.as_matrix(), K, 1.7)
        # At π the two signs of θ are the same rotation: compare up to that sign.
        sign = np.sign(np.dot(th_q, theta)) if angle == np.pi else 1.0
        tol = 1e-7 if angle > 3 else 4e-15 * angle + 1e-15
        np.testing.assert_allclose(sign * np.array(th_q), theta, atol=tol, rtol=0)
        if angle < 3:  # near π the matrix form's axis is the less accurate one
            np.testing.assert_allclose(th_q, th_m, atol=tol, rtol=0)
            # τ ≈ K θ (J_r⁻ᵀ stays below 2 in norm here): θ's tolerance carried through K
            stiffness = 1.7 * np.linalg.norm(K, 2)
            np.testing.assert_allclose(tau_q, tau_m, atol=4 * stiffness * tol, rtol=0)
            assert abs(V_q - V_m) <= 2 * stiffness * (angle + tol) * tol


def _gradient_coefficient_series(phi):
    """b(φ) = 1/φ² − cot(φ/2)/(2φ) = Σ_n |B_2n| φ^(2n−2)/(2n)!, n ≥ 1 (Bernoulli numbers, from
    the Laurent series of the cotangent), to n = 12: exact to round-off for φ ≤ 0.4."""
    from fractions import Fraction
    from math import comb, factorial

    bernoulli = [Fraction(1)]
    for m in range(1, 25):
        bernoulli.append(-sum(comb(m + 1, k) * bernoulli[k] for k in range(m)) / (m + 1))
    return sum(float(abs(bernoulli[2 * n]) / factorial(2 * n)) * phi ** (2 * n - 2)
               for n in range(12, 0, -1))


@pytest.mark.parametrize("angle", [1e-9, 1e-5, 1e-3, 0.02, 0.1, 0.25, 0.3947])
def test_quaternion_spring_gradient_coefficient_against_its_series(angle):
    """The step's small-angle branch takes J_r⁻ᵀ's coefficient b = (1 − S)/(4 t² S²) from the
    atan series (no square root); against b's own series in φ (Bernoulli numbers), to 4.5e-16
    relative (two units in the last place), from 1e-9 rad to the branch's limit
    2 atan 0.2 = 0.3948 rad."""
    from treedyn_core.dynamics.joints import error_rotation_vector_q

    rng = np.random.default_rng(3)
    for _ in range(5):
        axis = rng.normal(size=3)
        spring = Rotation.random(random_state=rng)
        joint = spring * Rotation.from_rotvec(angle * axis / np.linalg.norm(axis))
        theta, b = error_rotation_vector_q(np.roll(joint.as_quat(), 1),
                                           np.roll(spring.as_quat(), 1))
        phi = np.linalg.norm(theta)
        assert phi == pytest.approx(angle, rel=1e-8)
        assert abs(b / _gradient_coefficient_series(phi) - 1.0) <= 4.5e-16


def test_spring_at_its_rest_orientation_exerts_exactly_nothing():
    """Both forms give exactly zero at the rest orientation (a static solve with no load would
    otherwise chase round-off), whatever the orientation."""
    from treedyn_core.dynamics.joints import spring_torque, spring_torque_q

    rng = np.random.default_rng(5)
    K = np.diag([3.0, 5.0, 7.0])
    for _ in range(50):
        rotation = Rotation.random(random_state=rng)
        q = np.roll(rotation.as_quat(), 1)
        for theta, tau, energy in (spring_torque_q(q, q.copy(), K, 1.0),
                                   spring_torque(rotation.as_matrix(), rotation.as_matrix(), K,
                                                 1.0)):
            assert theta == (0.0, 0.0, 0.0) and tau == (0.0, 0.0, 0.0) and energy == 0.0


@pytest.mark.parametrize("angle", SPRING_ANGLES)
def test_spring_error_rotation_matches_scipy(angle):
    """joints.error_rotation_vector (a series below 22.6°, atan2 above, the symmetric part near
    π) against scipy, relative to the angle where the inputs allow it."""
    from treedyn_core.dynamics.joints import error_rotation_vector

    rng = np.random.default_rng(int(angle * 1e6) + 3)
    for _ in range(20):
        axis = rng.normal(size=3)
        theta = angle * axis / np.linalg.norm(axis)
        spring = Rotation.random(random_state=rng).as_matrix()
        E = Rotation.from_rotvec(theta).as_matrix()
        out, phi, sin_phi, cos_phi = error_rotation_vector(spring @ E, spring)
        # Forming spring @ E rounds at 1e-16 absolute; near π the axis loses digits as in log.
        tol = 1e-8 if angle > 3 else 2e-15 * angle + 4e-16
        np.testing.assert_allclose(out, theta, atol=tol, rtol=0)
        assert abs(phi - angle) <= tol
        assert abs(sin_phi - np.sin(angle)) <= 1e-14 and abs(cos_phi - np.cos(angle)) <= 1e-14
    out, phi, _, _ = error_rotation_vector(Rotation.from_rotvec(theta).as_matrix(), np.eye(3))
    np.testing.assert_allclose(out, theta, rtol=2e-15, atol=1e-8 if angle > 3 else 0)


def test_whole_tree_conversions_match_the_one_rotation_kernels():
    """exp_many, log_many and quats_from_matrices (plain numpy, for loading trees) against exp,
    log and quat_from_matrix, one rotation at a time, at every hard angle and in every one of
    Shepperd's four branches (rotations by about π about each axis pick the last three)."""
    rng = np.random.default_rng(11)
    axes = np.vstack([rng.normal(size=(60, 3)), np.eye(3).repeat(3, axis=0)])
    angles = np.concatenate([np.resize(ANGLES + [np.pi], 60), np.tile([2.5, np.pi - 1e-4, np.pi], 3)])
    branches = {int(np.argmax([np.trace(R), *np.diag(R)])) for R in so3.exp_many(
        angles[:, None] * axes / np.linalg.norm(axes, axis=1)[:, None])}
    assert branches == {0, 1, 2, 3}
    thetas = angles[:, None] * axes / np.linalg.norm(axes, axis=1)[:, None]
    R = so3.exp_many(thetas)
    for theta, R_i in zip(thetas, R):
        np.testing.assert_allclose(R_i, so3.exp(theta), rtol=0, atol=1e-15)
    for R_i, theta in zip(R, so3.log_many(R)):
        np.testing.assert_allclose(theta, so3.log(R_i), rtol=0, atol=1e-15)
    for R_i, q in zip(R, so3.quats_from_matrices(R)):
        np.testing.assert_allclose(q, so3.quat_from_matrix(R_i), rtol=0, atol=1e-15)
