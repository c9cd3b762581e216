"""`treedyn bench accuracy` (docs/design.md §8, after the seed notebook): worst relative errors.

1. A free rigid body (`freebody.FreeBody`, the tree's SO(3) and Euler-equation code)
   with analytic invariants, per integrator over a dt sweep:
   - no gravity: p, H = C_IF I ω and T constant, the centre of mass on c0 + ċ0 t; a
     generic spin, and a spin near the intermediate principal axis (Dzhanibekov) whose
     flips are timed against dop853 at tight tolerance;
   - gravity: ċ = ċ0 + g t, c = c0 + ċ0 t + ½ g t², H and T + V constant.
2. The jointed tree: energy conservation with damping and wind off (two limbs, both
   models); the single-limb small-amplitude frequency sqrt(k/J) (articulated) and
   sqrt(2k/J) (seed: its spring is 2k at rest); the implicit integrator's numerical
   damping ratio on a single undamped mode (gravity off) and on the lowest mode of the
   shipped sapling (gravity on) at dt = 1/30, 1/60, 1/120 s, against (θ − ½)·2πfh.

`run()` returns the results as plain data; `main(as_json)` renders them.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import SimulationDiverged
from ..integrators.reference import DEFAULT_ATOL, DEFAULT_RTOL, dop853_samples
from ..integrators.registry import IMPLICIT_INTEGRATORS
from ..integrators.steppers import galpha_coefficients
from ..model.preset import load_preset, validate
from ..numerics import so3
from ..simulation import Simulation
from .freebody import FreeBody

THETA = 0.6                                   # docs/design.md §4's default θ
RHO_INF = 0.5                                 # generalized-α's default ρ∞ (docs/design.md §4)
DTS = (1 / 30, 1 / 60, 1 / 120, 1 / 240, 1 / 480, 1 / 960)   # s
DAMPING_DTS = (1 / 30, 1 / 60, 1 / 120)        # s, docs/design.md §8
TREE_DOP853_DT = 1 / 120                       # s, output step of the tree's dop853 runs
REFERENCE_TOL = 1e-13                          # rtol = atol of the free body's reference
# "Wind off" (docs/design.md §3): no aerodynamic force at all, still-air drag included.
NO_AIR = {"speed": 0.0, "drag_coefficient": 0.0, "leaf_drag_coefficient": 0.0}


# -- free body --------------------------------------------------------------------------------

@dataclass(frozen=True)
class FreeBodyCase:
    """Initial conditions of a free-body run (SI units; inertia about the COM, body axes)."""

    name: str
    mass: float
    inertia: tuple
    gravity: tuple
    com: tuple
    com_velocity: tuple
    omega: tuple
    duration: float
    flips: bool = False        # time the flips of the intermediate axis (body y)

    def body(self) -> FreeBody:
        return FreeBody(self.mass, np.diag(self.inertia), self.gravity, self.com,
                        self.com_velocity, np.eye(3), self.omega)


FREE_SPIN = FreeBodyCase("free spin, no gravity", 2.0, (0.12, 0.20, 0.31), (0, 0, 0),
                         (0.0, 0.0, 1.0), (0.4, -0.3, 0.8), (1.5, -0.8, 2.5), 10.0)
# Spin 5 rad/s about the intermediate axis y of I = (1, 2, 3)·0.01 kg m², perturbed by
# 0.02 rad/s about x: the perturbation grows at 5·sqrt(1/3) = 2.9 /s, the first flip
# comes after ~2 s, then one every ~4 s.
INTERMEDIATE_AXIS = FreeBodyCase("intermediate-axis spin", 1.0, (0.01, 0.02, 0.03), (0, 0, 0),
                                 (0.0, 0.0, 0.0), (0.1, 0.0, 0.0), (0.02, 5.0, 0.0), 10.0,
                                 flips=True)
FALLING_SPIN = FreeBodyCase("spin under gravity", 2.0, (0.12, 0.20, 0.31), (0, 0, -9.81),
                            (0.0, 0.0, 1.0), (0.4, -0.3, 8.0), (1.5, -0.8, 2.5), 3.0)
FREE_BODY_CASES = (FREE_SPIN, INTERMEDIATE_AXIS, FALLING_SPIN)


@dataclass
class History:
    """Samples of a free-body run: t (S,), y (S, 13)."""

    t: np.ndarray
    y: np.ndarray
    C: np.ndarray = field(init=False)

    def __post_init__(self):
        self.C = np.array([so3.quat_to_matrix(q) for q in self.y[:, 6:10]])


def freebody_history(case: FreeBodyCase, integrator: str, dt: float,
                     rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> History:
    """The state every dt over the case's duration (dop853: one solve, sampled every dt)."""
    body = case.body()
    steps = int(round(case.duration / dt))
    if integrator == "dop853":
        ys = dop853_samples(body, steps * dt, dt, lambda b: b.y.copy(), rtol, atol)
        return History(dt * np.arange(steps + 1), np.array(ys))
    ys = np.empty((steps + 1, 13))
    ys[0] = body.y
    for k in range(1, steps + 1):
        body.step(1, dt, integrator, THETA)
        ys[k] = body.y
    return History(dt * np.arange(steps + 1), ys)


