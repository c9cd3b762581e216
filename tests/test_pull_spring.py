"""The pull spring made implicit in the θ-method and in generalized-α's Newton iterations
(docs/design.md §4.1, §4.7, `systems.Pull`): their linear systems against a dense joint-space
solve, its statics, and its stability at stiffnesses no explicit force survives."""

import copy

import numpy as np
import pytest

import reference_dynamics as ref
from reference_step import quats_to_matrices
from treedyn_core.numerics import so3
from treedyn_core.dynamics.systems import articulated_dynamics, articulated_dynamics_about
from treedyn_core.errors import SimulationDiverged
from treedyn_app.grab import GrabSpring
from treedyn_core.model.preset import apply_overrides, load_preset, shipped_presets
from treedyn_core.simulation import Simulation

RTOL = 1e-9


def _still_air(name: str, integrator: str = "implicit", dt: float | None = None) -> Simulation:
    data = copy.deepcopy(load_preset(name).data)
    data["wind"]["speed"] = 0.0
    data["simulation"]["integrator"] = integrator
    if dt is not None:
        data["simulation"]["dt"] = dt
    sim = Simulation.from_data(data)
    sim.aerodynamics = False
    return sim


def _grabbed_point(sim: Simulation, limb: int, s: float):
    """(offset base → point, limb axes; the point, inertial)."""
    offset = s * sim.tree.length[limb] * sim.tree.u[limb]
    return offset, sim.base[limb] + sim.C_IF[limb] @ offset


def _dense_system(sim: Simulation, limb: int, point: np.ndarray):
    """(A, J): the reference mass matrix plus the recursion's own joint blocks D0 (from the
    last call), and the Jacobian (3, 3N) of the point's velocity, at the current state."""
    t = sim.tree
    tree = ref.ReferenceTree(t.parent, t.base_offset, t.com_offset, t.mass, t.inertia_com)
    R = quats_to_matrices(sim.q)
    C, base, D0 = sim.C_IF, sim.base, sim.workspace.D0
    A = ref.mass_matrix(tree, R)
    J = np.zeros((3, 3 * t.n))
    for j in tree.ancestors(limb):
        J[:, 3 * j:3 * j + 3] = -ref.skew(point - base[j]) @ C[j]
    for j in range(t.n):
        upper = np.array([[D0[j, 0], D0[j, 1], D0[j, 2]], [D0[j, 1], D0[j, 3], D0[j, 4]],
                          [D0[j, 2], D0[j, 4], D0[j, 5]]])
        A[3 * j:3 * j + 3, 3 * j:3 * j + 3] += C[j].T @ upper @ C[j]   # D0: inertial axes
    return A, J


def _pulled_sapling():
    """The sapling in still air, bent at random by ~3°, at rest; its last limb's point at 0.7
    of its length pulled by k = 4e4 N/m, c = 300 N s/m toward a target 0.33 m away: (sim,
    limb, offset, point, target, k, c)."""
    sim = _still_air("sapling")
    rng = np.random.default_rng(3)
    sim.q[:] = so3.quats_from_matrices(
        quats_to_matrices(sim.q) @ so3.exp_many(0.05 * rng.standard_normal((sim.tree.n, 3))))
    sim.state_changed()
    limb = sim.tree.n - 1
    offset, point = _grabbed_point(sim, limb, 0.7)
    return sim, limb, offset, point, point + np.array([0.3, -0.1, 0.05]), 4.0e4, 300.0


def _as_explicit_load(sim: Simulation, limb: int, point, target, k) -> None:
    """The pull's spring force at v = 0 given as an external load instead."""
    sim.set_pull(-1, np.zeros(3), target, 0.0, 0.0)
    force = np.zeros((sim.tree.n, 3))
    torque = np.zeros((sim.tree.n, 3))
    force[limb] = k * (target - point)
    torque[limb] = np.cross(point - sim.base[limb], force[limb])
    sim.set_external_loads(force, torque)


def test_implicit_pull_solves_the_dense_system_with_an_added_point_mass():
    """At v = 0 the step's accelerations a₁ with the pull satisfy (A + m_a JᵀJ) a₁ = A a₀, a₀
    those with the same force as an explicit load and A = M + the joints' implicit blocks
    (dense: the reference mass matrix, the recursion's own D0): m_a = θh c + (θh)² k."""
    sim, limb, offset, point, target, k, c = _pulled_sapling()
    theta_h = sim.theta_method * sim.dt
    sim.set_pull(limb, offset, target, k, c)
    a1 = articulated_dynamics(sim.system(), sim.q, sim.v, theta_h, 0.0).copy()
    A, J = _dense_system(sim, limb, point)
    _as_explicit_load(sim, limb, point, target, k)
    a0 = articulated_dynamics(sim.system(), sim.q, sim.v, theta_h, 0.0).copy()
    m_a = theta_h * c + theta_h**2 * k
    lhs = (A + m_a * J.T @ J) @ a1.reshape(-1)
    rhs = A @ a0.reshape(-1)
    assert np.abs(a1 - a0).max() > 1e-3 * np.abs(a0).max()    # the added mass matters
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=RTOL * np.abs(rhs).max())


