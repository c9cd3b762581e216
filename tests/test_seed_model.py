"""The seed model (docs/design.md §3 `seed`) against the blog post's formulas, its O(N) implicit
solve against a dense one, its energy, and its prestress.

The expected moments are written here from the post (docs/design.md §3.2) with scipy's
rotations, not from the model's code: spring ``−k_B (E − Eᵀ)^∨`` with
``E = C_abᵀ C_AB``, damper ``−c_B ω_B`` (absolute rate), the parent receiving
``−C_AB M``, gravity ``c × m C_IFᵀ g`` about each base, Euler's equation with the
inertia about the base. Runs are in still air with aerodynamics off unless a test
says otherwise.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from builders import preset_data
from physics_cases import TWO_LIMBS, random_initial_state
from random_trees import random_limbs
from treedyn_core.dynamics.joints import gravity_stiffness_psd
from treedyn_core.model.preset import load_preset
from treedyn_core.dynamics.seed_model import (SeedDynamics, seed_pose,
                                              seed_prestressed_spring_rotations)
from treedyn_core.simulation import Simulation

NO_AIR = {"speed": 0.0, "drag_coefficient": 0.0, "leaf_drag_coefficient": 0.0}
GRAVITY = np.array([0.0, 0.0, -9.81])
SHIPPED = ("two_limbs", "sapling", "young_oak", "conifer", "weeping_willow", "old_oak", "giant")

# Limb B of docs/design.md §6 from the material defaults: a solid cylinder of density 700 kg/m³.
B_MASS = 700.0 * math.pi * 0.03**2 * 0.8
B_COM = np.array([0.0, 0.0, 0.4])
# Inertias about the bases from the preset's numbers (parallel-axis theorem by hand).
I_A = np.diag([0.17 + 2.0 * 0.5**2, 0.17 + 2.0 * 0.5**2, 0.0025])
I_B_TRANSVERSE = B_MASS * (3 * 0.03**2 + 0.8**2) / 12.0 + B_MASS * 0.4**2
I_B = np.diag([I_B_TRANSVERSE, I_B_TRANSVERSE, 0.5 * B_MASS * 0.03**2])

# Round-off of 3×3 products of O(100) N m moments.
MOMENT_ATOL = 1e-11


def rotation(rotvec_deg) -> np.ndarray:
    return Rotation.from_rotvec(np.radians(rotvec_deg)).as_matrix()


def vee_of_difference(E: np.ndarray) -> np.ndarray:
    """(E − Eᵀ)^∨, the seed's "axis-angle" of E."""
    S = E - E.T
    return np.array([S[2, 1], S[0, 2], S[1, 0]])


def two_limb_seed(gravity=(0, 0, 0), damping_scale=1.0) -> Simulation:
    return Simulation.from_data(preset_data(
        TWO_LIMBS, wind=NO_AIR, simulation={"prestress": False, "gravity": list(gravity)},
        tuning={"damping_scale": damping_scale}), model="seed")


def set_absolute_state(sim: Simulation, C_IF: list, omega: list) -> None:
    """Joint state of absolute attitudes (limb → inertial) and body rates, parents first."""
    for i, (C, w) in enumerate(zip(C_IF, omega)):
        p = sim.tree.parent[i]
        C_parent = np.eye(3) if p < 0 else C_IF[p]
        R = C_parent.T @ C
        x, y, z, s = Rotation.from_matrix(R).as_quat()
        sim.q[i] = [s, x, y, z]
        sim.v[i] = w - (R.T @ omega[p] if p >= 0 else 0.0)


