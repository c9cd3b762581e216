"""Natural frequencies and mode shapes (docs/design.md §7, `treedyn modes`) against what cannot be
tuned: hand-derived mass and stiffness matrices, the Euler–Bernoulli cantilever and Greenhill's
buckling height, an independent dense mass matrix and finite differences of the energy, the
generalized forces and the simulator's own accelerations, and free-decay runs.

Everything is in still air. Trees are built as validated preset dicts; the reference
dynamics (`reference_dynamics.py`) imports nothing from the core's physics.
"""

from __future__ import annotations

import importlib
import json
import math
import time

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

import reference_dynamics as ref
from builders import preset_data
from physics_cases import STILL_AIR, THREE_LIMBS, TWO_LIMBS, fastest_joint_rate
from random_trees import random_limbs, reference_tree_from_limbs
from treedyn_core.dynamics import linearise as lin
modes_module = importlib.import_module("treedyn_core.analysis.modes")   # the module, not the API's function
from treedyn_core.numerics import so3
from treedyn_core.errors import TreedynError
from treedyn_core.dynamics.systems import articulated_dynamics
from treedyn_core.dynamics.joints import spring_torque
from treedyn_core.analysis.modes import modes, modes_command_output
from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation

GRAVITY = [0.0, 0.0, -9.81]
NO_GRAVITY = [0.0, 0.0, 0.0]
# Wind off in the sense of docs/design.md §3: no aerodynamic force at all. (Still-air drag is quadratic
# in the velocity, so it does not enter the linearisation; the free-decay runs leave it out.)
NO_AIR = {**STILL_AIR, "drag_coefficient": 0.0, "leaf_drag_coefficient": 0.0}


def simulation(limbs, initial_state=None, tuning=None, material=None, **settings):
    sections = {"simulation": settings, "wind": NO_AIR}
    if initial_state:
        sections["initial_state"] = initial_state
    if tuning:
        sections["tuning"] = tuning
    if material:
        sections["material"] = material
    return Simulation.from_data(preset_data(limbs, **sections))


def skew(a):
    return ref.skew(a)


# ---------------------------------------------------------------------------------------------
# 1. docs/design.md §6's two limbs, gravity and damping off: hand-derived M and K.
# ---------------------------------------------------------------------------------------------

# Both eigen-solvers work to round-off on 6×6 matrices; 1e-8 is the brief's figure.
TWO_LIMB_FREQUENCY_RTOL = 1e-8
MATRIX_RTOL = 1e-12  # two computations of the same sums, in different orders


def two_limb_matrices():
    """M (6×6) and K of the two-limb tree at rest from its geometry alone (docs/design.md §6 values).

    Coordinates: ε_A (A's axes = inertial at rest), ε_B (B's axes, B = Rx(30°) A). B's base is
    A's tip d = (0, 0, 1); its COM p = d + Rx(30°)(0, 0, 0.4). Velocities: ω_A = ε̇_A,
    v_A = ε̇_A × c_A; ω_B = ε̇_A + R ε̇_B, v_B = ε̇_A × p + (R ε̇_B) × (p − d).
    """
    m_A, c_A = 2.0, np.array([0.0, 0.0, 0.5])
    I_A = np.diag([0.17, 0.17, 0.0025])
    L_B, r_B = 0.8, 0.03
    m_B = 700.0 * math.pi * r_B**2 * L_B
    I_t = m_B * (3 * r_B**2 + L_B**2) / 12.0
    I_B_limb = np.diag([I_t, I_t, 0.5 * m_B * r_B**2])
    a = math.radians(30.0)
    R = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    d = np.array([0.0, 0.0, 1.0])
    p = d + R @ np.array([0.0, 0.0, 0.5 * L_B])
    I_B = R @ I_B_limb @ R.T
    Z = np.zeros((3, 3))
    J_wA, J_vA = np.hstack([np.eye(3), Z]), np.hstack([-skew(c_A), Z])
    J_wB, J_vB = np.hstack([np.eye(3), R]), np.hstack([-skew(p), -skew(p - d) @ R])
    M = (m_A * J_vA.T @ J_vA + J_wA.T @ I_A @ J_wA + m_B * J_vB.T @ J_vB + J_wB.T @ I_B @ J_wB)
    K = np.diag([200.0] * 3 + [80.0] * 3)
    # The planar (about x) block written out: B's x axis is A's x axis.
    planar = np.array([
        [I_A[0, 0] + m_A * c_A @ c_A + I_t + m_B * p @ p, I_t + m_B * p @ (p - d)],
        [I_t + m_B * p @ (p - d), I_t + m_B * (0.5 * L_B) ** 2]])
    return M, K, planar