def test_galpha_iteration_takes_the_pull_about_its_references():
    """Generalized-α's Newton iteration (`articulated_dynamics_about`, rates moving by
    c_v (x − x_r), rotations by c_q (x − x_p)) at v = 0 with the pull: x₁ satisfies
    (A + (c_v c + c_q k) JᵀJ) x₁ = A x₀ + JᵀJ (c_v c x_r + c_q k x_p), x₀ the iteration with
    the pull's force as an explicit load, for random references x_r ≠ x_p."""
    sim, limb, offset, point, target, k, c = _pulled_sapling()
    c_v, c_q = 0.6 * sim.dt, 0.3 * sim.dt**2
    rng = np.random.default_rng(4)
    x_r, x_p = rng.standard_normal((2, sim.tree.n, 3))
    sim.set_pull(limb, offset, target, k, c)
    x1 = articulated_dynamics_about(sim.system(), sim.q, sim.v, c_v, c_q, x_r, x_p, True).copy()
    A, J = _dense_system(sim, limb, point)
    _as_explicit_load(sim, limb, point, target, k)
    x0 = articulated_dynamics_about(sim.system(), sim.q, sim.v, c_v, c_q, x_r, x_p, True).copy()
    lhs = (A + (c_v * c + c_q * k) * J.T @ J) @ x1.reshape(-1)
    rhs = A @ x0.reshape(-1) + J.T @ J @ (c_v * c * x_r.reshape(-1) + c_q * k * x_p.reshape(-1))
    assert np.abs(x1 - x0).max() > 1e-3 * np.abs(x0).max()    # the added mass matters
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=RTOL * np.abs(rhs).max())


def _settle_under_pull(sim: Simulation, limb: int, s: float, pull: np.ndarray, k: float,
                       seconds: float, implicit: bool = True) -> np.ndarray:
    offset, point = _grabbed_point(sim, limb, s)
    target = point + pull
    mass = sim.tree.mass[sim.tree.subtree(limb)].sum() / 4.0
    c = 2.0 * 0.4 * np.sqrt(k * mass)
    for _ in range(int(round(seconds / sim.dt))):
        if implicit:
            sim.set_pull(limb, offset, target, k, c)
        else:     # the same spring as a force held over each step
            p = sim.base[limb] + sim.C_IF[limb] @ offset
            velocity = sim.workspace.base_vel[limb] + np.cross(sim.workspace.omega[limb],
                                                               sim.C_IF[limb] @ offset)
            force = np.zeros((sim.tree.n, 3))
            torque = np.zeros((sim.tree.n, 3))
            force[limb] = k * (target - p) - c * velocity
            torque[limb] = np.cross(p - sim.base[limb], force[limb])
            sim.set_external_loads(force, torque)
        sim.step(1)
    return sim.base[limb] + sim.C_IF[limb] @ offset - target


@pytest.mark.parametrize("dt", [None, 1.0 / 30.0])   # the preset's 1/120 s, the app's largest
@pytest.mark.parametrize("integrator", ["implicit", "galpha"])
@pytest.mark.parametrize("where", ["twig", "trunk"])
def test_a_stiff_pull_holds_the_point_at_the_target_and_stays_stable(where, integrator, dt):
    """k a thousand times the tree's stiffness at the point (ω_k dt ≫ 1): the implicit pull
    (the θ-method's, generalized-α's) holds the point within 1 % of the pull (its weight and
    the settling left); the same spring as an explicit force diverges."""
    sim = _still_air("young_oak", integrator, dt)
    limb = sim.crown_top() if where == "twig" else 1
    pull = np.array([0.0, 0.3, 0.0]) if where == "twig" else np.array([0.05, 0.0, 0.0])
    from treedyn_app.grab import point_compliance
    _, point = _grabbed_point(sim, limb, 0.8)
    compliance = point_compliance(sim.tree, sim.C_IF, sim.base, limb, point)
    k = 1e3 / np.linalg.eigvalsh(compliance)[-1]
    # along the pull: the point moves on arcs about the joints, and cannot follow a straight
    # pull exactly across them
    miss = _settle_under_pull(sim, limb, 0.8, pull, k, 2.0) @ pull / np.linalg.norm(pull)
    print(f"{where}: k = {k:.3g} N/m, the point misses the target by "
          f"{abs(miss) / np.linalg.norm(pull):.2%} of the pull")
    assert abs(miss) < 1e-2 * np.linalg.norm(pull)
    explicit = _still_air("young_oak", integrator, dt)
    with pytest.raises((SimulationDiverged, FloatingPointError, AssertionError)):
        miss = _settle_under_pull(explicit, limb, 0.8, pull, k, 2.0, implicit=False)
        assert np.all(np.isfinite(miss)) and np.linalg.norm(miss) < np.linalg.norm(pull)