def test_two_limbs_literal_moments():
    """A upright and still; B turned a further 30° about x beyond its 30° rest tilt (so
    C_AB = R_x(60°), E = R_x(30°), (E − Eᵀ)^∨ = 2 sin 30° x̂ = x̂) and spinning at 2 rad/s
    about its own z: M_B = −80 x̂ − 0.4·2 ẑ; A receives C_AB (80 x̂ + 0.8 ẑ)."""
    sim = two_limb_seed()
    C_A, C_B = np.eye(3), rotation([60, 0, 0])
    set_absolute_state(sim, [C_A, C_B], [np.zeros(3), np.array([0.0, 0.0, 2.0])])
    moments = SeedDynamics(sim.tree, sim.inertia_base).moments(sim)
    s60, c60 = math.sin(math.radians(60)), math.cos(math.radians(60))
    np.testing.assert_allclose(moments[1], [-80.0, 0.0, -0.8], atol=MOMENT_ATOL)
    np.testing.assert_allclose(moments[0], [80.0, -0.8 * s60, 0.8 * c60], atol=MOMENT_ATOL)

    # Gravity adds B's own weight about its base only: c_B × m_B C_IBᵀ g = (0.4 m_B g sin 60°,
    # 0, 0); A is upright, its own weight has no moment about its base, and B's weight is
    # not passed to A (no force is transmitted in this model).
    sim = two_limb_seed(gravity=GRAVITY)
    set_absolute_state(sim, [C_A, C_B], [np.zeros(3), np.array([0.0, 0.0, 2.0])])
    moments = SeedDynamics(sim.tree, sim.inertia_base).moments(sim)
    np.testing.assert_allclose(moments[1], [-80.0 + 0.4 * B_MASS * 9.81 * s60, 0.0, -0.8],
                               atol=MOMENT_ATOL)
    np.testing.assert_allclose(moments[0], [80.0, -0.8 * s60, 0.8 * c60], atol=MOMENT_ATOL)


@pytest.mark.parametrize("terms", ["spring", "damper", "gravity", "all"])
def test_two_limbs_term_by_term(terms):
    """A generic state (both limbs tilted and spinning, B away from its rest in all three
    axes): each term of the post's moments on both limbs, and Euler's equation."""
    gravity = GRAVITY if terms in ("gravity", "all") else np.zeros(3)
    sim = two_limb_seed(gravity=gravity, damping_scale=0.0 if terms in ("spring", "gravity")
                        else 1.0)
    if terms in ("damper", "gravity"):
        sim.set_stiffness_scale(1e-300)   # springs off (the scale must stay > 0)
        sim.end_eases()
    C_A = rotation([12, -7, 25])
    C_B = C_A @ rotation([30, 0, 0]) @ rotation([-9, 14, 33])
    w_A, w_B = np.array([0.3, -1.1, 0.7]), np.array([-0.4, 0.9, 2.5])
    set_absolute_state(sim, [C_A, C_B], [w_A, w_B])
    seed = SeedDynamics(sim.tree, sim.inertia_base)

    k_A, k_B = 200.0 * sim.stiffness_scale, 80.0 * sim.stiffness_scale
    c_A, c_B = 1.0 * sim.damping_scale, 0.4 * sim.damping_scale
    C_AB = C_A.T @ C_B
    E_A = C_A                                          # the root's rest frame is I
    E_B = rotation([30, 0, 0]).T @ C_AB                # C_abᵀ C_AB
    spring_A, spring_B = -k_A * vee_of_difference(E_A), -k_B * vee_of_difference(E_B)
    damper_A, damper_B = -c_A * w_A, -c_B * w_B
    weight_A = np.cross([0, 0, 0.5], 2.0 * C_A.T @ gravity)
    weight_B = np.cross(B_COM, B_MASS * C_B.T @ gravity)
    expected_B = spring_B + damper_B + weight_B
    expected_A = spring_A + damper_A + weight_A - C_AB @ (spring_B + damper_B)

    moments = seed.moments(sim)
    np.testing.assert_allclose(moments[0], expected_A, atol=MOMENT_ATOL)
    np.testing.assert_allclose(moments[1], expected_B, atol=MOMENT_ATOL)
    # Euler's equation with the inertia about the base (relative: I⁻¹ of ~0.01 kg m²).
    omega_dot = seed.accelerations(sim)
    for w, I, M, got in ((w_A, I_A, expected_A, omega_dot[0]), (w_B, I_B, expected_B,
                                                                 omega_dot[1])):
        np.testing.assert_allclose(got, np.linalg.solve(I, M - np.cross(w, I @ w)),
                                   rtol=1e-10, atol=1e-10)