def flip_times(history: History, H0: np.ndarray) -> np.ndarray:
    """Times (s) at which the body's y axis crosses the plane normal to H0 (linear
    interpolation between samples)."""
    s = history.C[:, :, 1] @ (H0 / np.linalg.norm(H0))
    k = np.flatnonzero(np.sign(s[:-1]) * np.sign(s[1:]) < 0)
    t = history.t
    return t[k] + (t[k + 1] - t[k]) * s[k] / (s[k] - s[k + 1])


def freebody_errors(case: FreeBodyCase, history: History, reference: History) -> dict:
    """Worst relative errors of a run (module docstring); `reference` is dop853 at tight
    tolerance sampled at a step that divides the run's."""
    m, I, g = case.mass, np.diag(case.inertia), np.array(case.gravity, float)
    t, y = history.t, history.y
    if not np.all(np.isfinite(y)):
        return {"diverged": math.inf}
    cdot = y[:, 3:6]
    p = m * cdot
    H = np.einsum("nij,jk,nk->ni", history.C, I, y[:, 10:13])
    T = 0.5 * m * np.einsum("ni,ni->n", cdot, cdot) + 0.5 * np.einsum(
        "ni,ij,nj->n", y[:, 10:13], I, y[:, 10:13])
    V = -m * y[:, 0:3] @ g
    c0, v0 = np.array(case.com, float), np.array(case.com_velocity, float)
    p_exact = m * (v0 + np.outer(t, g))
    c_exact = c0 + np.outer(t, v0) + 0.5 * np.outer(t * t, g)
    errors = {
        "p": np.abs(p - p_exact).max() / np.linalg.norm(p_exact, axis=1).max(),
        "H": np.linalg.norm(H - H[0], axis=1).max() / np.linalg.norm(H[0]),
        ("T" if not g.any() else "T+V"): np.abs(T + V - T[0] - V[0]).max() / T.max(),
        "c": (np.linalg.norm(y[:, 0:3] - c_exact, axis=1).max()
              / max(np.linalg.norm(c_exact - c0, axis=1).max(), 1e-300)),
    }
    stride = int(round((t[1] - t[0]) / (reference.t[1] - reference.t[0])))
    C_ref = reference.C[::stride][: len(t)]
    errors["attitude"] = float(rotation_angles(np.einsum("nji,njk->nik", C_ref,
                                                         history.C)).max())
    if case.flips:
        flips, flips_ref = flip_times(history, H[0]), flip_times(reference, H[0])
        if len(flips) < len(flips_ref):
            errors["flip"] = math.inf
        else:
            errors["flip"] = float(np.abs(flips[: len(flips_ref)] / flips_ref - 1.0).max())
    return {key: float(value) for key, value in errors.items()}


def rotation_angles(R: np.ndarray) -> np.ndarray:
    """Angles (rad) of rotation matrices (S, 3, 3), from the skew part and the trace (an
    arccos of the trace alone loses half the digits near 0)."""
    skew = 0.5 * np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0],
                           R[:, 1, 0] - R[:, 0, 1]], axis=1)
    return np.arctan2(np.linalg.norm(skew, axis=1), 0.5 * (np.trace(R, axis1=1, axis2=2) - 1.0))


def freebody_reference(case: FreeBodyCase) -> History:
    """dop853 at rtol = atol = REFERENCE_TOL sampled at the finest dt of the sweep."""
    return freebody_history(case, "dop853", min(DTS), REFERENCE_TOL, REFERENCE_TOL)


# -- the jointed tree ------------------------------------------------------------------------