def test_two_limbs_frequencies_are_the_hand_derived_eigenvalues():
    sim = simulation(TWO_LIMBS, gravity=NO_GRAVITY, tuning={"damping_scale": 0.0})
    M, K, planar = two_limb_matrices()
    x, yz = [0, 3], [1, 2, 4, 5]
    # The tree is symmetric under x → −x: the planar motion (rotations about x) decouples.
    np.testing.assert_allclose(M[np.ix_(x, x)], planar, rtol=MATRIX_RTOL)
    assert np.abs(M[np.ix_(x, yz)]).max() < MATRIX_RTOL * np.abs(M).max()
    omega2 = np.concatenate([scipy.linalg.eigh(K[np.ix_(s, s)], M[np.ix_(s, s)],
                                               eigvals_only=True) for s in (x, yz)])
    expected = np.sort(np.sqrt(omega2)) / (2 * math.pi)

    model = lin.linearise(sim)
    M_core, K_core, C_core = model.dense()
    np.testing.assert_allclose(M_core, M, rtol=0, atol=MATRIX_RTOL * np.abs(M).max())
    np.testing.assert_allclose(K_core, K, rtol=0, atol=MATRIX_RTOL * K.max())
    assert not C_core.any()

    result = modes(sim, count=6)
    np.testing.assert_allclose(result.frequencies_hz, expected, rtol=TWO_LIMB_FREQUENCY_RTOL)
    np.testing.assert_allclose(result.periods, 1.0 / expected, rtol=TWO_LIMB_FREQUENCY_RTOL)
    assert np.all(result.damping_ratios == 0.0)
    assert result.equilibrium_method == "prestressed rest pose"


def test_shipped_two_limbs_reports_six_damped_modes():
    result = modes(load_preset("two_limbs"), count=10)  # more than the 6 there are
    assert result.count == 6
    assert result.limb_names == ["A", "B"]
    data = json.loads(modes_command_output(load_preset("two_limbs"), 2, as_json=True))
    assert data["limb_names"] == ["A", "B"] and data["preset"] == "Two limbs"
    assert np.all(np.diff(result.frequencies_hz) >= 0.0)
    assert np.all(result.damping_ratios > 0.0)
    assert result.shapes.shape == result.tip_displacements.shape == (6, 2, 3)
    assert [d.split()[:2] for d in result.descriptions[:2]] == [["trunk", "sway"]] * 2
    assert result.descriptions[-1].startswith("trunk twist")


def test_a_soft_branch_is_named_in_the_description():
    limbs = [dict(limb) for limb in THREE_LIMBS]
    limbs[2]["stiffness"] = 4.0                           # C: ~12× softer than before
    result = modes(simulation(limbs, gravity=GRAVITY), count=2)
    assert [d.rsplit(" ", 1)[0] for d in result.descriptions] == ["branch C sway"] * 2


# ---------------------------------------------------------------------------------------------
# 2. A single upright limb on a spring under gravity: ω² = (k − m g l) / J exactly.
# ---------------------------------------------------------------------------------------------

ONE_LIMB_RTOL = 1e-10


def test_gravity_lowers_an_upright_limb_exactly_as_an_inverted_pendulum():
    limb = dict(TWO_LIMBS[0])
    J = 0.17 + 2.0 * 0.5**2
    for g, k_scale in ((0.0, 1.0), (9.81, 1.0), (9.81, 0.3)):
        sim = simulation([limb], gravity=[0, 0, -g], tuning={"damping_scale": 0.0,
                                                             "stiffness_scale": k_scale})
        result = modes(sim, count=2)
        expected = math.sqrt((k_scale * 200.0 - 2.0 * g * 0.5) / J) / (2 * math.pi)
        np.testing.assert_allclose(result.frequencies_hz, expected, rtol=ONE_LIMB_RTOL)
        assert result.descriptions == ["trunk sway x", "trunk sway y"]


def test_gravity_lowers_the_lowest_frequency_of_an_upright_prestressed_tree():
    for limbs in (TWO_LIMBS, THREE_LIMBS):
        without = modes(simulation(limbs, gravity=NO_GRAVITY), count=1).frequencies_hz[0]
        sim = simulation(limbs, gravity=GRAVITY)
        assert sim.prestressed
        with_gravity = modes(sim, count=1)
        assert with_gravity.equilibrium_method == "prestressed rest pose"
        assert with_gravity.frequencies_hz[0] < 0.99 * without


# ---------------------------------------------------------------------------------------------
# 3. Slender columns: Euler–Bernoulli cantilever and Greenhill's self-buckling height.
# ---------------------------------------------------------------------------------------------

COLUMN_RADIUS = 0.01       # m
COLUMN_LENGTH = 5.0        # m: r/L = 0.002, rotary inertia of the section negligible
YOUNGS_MODULUS = 1.0e10    # Pa (the material default)
DENSITY = 700.0            # kg/m³ (the material default)
BETA_L = (1.875104, 4.694091, 7.854757)   # Euler–Bernoulli cantilever (docs/design.md §6.4)
CHAIN_SIZES = (10, 20, 40)
ORDER_TOLERANCE = 0.3      # the brief's 2 ± 0.3
# x and y bending of an axisymmetric column are equal to round-off, which for a low eigenvalue
# is ~ε·ω²_max/ω² (the twist of the shortest limb sets ω_max): ~1e-9 at n = 10, more at 40.
DEGENERATE_RTOL = 1e-7


def column(n: int, height: float, gravity) -> Simulation:
    """n equal limbs stacked vertically, material stiffness and inertia, no damping."""
    limbs = [{"name": f"s{i}", "parent": None if i == 0 else f"s{i - 1}",
              "length": height / n, "radius": COLUMN_RADIUS} for i in range(n)]
    return simulation(limbs, gravity=gravity, material={"damping_ratio": 0.0})


