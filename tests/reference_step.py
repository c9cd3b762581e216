"""A straightforward reference of the articulated tree's time steps, to check the compiled step
loops against (docs/design.md §3.3): the implicit θ-method and RK4 of `treedyn_core.integrators.steppers`, written
from docs/design.md §2–§5 and the integrators' docstrings with the dense joint-space equations of
`reference_dynamics` (Jacobian mass matrix, recursive Newton–Euler bias), scipy rotations and
numpy eigen-decompositions. Plain loops over limbs in preset order; nothing from treedyn_core.

State: R (N, 3, 3) joint rotations (child → parent axes) and v (N, 3) rad/s joint rates (child
axes). RK4 integrates the joint quaternions [w, x, y, z] as vectors in R⁴, like the production.

The θ-method's linear system, with 𝒦, 𝒞 the joints' stiffness and damping (already scaled),
P_g each joint's PSD gravity block (θh), K_F the drag loads' stiffness block and D_i the
drag's velocity Jacobian at limb i's midpoint, both with c h (c = 4, docs/design.md §4.2):

    (M + θh𝒞 + θ²h²(𝒦 + P_g) + c²h²K_F + ch Σ J_iᵀ D_i J_i) a
        = τ_spring − 𝒞v − θh(𝒦 + P_g)v − ch K_F v − b(R, v; g, F_drag) − ch Σ J_iᵀ D_i c_i,

J_i the Jacobian of limb i's midpoint velocity and c_i its velocity-product acceleration as the
articulated-body recursion carries it (the base point's classical acceleration plus α × ρ), then
v ← v + h a and R ← R exp(h (v + θh a)).

Generalized-α (`galpha_step`) carries v̇ and the algorithmic acceleration a besides (R, v).
The state of a guess x for v̇ₙ₊₁ is a' = ((1 − α_f)x + α_f v̇ₙ − α_m aₙ)/(1 − α_m),
v' = v + h(1 − γ)a + hγa', R' = R exp(h (v + h(½ − β)a + hβa')). A Newton iteration at a
state (R_k, v_k) from which the rates move by c_v (x − x_r) and the rotations by
c_q (x − x_p) solves

    (M + c_v 𝒞_t + c_q 𝒦_t) x = τ_spring − 𝒞v_k − b(R_k, v_k; g, F_drag) + c_v 𝒞_t x_r + c_q 𝒦_t x_p,
    𝒞_t = 𝒞 + Σ J_iᵀ D_i J_i,  𝒦_t = 𝒦 + P_g + K_F,

c_v = hγ(1 − α_f)/(1 − α_m), c_q = h²β(1 − α_f)/(1 − α_m). The first iteration is at the
step's start (x_r, x_p from the known part of a'); each next one at the state of the last x
(x_r = x_p = x). The step ends in the state of the last x, with v̇ ← x. It starts from
v̇ = a = the x of one iteration at the start state about x_r = x_p = 0 (`galpha_start`).
From the second iteration on, with Δ the largest change of x: converged when Δ ≤ tolerance ·
max|x| (or the floor), or when the rate estimate η ≤ trusted_rate and η Δ ≤ error_tolerance ·
max|x|; η = θ/(1 − θ), θ = Δ/Δ_last from the third iteration on, before it the last sub-step's
η^0.8 (unknown, 1e30, at the start and after a sub-step that did not converge); θ ≥
contraction: not converging.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import block_diag
from scipy.spatial.transform import Rotation

import reference_dynamics as ref

# c of the θ-method's drag terms (ch): the drag's damping and the loads' stiffness.
DRAG_IMPLICITNESS = 4.0
# generalized-α's rate estimate η when none is known (module docstring)
UNKNOWN_RATE = 1e30


@dataclass
class Wind:
    """The turbulent field of docs/design.md §5 at constant settings: mean speed U (m/s) at
    reference_height (m), power-law profile_exponent, azimuth direction_deg, intensity I, and
    the modes (k (3, M) rad/m, unit amplitudes (3, M), phases (M,) rad) in the wind's frame."""

    speed: float
    direction_deg: float
    intensity: float
    reference_height: float
    profile_exponent: float
    mode_k: np.ndarray
    mode_amp: np.ndarray
    mode_phase: np.ndarray

    @classmethod
    def from_field(cls, field) -> "Wind":
        """The settings and modes of a `treedyn_core.dynamics.wind.WindField` as they are now."""
        return cls(field.speed, field.direction_deg, field.intensity, field.reference_height,
                   field.profile_exponent, field.mode_k, field.mode_amp, field.mode_phase)

    def velocity(self, points: np.ndarray, advection: float) -> np.ndarray:
        """(P, 3) m/s at points (P, 3) m once the pattern has travelled ``advection`` m."""
        a = math.radians(self.direction_deg)
        frame = np.array([[math.cos(a), math.sin(a), 0.0],      # along-wind
                          [-math.sin(a), math.cos(a), 0.0],     # crosswind, to the left
                          [0.0, 0.0, 1.0]])
        xi = points @ frame.T
        xi[:, 0] -= advection
        sigma = self.intensity * self.speed * np.array([1.0, 0.8, 0.5])
        turbulence = np.cos(xi @ self.mode_k + self.mode_phase) @ (self.mode_amp * sigma[:, None]).T
        profile = self.speed * (np.maximum(points[:, 2], 0.1) / self.reference_height
                                ) ** self.profile_exponent
        return profile[:, None] * frame[0] + turbulence @ frame


