"""A free rigid body (6 DOF) for the accuracy benchmark (DESIGN §8, the seed notebook).

The body has mass m, inertia I about its centre of mass (body axes), attitude
``C_IF`` (body → inertial, a unit quaternion) and body rate ω; its centre of mass
c moves under gravity g alone, and no torque acts about it:

    c̈ = g,   dC_IF/dt = C_IF ω^×,   I ω̇ = −ω × I ω

The rotation uses the tree's own code: `so3.quat_advance` / `so3.quat_to_matrix`
for the attitude and `seed_model.euler_acceleration` (Euler's equation, the form
every seed-model limb obeys) and `seed_model.quat_rate` for the rates. The
integrators are the tree's, restricted to a body with no joint:

- ``implicit``: the θ-method of DESIGN §4 with no spring or damper (K = C = 0), so
  the gyroscopic term stays explicit exactly as in the tree's step:
  ``a = I⁻¹(−ω × Iω)``, ``ω ← ω + h a``, attitude advanced by ``exp(h (ω_old + θ h a))``;
  the centre of mass likewise, ``c ← c + h (ċ + θ h g)``, ``ċ ← ċ + h g``.
- ``rk4``: classical RK4 on (c, ċ, q ∈ R⁴, ω), the quaternion renormalised after each step.
- ``dop853``: `reference_integrator.dop853_advance` on the same flat state.

State vector y (13,): c (3) m, ċ (3) m/s, q (4) body → inertial [w, x, y, z], ω (3) rad/s.

Invariants (DESIGN §8): p = m ċ; H = C_IF I ω (inertial axes, about the centre of mass);
T = ½ m ċᵀċ + ½ ωᵀ I ω; V = −m g·c.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import TreedynError
from .kernel import kernel
from .seed_model import euler_acceleration
from .so3 import quat_advance, quat_from_matrix, quat_rate, quat_to_matrix

STATE_SIZE = 13
COM, COM_VELOCITY, ATTITUDE, RATE = slice(0, 3), slice(3, 6), slice(6, 10), slice(10, 13)
INTEGRATORS = ("implicit", "rk4", "dop853")


@kernel
def freebody_rates(inertia, inertia_inv, gravity, y, out, zero):
    """dy/dt (13,) of the free body's state y; zero: (3,) zeros (the torque about the centre
    of mass)."""
    for r in range(3):
        out[r] = y[3 + r]
        out[3 + r] = gravity[r]
    quat_rate(y[6:10], y[10:13], out[6:10])
    euler_acceleration(inertia, inertia_inv, y[10:13], zero, out[10:13])


@kernel
def freebody_implicit_steps(n_steps, h, theta_m, inertia, inertia_inv, gravity, y, a, rot, zero):
    """n_steps θ-method steps of h seconds, y (13,) in place (module docstring)."""
    for _ in range(n_steps):
        euler_acceleration(inertia, inertia_inv, y[10:13], zero, a)
        for r in range(3):
            y[r] += h * (y[3 + r] + theta_m * h * gravity[r])
            y[3 + r] += h * gravity[r]
            rot[r] = h * (y[10 + r] + theta_m * h * a[r])
            y[10 + r] += h * a[r]
        quat_advance(y[6:10], rot)


@kernel
def freebody_rk4_steps(n_steps, h, inertia, inertia_inv, gravity, y, y0, ys, k, zero):
    """n_steps classical RK4 steps of h seconds, y (13,) in place, quaternion renormalised
    after each step; y0, ys (13,) and k (4, 13) work arrays."""
    weights = (0.0, 0.5, 0.5, 1.0)
    for _ in range(n_steps):
        y0[:] = y
        for stage in range(4):
            for j in range(STATE_SIZE):
                ys[j] = y0[j] + (weights[stage] * h * k[stage - 1, j] if stage > 0 else 0.0)
            freebody_rates(inertia, inertia_inv, gravity, ys, k[stage], zero)
        for j in range(STATE_SIZE):
            y[j] = y0[j] + h / 6.0 * (k[0, j] + 2.0 * k[1, j] + 2.0 * k[2, j] + k[3, j])
        norm = 1.0 / math.sqrt(y[6] ** 2 + y[7] ** 2 + y[8] ** 2 + y[9] ** 2)
        for j in range(6, 10):
            y[j] *= norm


class FreeBody:
    """A free rigid body and its steppers.

    mass : kg;  inertia : (3, 3) kg m² about the centre of mass, body axes;  gravity : (3,)
    m/s²;  com, com_velocity : (3,) m, m/s inertial;  C_IF : (3, 3) body → inertial;
    omega : (3,) rad/s body axes.
    """

    def __init__(self, mass: float, inertia, gravity, com, com_velocity, C_IF, omega):
        self.mass = float(mass)
        self.inertia = np.array(inertia, dtype=float)
        self.inertia_inv = np.linalg.inv(self.inertia)
        self.gravity = np.array(gravity, dtype=float)
        self.y = np.concatenate([np.asarray(com, float), np.asarray(com_velocity, float),
                                 quat_from_matrix(np.asarray(C_IF, float)),
                                 np.asarray(omega, float)])
        self.time = 0.0
        self._zero = np.zeros(3)
        self._a = np.zeros(3)
        self._rot = np.zeros(3)
        self._y0 = np.zeros(STATE_SIZE)
        self._ys = np.zeros(STATE_SIZE)
        self._k = np.zeros((4, STATE_SIZE))

    # -- state ---------------------------------------------------------------------------------

    @property
    def com(self) -> np.ndarray:
        """(3,) m, centre of mass, inertial."""
        return self.y[COM].copy()

    @property
    def com_velocity(self) -> np.ndarray:
        """(3,) m/s, inertial."""
        return self.y[COM_VELOCITY].copy()

    @property
    def C_IF(self) -> np.ndarray:
        """(3, 3) body → inertial."""
        return quat_to_matrix(self.y[ATTITUDE])

    @property
    def omega(self) -> np.ndarray:
        """(3,) rad/s, body axes."""
        return self.y[RATE].copy()

    def invariants(self) -> dict[str, np.ndarray | float]:
        """p (3,) kg m/s; H (3,) kg m²/s inertial, about the centre of mass; T, V (J)."""
        cdot, omega = self.y[COM_VELOCITY], self.y[RATE]
        return {
            "p": self.mass * cdot,
            "H": self.C_IF @ (self.inertia @ omega),
            "T": 0.5 * self.mass * float(cdot @ cdot) + 0.5 * float(omega @ self.inertia @ omega),
            "V": -self.mass * float(self.gravity @ self.y[COM]),
        }

    # -- stepping ------------------------------------------------------------------------------

    def step(self, n: int, dt: float, integrator: str, theta: float = 0.6,
             rtol: float | None = None, atol: float | None = None) -> None:
        """Advance n steps of dt s with `integrator` (implicit | rk4 | dop853; for dop853 dt is
        only the span n·dt, its tolerances rtol/atol default to the reference's)."""
        if integrator == "implicit":
            freebody_implicit_steps(n, dt, theta, self.inertia, self.inertia_inv, self.gravity,
                                    self.y, self._a, self._rot, self._zero)
        elif integrator == "rk4":
            freebody_rk4_steps(n, dt, self.inertia, self.inertia_inv, self.gravity, self.y,
                               self._y0, self._ys, self._k, self._zero)
        elif integrator == "dop853":
            from .reference_integrator import DEFAULT_ATOL, DEFAULT_RTOL, dop853_advance

            dop853_advance(self, n * dt, DEFAULT_RTOL if rtol is None else rtol,
                           DEFAULT_ATOL if atol is None else atol)
            return
        else:
            raise TreedynError(f"integrator '{integrator}' is not available (choose from "
                               f"{', '.join(INTEGRATORS)})")
        self.time += n * dt

    # -- flat state for an ODE solver (reference_integrator) -----------------------------------

    def state_changed(self) -> None:
        """Nothing to recompute: every output reads the state vector."""

    def state_vector(self) -> np.ndarray:
        return self.y.copy()

    def set_state_vector(self, y: np.ndarray) -> None:
        self.y[:] = y
        self.y[ATTITUDE] /= np.linalg.norm(self.y[ATTITUDE])

    def rates(self, y: np.ndarray, out: np.ndarray) -> None:
        freebody_rates(self.inertia, self.inertia_inv, self.gravity, y, out, self._zero)