def test_chain_converges_to_the_euler_bernoulli_cantilever_at_second_order():
    EI = YOUNGS_MODULUS * math.pi * COLUMN_RADIUS**4 / 4.0
    rho_A = DENSITY * math.pi * COLUMN_RADIUS**2
    exact = np.array(BETA_L) ** 2 * math.sqrt(EI / (rho_A * COLUMN_LENGTH**4)) / (2 * math.pi)
    errors = []
    for n in CHAIN_SIZES:
        result = modes(column(n, COLUMN_LENGTH, NO_GRAVITY), count=6)
        f = result.frequencies_hz
        # Bending in x and y: three degenerate pairs, below every twist mode.
        np.testing.assert_allclose(f[0::2], f[1::2], rtol=DEGENERATE_RTOL)
        assert all("sway" in d for d in result.descriptions), result.descriptions
        assert [d.split()[2] for d in result.descriptions] == ["x", "y"] * 3
        errors.append(f[0::2] / exact - 1.0)
    errors = np.array(errors)                      # (sizes, modes)
    print("relative errors (rows n = 10, 20, 40):\n", errors)
    # docs/design.md §6.4: f1 is 0.46 % low at n = 10 and 0.12 % low at n = 20.
    np.testing.assert_allclose(errors[:2, 0], [-0.0046, -0.0012], atol=0.0002)
    orders = np.log2(errors[:-1] / errors[1:])
    print("measured orders:\n", orders)
    assert np.all(np.abs(orders - 2.0) <= ORDER_TOLERANCE), orders


GREENHILL = 7.837          # (q H³ / EI) at which a column buckles under its own weight
COLUMN_SEGMENTS = 20


def test_column_made_taller_loses_its_sway_frequency_then_buckles():
    EI = YOUNGS_MODULUS * math.pi * COLUMN_RADIUS**4 / 4.0
    q = DENSITY * 9.81 * math.pi * COLUMN_RADIUS**2
    critical = (GREENHILL * EI / q) ** (1.0 / 3.0)
    frequencies = []
    for fraction in (0.5, 0.7, 0.85, 0.95, 0.98):
        result = modes(column(COLUMN_SEGMENTS, fraction * critical, GRAVITY), count=1)
        frequencies.append(result.frequencies_hz[0])
    print("lowest frequencies, Hz:", frequencies)
    assert np.all(np.diff(frequencies) < 0.0)
    assert frequencies[-1] < 0.1 * frequencies[0]
    # Within 2 % of Greenhill's height the stiffness matrix turns indefinite.
    with pytest.raises(TreedynError, match="statically unstable under its own weight") as error:
        modes(column(COLUMN_SEGMENTS, 1.02 * critical, GRAVITY), count=1)
    assert "\n" not in str(error.value)


# ---------------------------------------------------------------------------------------------
# 4. The linearisation against independent references and finite differences.
# ---------------------------------------------------------------------------------------------

RANDOM_TREE_SIZE = 6
RANDOM_SEED = 11
# Second differences of the energy, Richardson-extrapolated (steps 2e-3, 1e-3 rad): truncation
# O(h⁴) ≈ 1e-11 and round-off ~ε·V/h² ≈ 1e-10 of the matrix scale.
ENERGY_FD_RTOL = 1e-7
# Central differences of the generalized forces (exact gradients), Richardson-extrapolated:
# round-off ~ε·|Q|/h ≈ 1e-12 relative; 1e-8 leaves room.
FORCE_FD_RTOL = 1e-8
MASS_ORTHOGONALITY_ATOL = 1e-8


def random_tree(gravity=GRAVITY, prestress=True):
    limbs = random_limbs(RANDOM_TREE_SIZE, RANDOM_SEED)
    return limbs, simulation(limbs, gravity=gravity, prestress=prestress)


def in_preset_order_dofs(tree):
    """Index array mapping preset-order dofs to breadth-first dofs."""
    return (3 * tree.preset_index[:, None] + np.arange(3)).ravel()


def reference_energy(rtree, R, spring_R, stiffness, gravity):
    """V_gravity + Σ ½ θᵀKθ from the reference (scipy rotations); preset order."""
    _, V = ref.energies(rtree, R, np.zeros((rtree.n, 3)), gravity)
    for i in range(rtree.n):
        V += ref.spring_potential(ref.rotation_log(spring_R[i].T @ R[i]), stiffness[i])
    return V


def reference_forces(rtree, R, spring_R, stiffness, gravity):
    """Generalized forces (spring + gravity), (3N,), preset order, from the reference RNEA
    (−bias at v = 0) and the finite-difference spring torque."""
    return (ref.spring_torque_fd(R, spring_R, stiffness).reshape(-1)
            - ref.bias(rtree, R, np.zeros((rtree.n, 3)), gravity))


def perturbed(R, eps):
    return np.array([R[i] @ ref.rotation_exp(eps[3 * i:3 * i + 3]) for i in range(len(R))])


def richardson(difference, h):
    return (4.0 * difference(h / 2) - difference(h)) / 3.0