# docs/design.md §6's example linkage (the shipped two_limbs), limb B tipped 20° about y.
TWO_LIMBS = [
    {"name": "A", "length": 1.0, "radius": 0.05, "mass": 2.0, "inertia": [0.17, 0.17, 0.0025],
     "com": 0.5, "stiffness": 200.0, "damping": 1.0},
    {"name": "B", "parent": "A", "length": 0.8, "radius": 0.03, "rest_rotation_deg": [30, 0, 0],
     "stiffness": 80.0, "damping": 0.4},
]
TREE_ENERGY_DURATION = 5.0      # s
# One limb (limb A of docs/design.md §6): J about the joint = I_⊥ + m (L/2)² = 0.67 kg m², k = 200.
SINGLE_LIMB = [dict(TWO_LIMBS[0], damping=0.0)]
SINGLE_LIMB_J = 0.17 + 2.0 * 0.5 ** 2
SINGLE_LIMB_K = 200.0
SINGLE_LIMB_AMPLITUDE_DEG = 0.5
FREQUENCY_PERIODS = 10
DAMPING_PERIODS = 12


def simulation(limbs, model: str, integrator: str, dt: float, *, gravity=(0, 0, -9.81),
               initial_state=(), damping_scale: float = 0.0) -> Simulation:
    """A simulation of explicit limbs in still air with aerodynamics off (docs/design.md §3 "wind
    off"), prestressed."""
    data = validate({"version": 1, "tree": {"limbs": [dict(limb) for limb in limbs]},
                     "wind": dict(NO_AIR), "simulation": {"gravity": list(gravity)},
                     "initial_state": [dict(entry) for entry in initial_state],
                     "tuning": {"damping_scale": damping_scale}}, "<bench>")
    return Simulation.from_data(data, model=model, integrator=integrator, dt=dt)


def _sample(sim: Simulation, duration: float, measure) -> tuple[np.ndarray, np.ndarray]:
    """(t, values) of measure(sim) every dt (dop853: one solve, sampled every dt)."""
    steps = int(round(duration / sim.dt))
    if sim.integrator == "dop853":
        values = dop853_samples(sim, steps * sim.dt, sim.dt, measure, sim.rtol, sim.atol)
        return sim.dt * np.arange(steps + 1), np.array(values)
    values = [measure(sim)]
    for _ in range(steps):
        sim.step(1)
        values.append(measure(sim))
    return sim.dt * np.arange(steps + 1), np.array(values)


def tree_energy_error(model: str, integrator: str, dt: float) -> float:
    """Worst |E(t) − E(0)| / (m_total |g| H) over 5 s of the two-limb tree, damping and wind
    off (inf if it diverges)."""
    sim = simulation(TWO_LIMBS, model, integrator, dt,
                     initial_state=[{"limb": "B", "rotation_deg": [0, 20, 0]}])
    try:
        _, energy = _sample(sim, TREE_ENERGY_DURATION, lambda s: s.energy())
    except SimulationDiverged:
        return math.inf
    if not np.all(np.isfinite(energy)):
        return math.inf
    return float(np.abs(energy - energy[0]).max() / sim.energy_scale)


def single_limb_frequency(model: str, amplitude: float = 0.0) -> float:
    """Exact angular frequency of the single limb swinging at `amplitude` (rad), rad/s.

    Articulated: the spring torque is exactly −kθ, so sqrt(k/J) at any amplitude. Seed: the
    torque −2k sin θ is a pendulum's, sqrt(2k/J) (1 − A²/16 + O(A⁴)), 4.8e-6 low at 0.5°.
    """
    if model == "seed":
        return math.sqrt(2.0 * SINGLE_LIMB_K / SINGLE_LIMB_J) * (1.0 - amplitude ** 2 / 16.0)
    return math.sqrt(SINGLE_LIMB_K / SINGLE_LIMB_J)


def single_limb_history(model: str, integrator: str, dt: float, periods: float
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Simulation]:
    """(t, angle about x (rad), energy (J)) of the undamped single limb, gravity off, released
    0.5° about x from rest."""
    sim = simulation(SINGLE_LIMB, model, integrator, dt, gravity=(0, 0, 0),
                     initial_state=[{"limb": "A",
                                     "rotation_deg": [SINGLE_LIMB_AMPLITUDE_DEG, 0, 0]}])
    duration = periods * 2 * math.pi / single_limb_frequency(model)

    def measure(s):
        R = s.C_IF[0]
        return math.atan2(R[2, 1], R[1, 1]), s.energy()

    t, values = _sample(sim, duration, measure)
    return t, values[:, 0], values[:, 1], sim