def test_joint_and_absolute_state_round_trip():
    """joint → absolute → joint is the identity to round-off (the step converts both ways)."""
    limbs = random_limbs(15, 4)
    sim = Simulation.from_data(preset_data(
        limbs, wind=NO_AIR, simulation={"prestress": False},
        initial_state=random_initial_state(limbs, 9, 40.0, 2.0)), model="seed")
    seed = SeedDynamics(sim.tree, sim.inertia_base)
    q, v = sim.q.copy(), sim.v.copy()
    seed.load(sim)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", sim.C_IF, seed.omega), sim.workspace.omega,
                               atol=1e-13)
    seed.store(sim)
    sign = np.sign(np.einsum("ni,ni->n", q, sim.q))[:, None]
    np.testing.assert_allclose(sign * sim.q, q, atol=1e-14)
    np.testing.assert_allclose(sim.v, v, atol=1e-13)


def test_implicit_tree_solve_matches_dense():
    """The O(N) leaves-to-root elimination solves (𝕄 + θh𝒞 + θ²h²𝒦) a = f − θh𝒦ω as a dense
    solve does, 𝒦 = Gᵀ(2K)G + K_g, 𝒞 = Gᵀ C assembled here with G (absolute → joint-relative
    rates: ρ_B = ω_B − C_ABᵀ ω_A) on a 15-limb random tree."""
    limbs = random_limbs(15, 3)
    sim = Simulation.from_data(preset_data(
        limbs, wind=NO_AIR, simulation={"prestress": False},
        initial_state=random_initial_state(limbs, 5, 30.0, 1.0)), model="seed")
    sim.set_stiffness_scale(1.3)
    sim.set_damping_scale(0.7)
    sim.end_eases()
    theta_h = 0.6 / 60
    seed = SeedDynamics(sim.tree, sim.inertia_base)
    a = seed.accelerations(sim, theta_h).ravel()
    f = seed.moments(sim)

    tree, n = sim.tree, sim.tree.n
    C_IF, R = np.empty((n, 3, 3)), np.empty((n, 3, 3))
    seed_pose(tree.parent, seed.qa, C_IF, R)
    blocks = {name: np.zeros((3 * n, 3 * n)) for name in ("M", "G", "K", "C", "Kg")}
    for i in range(n):
        s = slice(3 * i, 3 * i + 3)
        p = tree.parent[i]
        blocks["M"][s, s] = sim.inertia_base[i]
        blocks["G"][s, s] = np.eye(3)
        if p >= 0:
            blocks["G"][s, 3 * p:3 * p + 3] = -R[i].T
        blocks["K"][s, s] = 2.0 * sim.stiffness_scale * tree.stiffness[i]
        blocks["C"][s, s] = sim.damping_scale * tree.damping[i]
        K_g = np.reshape(gravity_stiffness_psd(tree.mass[i], C_IF[i] @ tree.com_offset[i],
                                               sim.gravity), (3, 3))
        blocks["Kg"][s, s] = C_IF[i].T @ K_g @ C_IF[i]
        f[i] -= np.cross(seed.omega[i], sim.inertia_base[i] @ seed.omega[i])
    G = blocks["G"]
    stiffness = G.T @ blocks["K"] @ G + blocks["Kg"]
    matrix = blocks["M"] + theta_h * G.T @ blocks["C"] + theta_h**2 * stiffness
    dense = np.linalg.solve(matrix, f.ravel() - theta_h * stiffness @ seed.omega.ravel())
    # Both are O(1e3) rad/s²; the elimination's round-off is ~1e-13 of that.
    np.testing.assert_allclose(a, dense, rtol=0, atol=1e-12 * np.abs(dense).max())