def test_mass_matrix_and_mode_shapes_against_the_reference_dynamics():
    limbs, sim = random_tree()
    rtree, R_rest = reference_tree_from_limbs(limbs)
    result = modes(sim, count=3 * RANDOM_TREE_SIZE)
    assert result.equilibrium_method == "prestressed rest pose"
    np.testing.assert_allclose(result.equilibrium, R_rest, atol=1e-14)
    M_ref = ref.mass_matrix(rtree, R_rest)
    dofs = in_preset_order_dofs(sim.tree)
    M_core = lin.linearise(sim).M.to_dense()
    np.testing.assert_allclose(M_core, M_ref[np.ix_(dofs, dofs)], rtol=0,
                               atol=MATRIX_RTOL * np.abs(M_ref).max())
    Phi = result.shapes.reshape(result.count, -1).T      # preset order
    gram = Phi.T @ M_ref @ Phi
    print("max |ΦᵀMΦ − 1|:", np.abs(gram - np.eye(result.count)).max())
    np.testing.assert_allclose(gram, np.eye(result.count), rtol=0, atol=MASS_ORTHOGONALITY_ATOL)


def test_stiffness_matrix_is_the_hessian_of_the_energy_away_from_equilibrium():
    limbs, sim = random_tree()
    rtree, R_rest = reference_tree_from_limbs(limbs)
    tree = sim.tree
    rng = np.random.default_rng(5)
    R = R_rest @ so3.exp_many(rng.normal(scale=0.4, size=(tree.n, 3)))    # preset order
    spring_R = tree.to_preset_order(sim.spring_C_rel)
    stiffness = tree.to_preset_order(tree.stiffness)
    V = lambda e: reference_energy(rtree, perturbed(R, e), spring_R, stiffness, GRAVITY)  # noqa

    n3 = 3 * tree.n
    basis = np.eye(n3)

    def second_differences(h):
        H = np.empty((n3, n3))
        for a in range(n3):
            for b in range(a, n3):
                ea, eb = h * basis[a], h * basis[b]
                H[a, b] = H[b, a] = (V(ea + eb) - V(ea - eb) - V(eb - ea) + V(-ea - eb)) / (4 * h * h)
        return H

    H_fd = richardson(second_differences, 2e-3)
    config = lin.Configuration(sim, tree.from_preset_order(R))
    dofs = in_preset_order_dofs(tree)
    K = lin.stiffness_matrix(config).to_dense()[np.ix_(dofs, dofs)]
    scale = np.abs(K).max()
    print("K vs energy second differences:", np.abs(K - H_fd).max() / scale)
    np.testing.assert_allclose(K, H_fd, rtol=0, atol=ENERGY_FD_RTOL * scale)

    # The generalized forces are the right-trivialised gradient: −dQ/dε = K + diag(½ (−Q_i)^×),
    # whose symmetric part is K.
    Q0 = reference_forces(rtree, R, spring_R, stiffness, GRAVITY)
    np.testing.assert_allclose(config.generalized_forces().reshape(-1)[dofs], Q0, rtol=0,
                               atol=1e-7 * np.abs(Q0).max())

    def force_differences(h):
        return np.column_stack([
            -(reference_forces(rtree, perturbed(R, h * basis[a]), spring_R, stiffness, GRAVITY)
              - reference_forces(rtree, perturbed(R, -h * basis[a]), spring_R, stiffness,
                                 GRAVITY)) / (2 * h) for a in range(n3)])

    J = richardson(force_differences, 1e-3)
    np.testing.assert_allclose(0.5 * (J + J.T), K, rtol=0, atol=1e-6 * scale)
    twist = np.zeros_like(K)
    for i in range(tree.n):
        twist[3 * i:3 * i + 3, 3 * i:3 * i + 3] = 0.5 * skew(-Q0[3 * i:3 * i + 3])
    np.testing.assert_allclose(J, K + twist, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("angle", [1e-3, 0.1, 0.45, 0.55, 1.0, 2.5])
def test_spring_hessian_against_differences_of_the_exact_gradient(angle):
    rng = np.random.default_rng(int(angle * 1000))
    A = rng.normal(size=(3, 3))
    K = A @ A.T + 50.0 * np.eye(3)                   # anisotropic, N m/rad
    C_spring = so3.exp(rng.normal(size=3))
    axis = rng.normal(size=3)
    R = C_spring @ so3.exp(angle * axis / np.linalg.norm(axis))

    def gradient(e):
        theta, tau, energy = spring_torque(R @ so3.exp(e), C_spring, K, 1.3)
        return -np.array(tau)

    def differences(h):
        return np.column_stack([(gradient(h * np.eye(3)[a]) - gradient(-h * np.eye(3)[a]))
                                / (2 * h) for a in range(3)])

    G = richardson(differences, 2e-3)
    H = lin.spring_hessians(R[None], C_spring[None], K[None], 1.3)[0]
    np.testing.assert_allclose(0.5 * (G + G.T), H, rtol=0, atol=1e-9 * np.abs(H).max())
    if angle >= 1.0:
        # At θ ≠ 0 the second variation is not the stiffness K: the test can tell.
        assert np.abs(H - 1.3 * K).max() > 1e-2 * np.abs(H).max()


# Central differences of the simulator's accelerations in (ε, v) about the equilibrium:
# truncation O(h²) with h = 1e-6 rad and round-off ~ε/h: ≈ 1e-9 of the acceleration scale.
ACCELERATION_FD_RTOL = 1e-6


def test_linear_model_reproduces_the_simulators_accelerations():
    limbs, sim = random_tree()
    model = lin.linearise(sim)
    M, K, C = model.dense()
    n = sim.tree.n
    rng = np.random.default_rng(2)
    eps = rng.normal(size=(n, 3))
    rate = rng.normal(size=(n, 3))
    R0 = model.equilibrium.R_rel

    def accelerations(e, v):
        q = np.array([so3.quat_from_matrix(R) for R in R0 @ so3.exp_many(e)])
        system = sim.system()._replace(ext_force=np.zeros((n, 3)), ext_torque=np.zeros((n, 3)))
        return articulated_dynamics(system, q, np.ascontiguousarray(v), 0.0, 0.0).reshape(-1).copy()

    h = 1e-6
    zero = np.zeros((n, 3))
    da_de = (accelerations(h * eps, zero) - accelerations(-h * eps, zero)) / (2 * h)
    da_dv = (accelerations(zero, h * rate) - accelerations(zero, -h * rate)) / (2 * h)
    expected_e = -np.linalg.solve(M, K @ eps.reshape(-1))
    expected_v = -np.linalg.solve(M, C @ rate.reshape(-1))
    np.testing.assert_allclose(da_de, expected_e, rtol=0,
                               atol=ACCELERATION_FD_RTOL * np.abs(expected_e).max())
    np.testing.assert_allclose(da_dv, expected_v, rtol=0,
                               atol=ACCELERATION_FD_RTOL * np.abs(expected_v).max())


# ---------------------------------------------------------------------------------------------
# 5. Statics without prestress: Newton, load stepping, failure.
# ---------------------------------------------------------------------------------------------

STATICS_RTOL = 1e-9


def test_newton_finds_the_equilibrium_of_a_tree_without_prestress():
    limbs, sim = random_tree(prestress=False)
    rtree, _ = reference_tree_from_limbs(limbs)
    equilibrium = lin.static_equilibrium(sim)
    assert equilibrium.method.startswith("Newton")
    tree = sim.tree
    R = tree.to_preset_order(equilibrium.R_rel)
    Q = reference_forces(rtree, R, tree.to_preset_order(sim.spring_C_rel),
                         tree.to_preset_order(tree.stiffness), GRAVITY)
    weight = ref.bias(rtree, tree.to_preset_order(tree.rest_C_rel), np.zeros((tree.n, 3)),
                      GRAVITY)
    # The reference spring torque is a finite difference (1e-7 relative).
    assert np.abs(Q).max() < 1e-6 * np.abs(weight).max()
    assert equilibrium.residual < STATICS_RTOL * np.abs(weight).max()


def test_load_stepping_carries_a_soft_horizontal_branch_to_its_sag():
    # A horizontal limb on a soft isotropic spring: k θ = m g l cos θ, θ ≈ 0.8 rad, too far for
    # the first Newton step from the rest pose (it would overshoot to m g l / k ≈ 1.4 rad).
    k, m, L = 7.0, 2.0, 1.0
    limb = {"name": "arm", "parent": None, "length": L, "radius": 0.05, "direction": [1, 0, 0],
            "mass": m, "inertia": [0.01, 0.2, 0.2], "stiffness": k, "damping": 0.1}
    sim = simulation([limb], gravity=GRAVITY, prestress=False)
    equilibrium = lin.static_equilibrium(sim)
    assert equilibrium.method == "Newton with load stepping"
    sag = scipy.optimize.brentq(lambda t: k * t - m * 9.81 * 0.5 * L * math.cos(t), 0, 1.5,
                                xtol=1e-15)
    np.testing.assert_allclose(so3.log(equilibrium.R_rel[0]), [0.0, sag, 0.0], atol=STATICS_RTOL)
    assert modes(sim, count=3).count == 3


def test_a_softened_prestressed_tree_sags_to_a_new_equilibrium():
    # The stiffness slider moved after load: the prestress is not recomputed (docs/design.md §6), so the
    # rest pose is no longer in equilibrium and Newton finds where the tree sags to.
    sim = simulation(THREE_LIMBS, gravity=GRAVITY)
    stiff = modes(sim, count=1).frequencies_hz[0]
    sim.set_stiffness_scale(0.5)
    result = modes(sim, count=1)
    assert result.equilibrium_method == "Newton"
    equilibrium = lin.static_equilibrium(sim)
    weight = np.abs(lin.Configuration(sim, sim.tree.rest_C_rel).generalized_forces()).max()
    assert weight > 1.0                                   # N m: the rest pose is out of balance
    assert equilibrium.residual < STATICS_RTOL * weight
    sag = np.linalg.norm(so3.log_many(np.einsum("nji,njk->nik", sim.tree.rest_C_rel,
                                                equilibrium.R_rel)), axis=1)
    assert sag.max() > 0.01                               # rad
    assert result.frequencies_hz[0] < stiff


def test_no_equilibrium_is_a_clear_error():
    limb = {"name": "arm", "parent": None, "direction": [1, 0, 0], "stiffness": 0.0}
    sim = simulation([limb], gravity=GRAVITY, prestress=False)
    with pytest.raises(TreedynError, match="no static equilibrium under gravity"):
        modes(sim)


# ---------------------------------------------------------------------------------------------
# 6. Damping ratios against free decay (RK4, small dt) started along the damped mode.
# ---------------------------------------------------------------------------------------------

DECAY_RTOL = 0.02               # the brief's 2 %
DECAY_FREQUENCY_RTOL = 1e-3
DECAY_AMPLITUDE = math.radians(0.3)   # rad, largest joint rotation: linear to ~1e-5
DECAY_PERIODS = 8


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_damping_ratio_matches_free_decay(mode):
    sim = simulation(THREE_LIMBS, gravity=GRAVITY)
    result = modes(sim, count=3)
    model = lin.linearise(sim)
    M, K, C = model.dense()
    # The damped mode nearest to this one: x(0) = Re ψ, v(0) = Re(λψ) excites it alone.
    n3 = M.shape[0]
    A = np.block([[np.zeros((n3, n3)), np.eye(n3)], [-np.linalg.solve(M, K),
                                                     -np.linalg.solve(M, C)]])
    lam, Z = np.linalg.eig(A)
    target = 2 * math.pi * result.frequencies_hz[mode]
    pick = np.argmin(np.abs(np.abs(lam) - target) + 1e3 * (lam.imag < 0))
    psi = Z[:n3, pick]
    psi = psi / psi[np.argmax(np.abs(psi))]
    scale = DECAY_AMPLITUDE / np.abs(psi.real).max()
    x0 = (scale * psi.real).reshape(-1, 3)
    v0 = (scale * (lam[pick] * psi).real).reshape(-1, 3)
    tree = sim.tree
    initial = [{"limb": tree.names[i], "rotation_deg": [float(a) for a in np.degrees(x0[i])],
                "angular_velocity": [float(a) for a in v0[i]]} for i in range(tree.n)]
    run = simulation(THREE_LIMBS, initial_state=initial, gravity=GRAVITY, integrator="rk4")
    omega = fastest_joint_rate(run)
    run.dt = min(1e-3, 0.5 / omega)
    phi = tree.from_preset_order(result.shapes[mode], axis=0).reshape(-1)
    weights = M @ phi
    R_eq = model.equilibrium.R_rel
    period = 1.0 / result.frequencies_hz[mode]
    steps = int(DECAY_PERIODS * period / run.dt)
    signal = np.empty(steps + 1)
    for s in range(steps + 1):
        if s:
            run.step(1)
        R = np.array([so3.quat_to_matrix(q) for q in run.q])
        eps = so3.log_many(np.einsum("nji,njk->nik", R_eq, R))
        signal[s] = weights @ eps.reshape(-1)
    peaks = [k for k in range(1, steps) if signal[k - 1] < signal[k] >= signal[k + 1]]
    times, values = [], []
    for k in peaks:
        y0, y1, y2 = signal[k - 1:k + 2]
        shift = 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2)
        times.append((k + shift) * run.dt)
        values.append(y1 - 0.25 * (y0 - y2) * shift)
    slope, _ = np.polyfit(times, np.log(values), 1)
    damped = 2 * math.pi / np.mean(np.diff(times))
    natural = math.hypot(slope, damped)
    zeta = -slope / natural
    print(f"mode {mode + 1}: ζ free decay {zeta:.6f}, modes {result.damping_ratios[mode]:.6f}; "
          f"f {natural / 2 / math.pi:.6f} vs {result.frequencies_hz[mode]:.6f} Hz")
    assert len(peaks) >= DECAY_PERIODS - 1
    np.testing.assert_allclose(zeta, result.damping_ratios[mode], rtol=DECAY_RTOL)
    np.testing.assert_allclose(natural / (2 * math.pi), result.frequencies_hz[mode],
                               rtol=DECAY_FREQUENCY_RTOL)