def zero_crossing_frequency(t: np.ndarray, x: np.ndarray) -> float:
    """Angular frequency (rad/s) from the zero crossings of x(t) (linear interpolation, a
    straight-line fit of crossing times: crossings are π/ω apart)."""
    k = np.flatnonzero(np.sign(x[:-1]) * np.sign(x[1:]) < 0)
    zeros = t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])
    if zeros.size < 3:
        return math.nan
    return math.pi / np.polyfit(np.arange(zeros.size), zeros, 1)[0]


def single_limb_frequency_error(model: str, integrator: str, dt: float) -> float:
    """|ω_measured / ω_exact − 1| over 10 periods (inf if it diverges)."""
    try:
        t, angle, _, _ = single_limb_history(model, integrator, dt, FREQUENCY_PERIODS)
    except SimulationDiverged:
        return math.inf
    if not np.all(np.isfinite(angle)):
        return math.inf
    exact = single_limb_frequency(model, math.radians(SINGLE_LIMB_AMPLITUDE_DEG))
    return abs(zero_crossing_frequency(t, angle) / exact - 1.0)


def decay_ratio(t: np.ndarray, modal_energy: np.ndarray, omega: float) -> float:
    """Damping ratio ζ from a free decay: modal energy ∝ e^{−2ζωt}, a straight-line fit of
    its logarithm (the ripple at 2ω of a slightly shifted numerical frequency averages out
    over whole periods)."""
    slope = np.polyfit(t, np.log(modal_energy), 1)[0]
    return -slope / (2.0 * omega)


def predicted_damping(omega: float, dt: float, theta: float = THETA) -> float:
    """docs/design.md §4's estimate of the θ-method's numerical damping ratio, (θ − ½)·2πfh."""
    return (theta - 0.5) * omega * dt


def galpha_spectrum(omega_h: float, rho_inf: float = RHO_INF) -> tuple[float, float, float]:
    """Generalized-α on ẍ = −ω²x at ωh (Chung & Hulbert 1993): (numerical damping ratio
    ζ̄ = −ln|λ| / arg λ, relative period error ωh / arg λ − 1, spectral radius), λ the
    principal root of the amplification matrix
    of (x, v, a): (1 − α_m) a₁ + α_m a₀ = −ω² ((1 − α_f) x₁ + α_f x₀), v₁ = v₀ + h((1 − γ) a₀
    + γ a₁), x₁ = x₀ + h v₀ + h²((½ − β) a₀ + β a₁)."""
    alpha_m, alpha_f, beta, gamma = galpha_coefficients(rho_inf)
    w2 = omega_h * omega_h                                      # h = 1
    new = np.array([[(1 - alpha_f) * w2, 0.0, 1 - alpha_m], [0.0, 1.0, -gamma],
                    [1.0, 0.0, -beta]])
    old = np.array([[-alpha_f * w2, 0.0, -alpha_m], [0.0, 1.0, 1 - gamma],
                    [1.0, 1.0, 0.5 - beta]])
    roots = np.linalg.eigvals(np.linalg.solve(new, old))
    principal = roots[np.argmax(np.abs(roots.imag))]
    turn = abs(np.angle(principal))
    return -math.log(abs(principal)) / turn, omega_h / turn - 1.0, float(np.abs(roots).max())


def predicted(integrator: str, omega: float, dt: float) -> float:
    """The numerical damping ratio the integrator's linear analysis predicts at ω, dt."""
    if integrator == "galpha":
        return galpha_spectrum(omega * dt)[0]
    return predicted_damping(omega, dt)


def single_limb_damping(dt: float, model: str = "articulated", integrator: str = "implicit"
                        ) -> tuple[float, float]:
    """(measured ζ, predicted ζ) of an implicit integrator on the undamped single limb,
    gravity off: its energy is the mode's."""
    t, _, energy, _ = single_limb_history(model, integrator, dt, DAMPING_PERIODS)
    omega = single_limb_frequency(model)
    return decay_ratio(t, energy, omega), predicted(integrator, omega, dt)


@dataclass
class LowestMode:
    """The lowest mode of a tree linearised about its (prestressed) rest pose, articulated
    model, damping and wind off: omega rad/s; shape (3N,) joint rotation vectors (child
    axes); left (3N,) the left eigenvector, left·shape = 1."""

    omega: float
    shape: np.ndarray
    left: np.ndarray