# The step's samples of the field (`wind.plan_samples`, docs/performance.md §3): the modes
# whose phase at a point moves by at most SLOW_PHASE rad in SLOW_INTERVAL s are summed every
# SLOW_INTERVAL s and interpolated linearly in time between; the rest at every sample.
SLOW_INTERVAL = 1.0 / 15.0
SLOW_PHASE = 0.5
_SLACK = 1e-9


class SampledWind(Wind):
    """`Wind` as the steps sample it at constant settings: ``velocity(points, advection)``, called
    once per sample in time order, the time being advection / speed (a fresh field's)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.start = self.end = 0.0
        self.slow = 0
        self.last = -math.inf
        self.slow_start = self.slow_end = None

    @classmethod
    def from_field(cls, field) -> "SampledWind":
        return cls(*vars(Wind.from_field(field)).values())

    def _turbulence(self, points, advection, modes):
        """The turbulent velocity (P, 3) m/s, wind frame, of the modes ``modes`` (a slice)."""
        a = math.radians(self.direction_deg)
        frame = np.array([[math.cos(a), math.sin(a), 0.0], [-math.sin(a), math.cos(a), 0.0],
                          [0.0, 0.0, 1.0]])
        xi = points @ frame.T
        xi[:, 0] -= advection
        sigma = self.intensity * self.speed * np.array([1.0, 0.8, 0.5])
        k, phase = self.mode_k[:, modes], self.mode_phase[modes]
        return np.cos(xi @ k + phase) @ (self.mode_amp[:, modes] * sigma[:, None]).T

    def velocity(self, points: np.ndarray, advection: float) -> np.ndarray:
        t = advection / self.speed
        since, self.last = t - self.last, t
        action = "interpolate"
        if since == 0.0 or (self.slow and self.start - _SLACK <= t < self.end - _SLACK):
            pass
        elif 0.0 < since <= SLOW_INTERVAL / 2:
            slow = int(np.sum(self.mode_k[0] * self.speed * SLOW_INTERVAL <= SLOW_PHASE))
            modes = self.mode_k.shape[1]   # those summed every sample a multiple of 8
            slow = max(modes - 8 * ((modes - slow + 7) // 8), 0)
            at_end = self.slow and abs(t - self.end) <= _SLACK
            action = "next" if at_end and slow == self.slow else "afresh"
            self.slow, self.start, self.end = slow, t, t + SLOW_INTERVAL
        else:
            self.slow = 0
        slow = slice(0, self.slow)
        if action == "afresh":
            self.slow_start = self._turbulence(points, advection, slow)
        elif action == "next":
            self.slow_start = self.slow_end
        if action != "interpolate":
            self.slow_end = self._turbulence(points, advection + self.speed * SLOW_INTERVAL, slow)
        exact = super().velocity(points, advection)
        if not self.slow:
            return exact
        fraction = (t - self.start) / SLOW_INTERVAL
        a = math.radians(self.direction_deg)
        frame = np.array([[math.cos(a), math.sin(a), 0.0], [-math.sin(a), math.cos(a), 0.0],
                          [0.0, 0.0, 1.0]])
        interpolated = self.slow_start + fraction * (self.slow_end - self.slow_start)
        return exact + (interpolated - self._turbulence(points, advection, slow)) @ frame


@dataclass
class Air:
    """Drag on limbs and foliage (docs/design.md §5)."""

    density: float
    drag_coefficient: float
    leaf_drag_coefficient: float
    vogel_exponent: float
    wind: Wind


@dataclass
class Model:
    """What a step needs besides the state; per-limb arrays in preset order."""

    tree: ref.ReferenceTree
    spring_R: np.ndarray   # (N, 3, 3) the springs' rest rotations, child → parent axes
    stiffness: np.ndarray  # (N, 3, 3) N m/rad, child axes (stiffness scale included)
    damping: np.ndarray    # (N, 3, 3) N m s/rad, child axes (damping scale included)
    gravity: np.ndarray    # (3,) m/s²
    axis: np.ndarray       # (N, 3) unit limb axes, own axes
    length: np.ndarray     # (N,) m
    radius: np.ndarray     # (N,) m
    leaf_area: np.ndarray  # (N,) m²
    air: Air | None = None

    def __post_init__(self):
        members = [[] for _ in range(self.tree.n)]
        for k in range(self.tree.n):
            for j in self.tree.ancestors(k):
                members[j].append(k)
        self._subtrees = [np.array(m) for m in members]

    def subtree(self, j: int) -> np.ndarray:
        """Limb j and every limb below it."""
        return self._subtrees[j]


def spring_torques(model: Model, R: np.ndarray) -> np.ndarray:
    """(N, 3) N m, child axes: τ = −J_r(θ)⁻ᵀ K θ, θ = log(C_springᵀ R) (docs/design.md §2)."""
    tau = np.empty((model.tree.n, 3))
    for i in range(model.tree.n):
        theta = ref.rotation_log(model.spring_R[i].T @ R[i])
        phi = np.linalg.norm(theta)
        if phi < 1e-4:
            b = 1.0 / 12.0 + phi * phi / 720.0
        else:
            b = 1.0 / phi ** 2 - (1.0 + math.cos(phi)) / (2.0 * phi * math.sin(phi))
        T = ref.skew(theta)
        J_r_inv = np.eye(3) + 0.5 * T + b * T @ T
        tau[i] = -J_r_inv.T @ model.stiffness[i] @ theta
    return tau


def _magnitude(K: np.ndarray, negative: str) -> np.ndarray:
    """A symmetric matrix with its negative eigenvalues dropped ("drop") or made positive."""
    lam, V = np.linalg.eigh(K)
    lam = np.maximum(lam, 0.0) if negative == "drop" else np.abs(lam)
    return V @ np.diag(lam) @ V.T


def gravity_blocks(model: Model, kin: dict) -> np.ndarray:
    """(N, 3, 3) child axes: the PSD part of each subtree's gravity stiffness about its joint,
    m[(g·ρ)1 − sym(g ρᵀ)] with m ρ the subtree's first moment about the joint (docs/design.md §4)."""
    g, tree = model.gravity, model.tree
    out = np.empty((tree.n, 3, 3))
    for j in range(tree.n):
        sub = model.subtree(j)
        m_rho = (tree.mass[sub, None] * (kin["com_world"][sub] - kin["base"][j])).sum(axis=0)
        K = (g @ m_rho) * np.eye(3) - 0.5 * (np.outer(g, m_rho) + np.outer(m_rho, g))
        out[j] = kin["C"][j].T @ _magnitude(K, "drop") @ kin["C"][j]
    return out