# ---------------------------------------------------------------------------------------------
# 7. The sparse shift-invert path, the command's output, giant.
# ---------------------------------------------------------------------------------------------

SPARSE_DENSE_RTOL = 1e-9
# The matrix-free solver (ARPACK on the low-rank tree matrices, then Rayleigh–Ritz) against the
# dense reference from the pair-pattern matrices: frequencies, and 1 − MAC of the mode shapes
# (asked: 1e-8; measured ≤ 1.1e-14 and ≤ 1.5e-14 on the cases below).
MATRIX_FREE_FREQUENCY_RTOL = 1e-11
MATRIX_FREE_MAC_TOLERANCE = 1e-11
# The low-rank matrices against the pair-pattern blocks (the same sums in another order).
LOWRANK_RTOL = 1e-12


def test_sparse_shift_invert_agrees_with_the_dense_solver(monkeypatch):
    preset = load_preset("sapling")
    dense = modes(preset, count=8)
    monkeypatch.setattr(modes_module, "DENSE_DOF_LIMIT", 0)
    sparse = modes(preset, count=8)
    np.testing.assert_allclose(sparse.omega_squared, dense.omega_squared, rtol=SPARSE_DENSE_RTOL)
    # Projected on the lowest 13 modes instead of all 84: a small change in the damping.
    np.testing.assert_allclose(sparse.damping_ratios, dense.damping_ratios, rtol=1e-3)
    overlap = np.abs(np.einsum("kni,kni->k", sparse.shapes, dense.shapes)
                     / np.linalg.norm(sparse.shapes.reshape(8, -1), axis=1)
                     / np.linalg.norm(dense.shapes.reshape(8, -1), axis=1))
    np.testing.assert_allclose(overlap, 1.0, atol=1e-6)