def lowest_mode(sim: Simulation, step: float = 1e-6) -> LowestMode:
    """Linearise v̇(δ) at v = 0 by central differences of the explicit joint accelerations
    (joint i rotated by exp(δ_i) in its own axes) and take the eigenvector of the smallest
    positive ω² of −∂v̇/∂δ."""
    from ..integrators.reference import SimulationODE

    ode = SimulationODE(sim)
    n = sim.tree.n
    q_rest = sim.q.copy()
    A = np.empty((3 * n, 3 * n))
    for j in range(3 * n):
        columns = []
        for sign in (1.0, -1.0):
            q = q_rest.copy()
            delta = np.zeros(3)
            delta[j % 3] = sign * step
            so3.quat_advance(q[j // 3], delta)
            y = np.concatenate([q.ravel(), np.zeros(3 * n)])
            columns.append(ode.rhs(0.0, y)[4 * n:])
        A[:, j] = (columns[0] - columns[1]) / (2.0 * step)
    values, vectors = np.linalg.eig(-A)
    values = values.real
    k = int(np.argmin(np.where(values > 0, values, np.inf)))
    left = np.linalg.inv(vectors)[k].real
    shape = vectors[:, k].real
    scale = left @ shape
    return LowestMode(math.sqrt(values[k]), shape, left / scale)


def tree_mode_damping(preset: str, dt: float, periods: float = DAMPING_PERIODS,
                      integrator: str = "implicit") -> tuple[float, float, float]:
    """(f Hz, measured ζ, predicted ζ) of an implicit integrator's numerical damping on the
    lowest mode of a shipped preset (articulated, gravity on, damping and wind off), from a
    free decay started on the mode's shape (max joint rotation 1e-3 rad)."""
    loaded = load_preset(preset)
    data = dict(loaded.data)
    data["wind"] = dict(data["wind"], **NO_AIR)
    data["initial_state"] = []
    data["tuning"] = dict(data["tuning"], damping_scale=0.0)
    sim = Simulation.from_data(data, integrator=integrator, dt=dt, model="articulated")
    mode = lowest_mode(sim)
    amplitude = 1e-3 / np.abs(mode.shape).max()
    rest = sim.tree.rest_C_rel          # the prestressed rest pose is the equilibrium
    start = mode.shape * amplitude
    for i in range(sim.tree.n):
        sim.q[i] = so3.quat_from_matrix(rest[i] @ so3.exp(start[3 * i:3 * i + 3]))
    sim.state_changed()

    def modal(s):
        delta = np.concatenate([so3.log(rest[i].T @ so3.quat_to_matrix(s.q[i]))
                                for i in range(s.tree.n)])
        eta, eta_dot = mode.left @ delta, mode.left @ s.v.ravel()
        return eta_dot ** 2 + mode.omega ** 2 * eta ** 2

    t, energy = _sample(sim, periods * 2 * math.pi / mode.omega, modal)
    return (mode.omega / (2 * math.pi), decay_ratio(t, energy, mode.omega),
            predicted(integrator, mode.omega, dt))


# -- the whole benchmark -----------------------------------------------------------------------

def _dt_label(dt: float) -> str:
    return f"1/{round(1 / dt)}"


def run() -> dict:
    """Every case; plain data (rows of case, integrator, dt, errors)."""
    start = time.perf_counter()
    rows = []
    for case in FREE_BODY_CASES:
        reference = freebody_reference(case)
        for integrator in ("implicit", "rk4", "dop853"):
            for dt in DTS:
                errors = freebody_errors(case, freebody_history(case, integrator, dt), reference)
                rows.append({"case": f"free body: {case.name}", "integrator": integrator,
                             "dt": dt, "errors": errors})
            if case.flips and integrator != "dop853":
                flips = flip_times(freebody_history(case, integrator, min(DTS)),
                                   case.body().invariants()["H"])
                rows[-1]["flip_times"] = [float(x) for x in flips]
        rows.append({"case": f"free body: {case.name}", "integrator": "reference", "dt": None,
                     "errors": {}, "flip_times": [float(x) for x in flip_times(
                         reference, case.body().invariants()["H"])] if case.flips else None})
    for model in ("articulated", "seed"):
        for integrator in ("implicit", "rk4"):
            for dt in DTS:
                rows.append({"case": f"tree energy: two limbs, {model}", "integrator": integrator,
                             "dt": dt, "errors": {"E": tree_energy_error(model, integrator, dt)}})
        rows.append({"case": f"tree energy: two limbs, {model}", "integrator": "dop853",
                     "dt": TREE_DOP853_DT,
                     "errors": {"E": tree_energy_error(model, "dop853", TREE_DOP853_DT)}})
    for model in ("articulated", "seed"):
        for integrator in ("implicit", "rk4"):
            for dt in DTS:
                rows.append({"case": f"single-limb frequency, {model}", "integrator": integrator,
                             "dt": dt, "errors": {"f": single_limb_frequency_error(
                                 model, integrator, dt)}})
        rows.append({"case": f"single-limb frequency, {model}", "integrator": "dop853",
                     "dt": TREE_DOP853_DT, "errors": {"f": single_limb_frequency_error(
                         model, "dop853", TREE_DOP853_DT)}})
    damping = []
    for integrator in IMPLICIT_INTEGRATORS:
        for dt in DAMPING_DTS:
            measured, predicted_ = single_limb_damping(dt, integrator=integrator)
            damping.append({"case": "single limb, gravity off", "integrator": integrator,
                            "f_hz": single_limb_frequency("articulated") / (2 * math.pi),
                            "dt": dt, "measured": measured, "predicted": predicted_})
        for dt in DAMPING_DTS:
            f, measured, predicted_ = tree_mode_damping("sapling", dt, integrator=integrator)
            damping.append({"case": "sapling, lowest mode, gravity on", "integrator": integrator,
                            "f_hz": f, "dt": dt, "measured": measured, "predicted": predicted_})
    return {"theta": THETA, "rho_inf": RHO_INF, "dop853_rtol": DEFAULT_RTOL,
            "dop853_atol": DEFAULT_ATOL, "reference_tol": REFERENCE_TOL, "errors": rows,
            "numerical_damping": damping, "orders": [tree_orders(integrator)
                                                     for integrator in IMPLICIT_INTEGRATORS],
            "cost": step_costs(), "seconds": time.perf_counter() - start}


ORDER_DTS = (1 / 120, 1 / 240, 1 / 480, 1 / 960)     # s
ORDER_TIME = 0.5                                    # s


def tree_orders(integrator: str) -> dict:
    """The measured convergence order of an integrator: the two-limb tree (gravity on, B
    released 20° from rest, damping on) tip positions after 0.5 s over `ORDER_DTS`, against
    RK4 at a quarter of its stability limit."""
    def tips(name, dt):
        sim = simulation(TWO_LIMBS, "articulated", name, dt, damping_scale=1.0,
                         initial_state=[{"limb": "B", "rotation_deg": [0, 20, 0]}])
        if dt is None:
            steps = int(math.ceil(ORDER_TIME / (0.25 * sim.rk4_stable_dt())))
            sim.dt = ORDER_TIME / steps
        sim.step(int(round(ORDER_TIME / sim.dt)))
        return sim.tip

    reference = tips("rk4", None)
    errors = [float(np.abs(tips(integrator, dt) - reference).max()) for dt in ORDER_DTS]
    orders = np.log(np.array(errors[:-1]) / errors[1:]) / np.log(2.0)
    return {"integrator": integrator, "dts": list(ORDER_DTS), "tip_errors": errors,
            "orders": [float(x) for x in orders]}


COST_PRESET = "old_oak"
COST_PASSES = 5


def step_costs() -> dict:
    """Seconds per step of each implicit integrator on a shipped preset with its wind, at
    its dt, measured side by side (alternating passes, medians)."""
    sim = Simulation(load_preset(COST_PRESET))
    times = {name: [] for name in IMPLICIT_INTEGRATORS}
    for name in IMPLICIT_INTEGRATORS:
        sim.set_integrator(name)
        sim.warm_up()
    for _ in range(COST_PASSES):
        for name in IMPLICIT_INTEGRATORS:
            sim.reset()
            sim.set_integrator(name)
            sim.step(2)
            start = time.process_time()
            sim.step(20)
            times[name].append((time.process_time() - start) / 20)
    return {"preset": COST_PRESET, "limbs": sim.tree.n,
            "seconds_per_step": {name: float(np.median(t)) for name, t in times.items()}}


HEADER = f"""treedyn accuracy benchmark (docs/design.md §8): worst error over each run, dimensionless.
  free body (SO(3) and Euler-equation code of the tree): p = m ċ against m (ċ0 + g t), / max |p|;
    H = C_IF I ω against H(0), / |H(0)|;  T (no gravity) or T + V (gravity) against t = 0,
    / peak T;  c against c0 + ċ0 t + ½ g t², / the path's extent;  attitude: angle (rad) from
    dop853 at rtol = atol = {REFERENCE_TOL:g};  flip: times of the intermediate axis's flips,
    relative to that reference's (interpolated between output samples: at coarse dt even
    dop853 shows that interpolation's error).
  tree (damping and wind off): E = |ΔE| / (m_total |g| H), energy each model conserves;
    f = |ω_measured / ω_exact − 1|, 0.5° swing, gravity off: ω_exact = sqrt(k/J) (articulated),
    sqrt(2k/J)·(1 − A²/16) (seed: its spring −2k sin θ is a pendulum's).
  implicit: θ-method, θ = {THETA};  rk4: classical;  dop853: rtol = atol = {DEFAULT_RTOL:g},
    dt = output step.  inf: diverged."""


def _format(results: dict) -> str:
    lines = [HEADER, ""]
    lines.append(f"{'case':<42} {'integrator':<10} {'dt [s]':>7}  {'worst':>8}  details")
    for row in results["errors"]:
        if row["integrator"] == "reference":
            if row.get("flip_times"):
                flips = ", ".join(f"{x:.4f}" for x in row["flip_times"])
                lines.append(f"{row['case']:<42} {'dop853':<10} {'':>7}  {'':>8}  "
                             f"reference flip times [s]: {flips}")
            continue
        errors = row["errors"]
        worst_key = max(errors, key=lambda key: errors[key])
        details = ", ".join(f"{key} {value:.1e}" for key, value in errors.items())
        if row.get("flip_times"):
            details += "; flips at dt = 1/960 [s]: " + ", ".join(
                f"{x:.4f}" for x in row["flip_times"])
        dt = _dt_label(row["dt"]) if row["dt"] else ""
        lines.append(f"{row['case']:<42} {row['integrator']:<10} {dt:>7}  "
                     f"{errors[worst_key]:8.1e}  {details}")
    lines += ["", f"implicit integrators' numerical damping ratio (implicit: θ = {THETA}; galpha: "
              f"ρ∞ = {results.get('rho_inf', RHO_INF)}), damping and wind off: measured from a "
              "free decay; predicted (θ − ½)·2πfh, galpha Chung & Hulbert's amplification "
              "matrix (docs/design.md §4)",
              f"{'case':<34} {'integr.':<8} {'f [Hz]':>7} {'dt [s]':>7} {'2πfh':>7} "
              f"{'measured':>9} {'predicted':>9} {'ratio':>6}"]
    for row in results["numerical_damping"]:
        lines.append(f"{row['case']:<34} {row.get('integrator', 'implicit'):<8} "
                     f"{row['f_hz']:7.3f} {_dt_label(row['dt']):>7} "
                     f"{2 * math.pi * row['f_hz'] * row['dt']:7.3f} {row['measured']:9.5f} "
                     f"{row['predicted']:9.5f} {row['measured'] / row['predicted']:6.2f}")
    for row in results.get("orders", []):
        lines.append(f"order, two limbs (tip after {ORDER_TIME} s vs rk4), {row['integrator']}: "
                     + ", ".join(f"{x:.2f}" for x in row["orders"]) + " over dt = "
                     + ", ".join(_dt_label(dt) for dt in row["dts"]))
    if "cost" in results:
        cost = results["cost"]
        per_step = cost["seconds_per_step"]
        lines.append(f"cost per step, {cost['preset']} ({cost['limbs']} limbs, wind on), side by "
                     "side: " + ", ".join(f"{name} {1e3 * t:.3f} ms" for name, t in
                                          per_step.items())
                     + f" (galpha / implicit {per_step['galpha'] / per_step['implicit']:.2f})")
    lines.append(f"\n({results['seconds']:.1f} s)")
    return "\n".join(lines)


def _finite_or_none(value):
    """JSON has no inf/nan: a diverged run's error becomes null."""
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def main(as_json: bool = False) -> str:
    """The benchmark as a text table, or JSON (`treedyn bench accuracy [--json]`)."""
    results = run()
    if as_json:
        return json.dumps(_finite_or_none(results), indent=1)
    return _format(results)