def test_energy_conserved_without_damping():
    """Isotropic springs, damping and wind off: the seed model conserves T + V_g + V_s as
    defined in `seed_model` (rotors about their bases; weights about their own bases;
    V_s = 2(1 − cos φ)k). RK4 at ωh = 0.03 on the fastest (twist) mode, 2 s."""
    sim = Simulation.from_data(preset_data(
        TWO_LIMBS, wind=NO_AIR, tuning={"damping_scale": 0.0},
        initial_state=[{"limb": "B", "rotation_deg": [0, 20, 0],
                        "angular_velocity": [0.5, -1.0, 2.0]}]),
        model="seed", integrator="rk4", dt=1e-4)
    energy = [sim.energy()]
    for _ in range(20):
        sim.step(1000)
        energy.append(sim.energy())
    # Measured 4.5e-8 of m g H (RK4's O((ωh)⁵) per step on the 475 rad/s twist mode).
    assert np.abs(np.array(energy) - energy[0]).max() < 5e-7 * sim.energy_scale


def test_implicit_never_gains_energy_on_a_generated_tree():
    """The sapling, damping and wind off, perturbed, at the app's coarsest step 1/30 s: the
    θ-method (springs and the PSD gravity stiffness implicit) loses energy, never gains."""
    preset = load_preset("sapling")
    data = copy.deepcopy(preset.data)
    data["wind"].update(NO_AIR)
    data["tuning"]["damping_scale"] = 0.0
    data["initial_state"] = random_initial_state(
        [{"name": name} for name in preset_names(data)], 3, 5.0, 0.5)
    sim = Simulation.from_data(data, model="seed", dt=1 / 30)
    energy = [sim.energy()]
    for _ in range(60):
        sim.step(10)
        energy.append(sim.energy())
    energy = np.array(energy)
    assert np.all(np.diff(energy) <= 1e-12 * sim.energy_scale)
    assert energy[-1] < energy[0]


def preset_names(data: dict) -> list[str]:
    from treedyn_core.dynamics.static_model import build_tree

    return build_tree(data).names


@pytest.mark.parametrize("name", SHIPPED)
def test_prestressed_preset_stands_still(name):
    """Every shipped preset, initial_state removed, gravity on, wind off, released at rest:
    under the seed model it moves less than 1e-6 of its height over 5 s (implicit, default
    dt). Measured: ≤ 6e-16 (round-off)."""
    preset = load_preset(name)
    data = copy.deepcopy(preset.data)
    data["initial_state"] = []
    data["wind"]["speed"] = 0.0
    sim = Simulation.from_data(data, model="seed")
    assert sim.integrator == "implicit" and sim.prestressed
    tips = sim.tip.copy()
    worst = 0.0
    for _ in range(10):
        sim.step(int(round(0.5 / sim.dt)))
        worst = max(worst, np.abs(sim.tip - tips).max())
    assert worst < 1e-6 * sim.tree.height


def test_prestress_balances_each_limb_and_softening_sags():
    """At the prestressed rest pose every limb's moments sum to zero (its own weight, its
    spring, its children's reactions); with the stiffness halved after load the two-limb
    tree sags by more than 1e-3 of its height within 5 s (measured 2.3e-2)."""
    sim = Simulation.from_data(preset_data(TWO_LIMBS, wind=NO_AIR), model="seed")
    moments = SeedDynamics(sim.tree, sim.inertia_base).moments(sim)
    assert np.abs(moments).max() < 1e-12
    np.testing.assert_allclose(
        sim.spring_C_rel, seed_prestressed_spring_rotations(sim.tree, sim.gravity, 1.0))
    tips = sim.tip.copy()
    sim.set_stiffness_scale(0.5)
    worst = 0.0
    for _ in range(10):
        sim.step(60)
        worst = max(worst, np.abs(sim.tip - tips).max())
    assert worst > 1e-3 * sim.tree.height


def test_wind_bends_the_seed_tree_downwind():
    """In a steady 10 m/s wind along +x (no turbulence) the seed model's drag torques about
    the bases tip the two-limb tree downwind, and it stays finite at dt = 1/30 s."""
    sim = Simulation.from_data(preset_data(
        TWO_LIMBS, wind={"speed": 10.0, "turbulence_intensity": 0.0}), model="seed",
        dt=1 / 30)
    tips = sim.tip.copy()
    sim.step(150)
    assert np.all(np.isfinite(sim.tip))
    assert sim.tip[1, 0] - tips[1, 0] > 1e-3