def test_pull_on_a_single_spring_limb_matches_its_statics():
    """A rod on one joint (no gravity), its tip (L up) pulled toward the point d beside it:
    K φ = tip × F = k L (d cos φ − L sin φ) at rest, solved here by bisection."""
    from builders import preset_data
    L, K_joint, k, d = 2.0, 500.0, 300.0, 1.5
    data = preset_data([{"name": "rod", "length": L, "radius": 0.05,
                         "stiffness": [K_joint, K_joint, K_joint]}],
                       simulation={"gravity": [0.0, 0.0, 0.0]}, wind={"speed": 0.0})
    sim = Simulation.from_data(data)
    _settle_under_pull(sim, 0, 1.0, np.array([d, 0.0, 0.0]), k, 20.0)
    lo, hi = 0.0, np.pi / 2
    for _ in range(200):
        phi = 0.5 * (lo + hi)
        if K_joint * phi < k * L * (d * np.cos(phi) - L * np.sin(phi)):
            lo = phi
        else:
            hi = phi
    expected = np.array([L * np.sin(phi), 0.0, L * np.cos(phi)])
    tip = sim.tip[0]
    print(f"tilt {np.degrees(phi):.3f}°, tip {tip}, expected {expected}")
    np.testing.assert_allclose(tip, expected, atol=1e-6 * L)


def _grab_targets(tree) -> dict:
    """limb and fraction for a trunk, a branch and a twig of a tree (a kind it lacks: left
    out): the highest trunk limb, the first branch's base limb, the crown top."""
    trunk = [i for i in range(tree.n) if i == 0 or tree.names[i].startswith("trunk")]
    tips = [i for i in range(tree.n) if not np.any(tree.parent == i)]
    branches = [i for i in range(tree.n) if i not in trunk and i not in tips]
    top = int(np.argmax(tree.rest_tip[:, 2]))
    found = {"trunk": (trunk[-1], 0.6), "twig": (top if top in tips else tips[-1], 0.8)}
    if branches:
        found["branch"] = (branches[0], 0.6)
    return found


@pytest.mark.parametrize("name", sorted(shipped_presets()))
def test_grab_follows_the_cursor_on_every_shipped_preset(name):
    """The app's grab (`GrabSpring`, as the worker applies it before each step): dragged
    sideways by 5 % of the point's distance from the tree's base, the point ends within 10 %
    of the drag, on the trunk, a branch and a twig (mean wind on, no turbulence)."""
    data = apply_overrides(load_preset(name).data, ["wind.turbulence_intensity=0"])
    misses = {}
    for kind, (limb, s) in _grab_targets(Simulation.from_data(data).tree).items():
        sim = Simulation.from_data(data)
        base, tip = sim.base[limb], sim.tip[limb]
        point = base + s * (tip - base)
        axis = (tip - base) / np.linalg.norm(tip - base)
        side = np.cross(axis, [0.0, 0.0, 1.0])
        side = side / np.linalg.norm(side) if np.linalg.norm(side) > 1e-6 else np.array(
            [0.0, 1.0, 0.0])
        drag = 0.05 * np.linalg.norm(point - sim.base[0]) * side
        spring = GrabSpring(limb, s, point)
        spring.set_target(point + drag)
        for _ in range(int(round(3.0 / sim.dt))):
            spring.apply(sim)
            sim.step(1)
        reached, _ = spring.point(sim)
        misses[kind] = np.linalg.norm(reached - point - drag) / np.linalg.norm(drag)
    print(name, {kind: f"{miss:.1%}" for kind, miss in misses.items()})
    assert max(misses.values()) <= 0.10


def test_grab_says_when_the_pull_would_break_the_branch():
    """The grab's overload is the pull's bending moment at the grabbed limb's base over that
    section's breaking moment π/32·MOR·d³ (or at the tree's base, the larger): a small drag of
    a twig stays below 1 and says nothing, a drag of metres says "would break the branch"."""
    from treedyn_app.grab import breaking_words
    data = apply_overrides(load_preset("young_oak").data, ["wind.speed=0"])
    limb = Simulation.from_data(data).tree.n - 1   # a twig
    for drag, breaks in ((0.02, False), (3.0, True)):
        sim = Simulation.from_data(data)
        base, tip = sim.base[limb], sim.tip[limb]
        spring = GrabSpring(limb, 0.9, base + 0.9 * (tip - base))
        spring.set_target(spring.target + np.array([drag, 0.0, 0.0]))
        for _ in range(int(round(1.0 / sim.dt))):   # the tree follows the pull
            spring.apply(sim)
            sim.step(1)
        spring.apply(sim)
        point, _ = spring.point(sim)
        force = spring.stiffness * (spring._anchor - point)
        rupture = data["material"]["modulus_of_rupture"]
        moments = [np.linalg.norm(np.cross(point - sim.base[i], force))
                   / (np.pi / 32 * rupture * (2 * sim.tree.radius[i]) ** 3) for i in (limb, 0)]
        assert spring.overload == pytest.approx(max(moments), rel=1e-6)
        assert (spring.overload >= 1.0) == breaks
        words = breaking_words(spring, "branch 2, 3.1 m out")
        assert words == (" — would break the branch" if breaks else "")
        spring.release(sim)