# Random limbs' springs (50–500 N m/rad) times this: trees of 40 limbs that carry their weight.
RANDOM_STIFFENING = 100.0


def random_modes_tree(n, seed, deep):
    """A random tree of `random_limbs`, springs × `RANDOM_STIFFENING`, prestressed under
    gravity; `deep`: each limb's parent is the previous limb three times in four (depth
    ~ 3n/4), otherwise any earlier limb."""
    limbs = random_limbs(n, seed)
    rng = np.random.default_rng(seed + 1000)
    for i in range(n):
        limbs[i]["stiffness"] = [RANDOM_STIFFENING * k for k in limbs[i]["stiffness"]]
        if deep and i > 0 and rng.uniform() < 0.75:
            limbs[i]["parent"] = limbs[i - 1]["name"]
    return simulation(limbs, gravity=GRAVITY, prestress=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lowrank_matrices_are_the_pair_pattern_blocks(seed):
    """M, K (away from equilibrium, gravity on) and a solve and the inertia of K − σM, with σ
    between the 3rd and 4th eigenvalues: the low-rank form against the blocks and dense
    linear algebra."""
    sim = random_modes_tree(30, seed, deep=True)
    rng = np.random.default_rng(seed)
    R = perturbed(np.ascontiguousarray(sim.tree.rest_C_rel),
                  0.2 * rng.standard_normal(3 * sim.tree.n))
    config = lin.Configuration(sim, R)
    M, K_gravity = lin.lowrank_matrices(config)
    K = lin.stiffness_matrix(config).to_dense()
    M_dense = lin.mass_matrix(config).to_dense()
    for lowrank, dense in ((M, M_dense), (lin._tangent_stiffness(config), K)):
        np.testing.assert_allclose(lowrank.to_dense(), dense, rtol=0,
                                   atol=LOWRANK_RTOL * np.abs(dense).max())
    eigenvalues = scipy.linalg.eigh(K, M_dense, eigvals_only=True)
    sigma = 0.5 * (eigenvalues[2] + eigenvalues[3])
    factor = lin._tangent_stiffness(config).combined(M, -sigma).factor()
    assert factor.ok and factor.negative == 3
    b = rng.standard_normal((M_dense.shape[0], 2))
    expected = np.linalg.solve(K - sigma * M_dense, b)
    np.testing.assert_allclose(factor.solve(b), expected, rtol=0,
                               atol=1e-9 * np.abs(expected).max())


def dense_reference_modes(sim, count):
    """(ω² (count,), Φ (3N, count) breadth-first, M) from the pair-pattern matrices at the
    tree's static equilibrium, dense: the largest eigenvalues 1/ω² of L⁻¹ M L⁻ᵀ (K = L Lᵀ),
    whose round-off is ε relative to 1/ω²_min, where that of eigh(K, M) is ε·ω²_max (3e-8 of
    conifer's lowest frequency)."""
    config = lin.Configuration(sim, lin.static_equilibrium(sim).R_rel)
    M = lin.mass_matrix(config).to_dense()
    L = scipy.linalg.cholesky(lin.stiffness_matrix(config).to_dense(), lower=True)
    A = scipy.linalg.solve_triangular(L, scipy.linalg.solve_triangular(L, M, lower=True).T,
                                      lower=True)
    n = M.shape[0]
    mu, Y = scipy.linalg.eigh(0.5 * (A + A.T), subset_by_index=[n - count, n - 1])
    Phi = scipy.linalg.solve_triangular(L.T, Y[:, ::-1], lower=False)
    return 1.0 / mu[::-1], Phi, M


@pytest.mark.parametrize("case", ["random 1", "random 2", "deep 4", "deep 5", "sapling",
                                  "young_oak", "conifer"])
def test_matrix_free_modes_agree_with_the_dense_solver(case, monkeypatch):
    kind, _, seed = case.partition(" ")
    if seed:
        sim = random_modes_tree(40, int(seed), deep=kind == "deep")
    else:
        sim = Simulation(load_preset(case))
    count = 8
    omega2, Phi, M = dense_reference_modes(sim, count)
    monkeypatch.setattr(modes_module, "DENSE_DOF_LIMIT", 0)
    result = modes(sim, count)
    np.testing.assert_allclose(np.sqrt(result.omega_squared), np.sqrt(omega2),
                               rtol=MATRIX_FREE_FREQUENCY_RTOL)
    shapes = result.shapes.reshape(count, -1)[:, in_preset_order_dofs(sim.tree)]
    cross = shapes @ M @ Phi
    mac = np.diag(cross) ** 2 / (np.einsum("ki,ij,kj->k", shapes, M, shapes)
                                 * np.einsum("ik,ij,jk->k", Phi, M, Phi))
    assert np.all(1.0 - mac <= MATRIX_FREE_MAC_TOLERANCE), 1.0 - mac


# Euler–Bernoulli cantilever: the roots of cos x cosh x = −1 (βL of the first two modes).
BETA_L_EXACT = [scipy.optimize.brentq(lambda x: math.cos(x) * math.cosh(x) + 1.0, a, b)
                for a, b in ((1.0, 3.0), (4.0, 5.5))]
# A fibre: r/L = 1e-5 keeps the section's rotary inertia (Rayleigh's correction, ~(r/L)²)
# three orders below the discretisation error of 4,000 segments.
FIBRE_LENGTH, FIBRE_RADIUS = 5.0, 5.0e-5   # m
LONG_CHAIN_SIZES = (1000, 2000, 4000)
# Measured orders 1.996–1.9995: the error is c/n² to a part in 10³ up to 4,000 segments.
LONG_CHAIN_ORDER_TOLERANCE = 0.02


def test_long_chain_converges_to_the_euler_bernoulli_cantilever_at_second_order():
    """Generated stems of 1,000–4,000 segments (the matrix-free solver): the lowest two bending
    frequencies against the cantilever's, errors ~1e-7…3e-8; x and y bending equal."""
    EI = YOUNGS_MODULUS * math.pi * FIBRE_RADIUS**4 / 4.0
    rho_A = DENSITY * math.pi * FIBRE_RADIUS**2
    exact = (np.array(BETA_L_EXACT) ** 2 * math.sqrt(EI / (rho_A * FIBRE_LENGTH**4))
             / (2 * math.pi))
    errors = []
    for n in LONG_CHAIN_SIZES:
        data = preset_data(generator={"trunk": {"length": FIBRE_LENGTH, "radius": FIBRE_RADIUS,
                                                "segments": n},
                                      "levels": 0, "stem_form": 0.0, "jitter": 0.0},
                           wind=NO_AIR, simulation={"gravity": NO_GRAVITY},
                           material={"density": DENSITY, "youngs_modulus": YOUNGS_MODULUS,
                                     "damping_ratio": 0.0})
        result = modes(data, count=4)
        f = result.frequencies_hz
        np.testing.assert_allclose(f[0::2], f[1::2], rtol=1e-10)
        assert [d.split()[2] for d in result.descriptions] == ["x", "y"] * 2
        errors.append(f[0::2] / exact - 1.0)
    errors = np.array(errors)
    print("relative errors (rows n = 1000, 2000, 4000):\n", errors)
    assert np.all(errors < 0.0) and np.all(np.abs(errors[-1]) < 2e-7)
    orders = np.log2(errors[:-1] / errors[1:])
    print("measured orders:\n", orders)
    assert np.all(np.abs(orders - 2.0) <= LONG_CHAIN_ORDER_TOLERANCE), orders


def test_modes_table_and_json():
    preset = load_preset("sapling")
    table = modes_command_output(preset, 4, as_json=False).splitlines()
    assert table[1].split("  ")[:1] == ["mode"]
    for column in ("frequency (Hz)", "period (s)", "damping ratio", "motion"):
        assert column in table[1]
    assert len(table) == 2 + 4 + 1
    assert table[2].split()[0] == "1"
    assert table[-1].startswith("sway frequency f0 = ") and " Hz " in table[-1]

    data = json.loads(modes_command_output(preset, 3, as_json=True))
    assert set(data) == {"preset", "modes", "limb_names", "sway_frequency_hz", "sway_mode",
                         "sway_share"}
    assert data["preset"] == "Oak sapling"
    assert data["limb_names"][0] == "trunk0"            # generator order
    n = len(data["limb_names"])
    assert len(data["modes"]) == 3
    for mode in data["modes"]:
        assert set(mode) == {"frequency_hz", "period_s", "damping_ratio", "description",
                             "joint_rotation", "tip_displacement"}
        assert np.shape(mode["joint_rotation"]) == np.shape(mode["tip_displacement"]) == (n, 3)
        assert math.isclose(mode["period_s"], 1.0 / mode["frequency_hz"])


def test_an_unstable_tree_is_one_line_for_the_command():
    with pytest.raises(TreedynError) as error:
        modes_command_output(column(COLUMN_SEGMENTS, 10.0, GRAVITY).data, 3, as_json=False)
    message = str(error.value)
    assert "statically unstable" in message and "buckle" in message and "\n" not in message


@pytest.mark.slow
def test_giant_lowest_ten_modes():
    sim = Simulation(load_preset("giant"))
    start = time.perf_counter()
    result = modes(sim, count=10)
    elapsed = time.perf_counter() - start
    print(f"giant: {sim.tree.n} limbs, 10 modes in {elapsed:.1f} s:", result.frequencies_hz,
          result.descriptions)
    assert result.count == 10
    assert np.all(np.diff(result.frequencies_hz) >= 0.0) and result.frequencies_hz[0] > 0.0
    assert np.all((result.damping_ratios > 0.0) & (result.damping_ratios < 0.2))
    assert result.shapes.shape == (10, sim.tree.n, 3)
    assert elapsed < 60.0