def load_blocks(model: Model, kin: dict, force: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(N, 3, 3) child axes: each joint's implicit stiffness for the loads ``force`` (N, 3) N
    applied at points ``at`` (N, 3) m of its subtree: the resultant F/Σ|F| at ρ = Σ|F|(r − b),
    |K| + ½|F × ρ| 1 with K = (F·ρ)1 − sym(F ρᵀ) (`articulated` docstring)."""
    tree = model.tree
    out = np.zeros((tree.n, 3, 3))
    weight = np.linalg.norm(force, axis=1)
    for j in range(tree.n):
        sub = model.subtree(j)
        total = weight[sub].sum()
        if total == 0.0:
            continue
        F = force[sub].sum(axis=0) / total
        rho = (weight[sub, None] * (at[sub] - kin["base"][j])).sum(axis=0)
        K = (F @ rho) * np.eye(3) - 0.5 * (np.outer(F, rho) + np.outer(rho, F))
        K = _magnitude(K, "abs") + 0.5 * np.linalg.norm(np.cross(F, rho)) * np.eye(3)
        out[j] = kin["C"][j].T @ K @ kin["C"][j]
    return out


def drag(model: Model, kin: dict, advection: float, wind: np.ndarray | None = None):
    """Drag at the midpoints: (F (N, 3) N, D = ∂F/∂v_rel (N, 3, 3) N s/m, midpoints (N, 3) m);
    ``wind`` (N, 3) m/s: the wind velocities to take instead of the field's at the midpoints."""
    air = model.air
    e = np.einsum("nij,nj->ni", kin["C"], model.axis)
    rho = 0.5 * model.length[:, None] * e
    mid = kin["base"] + rho
    if wind is None:
        wind = air.wind.velocity(mid, advection)
    v_rel = wind - (kin["v_base"] + np.cross(kin["omega_world"], rho))
    F = np.zeros_like(mid)
    D = np.zeros((model.tree.n, 3, 3))
    for i in range(model.tree.n):
        v = v_rel[i]
        v_n = v - (v @ e[i]) * e[i]
        speed_n = np.linalg.norm(v_n)
        k = 0.5 * air.density * air.drag_coefficient * 2.0 * model.radius[i] * model.length[i]
        F[i] = k * speed_n * v_n
        D[i] = k * speed_n * (np.eye(3) - np.outer(e[i], e[i]))
        if speed_n > 0.0:
            D[i] += k * np.outer(v_n, v_n) / speed_n
        speed = np.linalg.norm(v)
        if model.leaf_area[i] > 0.0 and speed > 0.0:
            beta = air.vogel_exponent
            c = 0.5 * air.density * air.leaf_drag_coefficient * model.leaf_area[i]
            magnitude = c * speed ** (1.0 + beta)          # U_v = 1 m/s
            F[i] += magnitude * v
            D[i] += magnitude * (np.eye(3) + (1.0 + beta) * np.outer(v, v) / speed ** 2)
    return F, D, mid


def point_jacobians(model: Model, kin: dict, points: np.ndarray) -> np.ndarray:
    """(N, 3, 3N): the velocity of each limb's point ``points[i]`` (m, fixed in limb i) from the
    stacked joint rates."""
    n = model.tree.n
    J = np.zeros((n, 3, 3 * n))
    for i in range(n):
        for j in model.tree.ancestors(i):
            J[i, :, 3 * j:3 * j + 3] = -ref.skew(points[i] - kin["base"][j]) @ kin["C"][j]
    return J


def velocity_product_accelerations(model: Model, kin: dict, v: np.ndarray):
    """Angular and base-point (classical) accelerations of every limb with v̇ = 0, no gravity:
    (α (N, 3), a_base (N, 3)), the outward pass of Newton–Euler."""
    tree, C, omega = model.tree, kin["C"], kin["omega_world"]
    alpha = np.zeros((tree.n, 3))
    a_base = np.zeros((tree.n, 3))
    for i in range(tree.n):
        p = tree.parent[i]
        if p >= 0:
            r = kin["base"][i] - kin["base"][p]
            alpha[i] = alpha[p] + np.cross(omega[p], C[i] @ v[i])
            a_base[i] = a_base[p] + np.cross(alpha[p], r) + np.cross(omega[p],
                                                                      np.cross(omega[p], r))
    return alpha, a_base


def implicit_step(model: Model, R: np.ndarray, v: np.ndarray, h: float, theta: float,
                  advection: float = 0.0):
    """One θ-method step of h seconds (module docstring); returns the new (R, v). ``advection``:
    how far the wind's pattern has travelled at the step's start, m."""
    tree, n = model.tree, model.tree.n
    kin = ref.kinematics(tree, R, v)
    K = block_diag(*model.stiffness)
    C = block_diag(*model.damping)
    P = block_diag(*gravity_blocks(model, kin))
    A = ref.mass_matrix(tree, R) + theta * h * C + (theta * h) ** 2 * (K + P)
    rhs = spring_torques(model, R).ravel() - (C + theta * h * (K + P)) @ v.ravel()
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    if model.air is not None:
        F, D, mid = drag(model, kin, advection)
        force = F
        torque = np.cross(mid - kin["com_world"], F)        # the bias takes forces at the COMs
        K_F = block_diag(*load_blocks(model, kin, F, mid))
        hd = DRAG_IMPLICITNESS * h
        A += hd * hd * K_F
        rhs -= hd * K_F @ v.ravel()
        alpha, a_base = velocity_product_accelerations(model, kin, v)
        c = a_base + np.cross(alpha, mid - kin["base"])
        J = point_jacobians(model, kin, mid)
        DJ = np.einsum("nij,njk->nik", D, J)
        A += hd * J.reshape(3 * n, 3 * n).T @ DJ.reshape(3 * n, 3 * n)
        rhs -= hd * np.einsum("nij,ni->j", J, np.einsum("nij,nj->ni", D, c))
    rhs -= ref.bias(tree, R, v, model.gravity, force, torque)
    a = np.linalg.solve(A, rhs).reshape(n, 3)
    turn = h * (v + theta * h * a)
    return np.array([R[i] @ ref.rotation_exp(turn[i]) for i in range(n)]), v + h * a


def _drag_terms(model: Model, kin: dict, v: np.ndarray, advection: float, wind=None):
    """(F (N, 3), torque about the COMs (N, 3), K_F (3N, 3N), J (N, 3, 3N), D (N, 3, 3)) of the
    drag in state (kin, v), the wind velocities ``wind`` or the field's (`drag`)."""
    F, D, mid = drag(model, kin, advection, wind)
    torque = np.cross(mid - kin["com_world"], F)        # the bias takes forces at the COMs
    K_F = block_diag(*load_blocks(model, kin, F, mid))
    return F, torque, K_F, point_jacobians(model, kin, mid), D


def galpha_coefficients(rho_inf: float) -> tuple[float, float, float, float]:
    """(α_m, α_f, β, γ) of Chung & Hulbert (1993) for spectral radius at infinity ρ∞."""
    alpha_m = (2.0 * rho_inf - 1.0) / (rho_inf + 1.0)
    alpha_f = rho_inf / (rho_inf + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    return alpha_m, alpha_f, 0.25 * (gamma + 0.5) ** 2, gamma


def _galpha_state(R, v, vdot, a, x, h, coefficients):
    """(R, v, a) at the end of a generalized-α step whose v̇ₙ₊₁ is x."""
    alpha_m, alpha_f, beta, gamma = coefficients
    a_new = ((1.0 - alpha_f) * x + alpha_f * vdot - alpha_m * a) / (1.0 - alpha_m)
    turn = v + h * ((0.5 - beta) * a + beta * a_new)
    return (np.array([R[i] @ ref.rotation_exp(h * turn[i]) for i in range(len(R))]),
            v + h * ((1.0 - gamma) * a + gamma * a_new), a_new)


def _galpha_iteration_coefficients(h: float, rho_inf: float) -> tuple[float, float]:
    """(c_v s, c_q s²) of the Newton iterations (module docstring)."""
    alpha_m, alpha_f, beta, gamma = galpha_coefficients(rho_inf)
    ratio = (1.0 - alpha_f) / (1.0 - alpha_m)
    return h * gamma * ratio, h * h * beta * ratio


def _newton_iteration(model: Model, R_k: np.ndarray, v_k: np.ndarray, c_v: float, c_q: float,
                      rate_ref: np.ndarray, position_ref: np.ndarray, advection: float,
                      wind: np.ndarray | None = None) -> np.ndarray:
    """x (N, 3) rad/s² of one Newton iteration at (R_k, v_k) about x_r = rate_ref and
    x_p = position_ref (module docstring), the drag with the wind velocities ``wind``
    (default: the field's at the midpoints)."""
    tree, n = model.tree, model.tree.n
    kin = ref.kinematics(tree, R_k, v_k)
    damping = block_diag(*model.damping)
    stiffness = block_diag(*model.stiffness) + block_diag(*gravity_blocks(model, kin))
    force, torque = np.zeros((n, 3)), np.zeros((n, 3))
    if model.air is not None:
        force, torque, K_F, J, D = _drag_terms(model, kin, v_k, advection, wind)
        stiffness += K_F
        DJ = np.einsum("nij,njk->nik", D, J)
        damping += J.reshape(3 * n, 3 * n).T @ DJ.reshape(3 * n, 3 * n)
    rhs = (spring_torques(model, R_k).ravel()
           - np.einsum("nij,nj->ni", model.damping, v_k).ravel()
           - ref.bias(tree, R_k, v_k, model.gravity, force, torque)
           + c_v * damping @ np.ravel(rate_ref) + c_q * stiffness @ np.ravel(position_ref))
    return np.linalg.solve(ref.mass_matrix(tree, R_k) + c_v * damping + c_q * stiffness,
                           rhs).reshape(n, 3)


def galpha_start(model: Model, R: np.ndarray, v: np.ndarray, h: float, rho_inf: float,
                 advection: float = 0.0) -> np.ndarray:
    """(N, 3) rad/s²: the starting v̇ = a of generalized-α (module docstring)."""
    c_v, c_q = _galpha_iteration_coefficients(h, rho_inf)
    zero = np.zeros_like(v)
    return _newton_iteration(model, R, v, c_v, c_q, zero, zero, advection)


def _galpha_sub_step(model: Model, R, v, vdot, a, h, rho_inf, control, advection, rate):
    """One generalized-α step of h seconds by Newton iterations under ``control`` (module
    docstring), ``rate`` the last sub-step's rate estimate η: (converged, R, v, v̇, a, η) at
    the last iterate."""
    coefficients = galpha_coefficients(rho_inf)
    alpha_m, alpha_f, beta, gamma = coefficients
    c_v, c_q = _galpha_iteration_coefficients(h, rho_inf)
    a_zero = (alpha_f * vdot - alpha_m * a) / (1.0 - alpha_m)
    # the first iteration at (R, v): rates and rotations move by c_v (x − rate_ref) and
    # c_q (x − position_ref)
    R_k, v_k = R, v
    rate_ref = -h * ((1.0 - gamma) * a + gamma * a_zero) / c_v
    position_ref = -h * (v + h * ((0.5 - beta) * a + beta * a_zero)) / c_q
    last_change = 0.0
    converged = False
    eta = max(rate, 1e-16) ** 0.8
    # the wind at the step's start, taken by every iteration
    wind = None
    if model.air is not None:
        kin = ref.kinematics(model.tree, R, v)
        mid = kin["base"] + 0.5 * model.length[:, None] * np.einsum("nij,nj->ni", kin["C"],
                                                                    model.axis)
        wind = model.air.wind.velocity(mid, advection)
    for iteration in range(control.max_iterations):
        guess = _newton_iteration(model, R_k, v_k, c_v, c_q, rate_ref, position_ref, advection,
                                  wind)
        change = np.abs(guess - rate_ref).max()
        R_k, v_k, a_new = _galpha_state(R, v, vdot, a, guess, h, coefficients)
        rate_ref = position_ref = guess
        size = np.abs(guess).max()
        if iteration >= 2:
            theta = change / last_change if last_change > 0.0 else 0.0
            if theta >= control.contraction:
                return False, R_k, v_k, guess, a_new, UNKNOWN_RATE
            eta = theta / (1.0 - theta)
        if iteration >= 1 and (change <= max(control.tolerance * size, control.floor)
                               or (eta <= control.trusted_rate
                                   and eta * change <= control.error_tolerance * size)):
            return True, R_k, v_k, guess, a_new, eta
        last_change = change
    return False, R_k, v_k, guess, a_new, UNKNOWN_RATE


def galpha_step(model: Model, R: np.ndarray, v: np.ndarray, vdot: np.ndarray, a: np.ndarray,
                h: float, rho_inf: float, control, advection: float = 0.0,
                wind_speed: float = 0.0, level: int = 0, rate: float = UNKNOWN_RATE):
    """One generalized-α step of h seconds (module docstring): Newton iterations until
    converged, a step that does not converge taken again as two of h/2 down to
    h/2^max_halvings, starting one halving coarser than the last step's ``level``; the wind's
    pattern at ``advection`` + wind_speed × the time into the step; ``rate`` the iterations'
    rate estimate carried from the last sub-step. Returns the new (R, v, v̇, a, level, rate)."""
    finest = control.max_halvings
    level = max(level - 1, 0)
    deepest = level
    done = 0.0                     # s into the step
    while done < h * (1.0 - 1e-12):
        length = h / 2**level
        converged, R_k, v_k, vdot_k, a_k, rate = _galpha_sub_step(
            model, R, v, vdot, a, length, rho_inf, control, advection + wind_speed * done, rate)
        if not converged and level < finest:
            level += 1
            deepest = max(deepest, level)
            continue
        R, v, vdot, a = R_k, v_k, vdot_k, a_k
        done += length
    return R, v, vdot, a, deepest, rate


def _quat_product(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product of quaternions [w, x, y, z]."""
    return np.array([p[0] * q[0] - p[1:] @ q[1:],
                     *(p[0] * q[1:] + q[0] * p[1:] + np.cross(p[1:], q[1:]))])


def quats_to_matrices(q: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations of quaternions (N, 4) [w, x, y, z], normalised first (scipy)."""
    return Rotation.from_quat(q[:, [1, 2, 3, 0]]).as_matrix()


def matrices_to_quats(R: np.ndarray) -> np.ndarray:
    """(N, 4) unit quaternions [w, x, y, z], w ≥ 0, of rotations (N, 3, 3)."""
    q = Rotation.from_matrix(R).as_quat()[:, [3, 0, 1, 2]]
    return q * np.where(q[:, :1] < 0.0, -1.0, 1.0)


def rk4_step(model: Model, q: np.ndarray, v: np.ndarray, h: float):
    """One classical RK4 step of h seconds on (q, v), ``q̇ = ½ q ⊗ (0, v)``, ``v̇`` from the
    dense forward dynamics with the spring and damper torques, no wind; the quaternions
    renormalised after the step. Returns the new (q, v)."""
    def rates(qs, vs):
        R = quats_to_matrices(qs)
        tau = spring_torques(model, R) - np.einsum("nij,nj->ni", model.damping, vs)
        vdot = ref.forward_dynamics(model.tree, R, vs, tau, model.gravity).reshape(-1, 3)
        qdot = np.array([0.5 * _quat_product(qs[i], np.r_[0.0, vs[i]])
                         for i in range(len(qs))])
        return qdot, vdot

    k1 = rates(q, v)
    k2 = rates(q + 0.5 * h * k1[0], v + 0.5 * h * k1[1])
    k3 = rates(q + 0.5 * h * k2[0], v + 0.5 * h * k2[1])
    k4 = rates(q + h * k3[0], v + h * k3[1])
    q_new = q + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0])
    v_new = v + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1])
    return q_new / np.linalg.norm(q_new, axis=1)[:, None], v_new
