"""A free rigid body (6 DOF) for the accuracy benchmark (docs/design.md §8, the seed notebook).

The body has mass m, inertia I about its centre of mass (body axes), attitude
``C_IF`` (body → inertial, a unit quaternion) and body rate ω; its centre of mass
c moves under gravity g alone, and no torque acts about it:

    c̈ = g,   dC_IF/dt = C_IF ω^×,   I ω̇ = −ω × I ω

The rotation uses the tree's own code: the steppers of `integrators` (the same
θ-method and RK4 as the tree's, given this body's `freebody_dynamics`: Euler's
equation `seed_model.euler_acceleration`, the form every seed-model limb obeys),
`so3.quat_to_matrix` for the attitude and `so3.quat_rate` for the rates:

- ``implicit``: the θ-method of docs/design.md §4 with no spring or damper (K = C = 0), so
  the gyroscopic term stays explicit exactly as in the tree's step:
  ``a = I⁻¹(−ω × Iω)``, ``ω ← ω + h a``, attitude advanced by ``exp(h (ω_old + θ h a))``;
  the centre of mass likewise, ``c ← c + h (ċ + θ h g)``, ``ċ ← ċ + h g``.
- ``rk4``: classical RK4 on (q ∈ R⁴, ω), the quaternion renormalised after each step; on
  (c, ċ) it is exact (c̈ = g is a polynomial of degree 2 in t).
- ``dop853``: `integrators.reference.dop853_advance` on the flat state.

The centre of mass decouples from the rotation, so both methods' n steps on it are
taken at once in closed form (`FreeBody.step`).

State vector y (13,): c (3) m, ċ (3) m/s, q (4) body → inertial [w, x, y, z], ω (3) rad/s.

Invariants (docs/design.md §8): p = m ċ; H = C_IF I ω (inertial axes, about the centre of mass);
T = ½ m ċᵀċ + ½ ωᵀ I ω; V = −m g·c.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dynamics.seed_model import euler_acceleration
from ..dynamics.systems import register
from ..errors import TreedynError
from ..integrators.steppers import RK4Stages, rk4_steps, theta_steps
from ..numerics.kernel import kernel
from ..numerics.so3 import quat_from_matrix, quat_rate, quat_to_matrix

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


class FreeBodySystem(NamedTuple):
    """What `freebody_dynamics` reads (`systems.accelerations`): the rotation of one body."""

    inertia: np.ndarray       # (3, 3) kg m², about the centre of mass, body axes
    inertia_inv: np.ndarray   # (3, 3) its inverse
    zero: np.ndarray          # (3,) zeros: the torque about the centre of mass, N m
    vdot: np.ndarray          # (1, 3) rad/s², the body rate's derivative


@kernel
def freebody_dynamics(system, q, v, implicit_h, drag_h):
    """ω̇ (1, 3) rad/s² of body rate v (1, 3), into and as ``system.vdot``: Euler's equation
    with no torque (nothing to make implicit: implicit_h and drag_h are not used)."""
    euler_acceleration(system.inertia, system.inertia_inv, v[0], system.zero, system.vdot[0])
    return system.vdot


register(FreeBodySystem, freebody_dynamics)


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
        self._system = FreeBodySystem(self.inertia, self.inertia_inv, self._zero,
                                      np.zeros((1, 3)))
        self._rk4_stages = RK4Stages.zeros(1)

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
        if integrator == "dop853":
            from ..integrators.reference import DEFAULT_ATOL, DEFAULT_RTOL, dop853_advance

            dop853_advance(self, n * dt, DEFAULT_RTOL if rtol is None else rtol,
                           DEFAULT_ATOL if atol is None else atol)
            return
        if integrator not in INTEGRATORS:
            raise TreedynError(f"integrator '{integrator}' is not available (choose from "
                               f"{', '.join(INTEGRATORS)})")
        # the rotation: (1, 4) attitude and (1, 3) rate, views of y
        q, v = self.y[ATTITUDE].reshape(1, 4), self.y[RATE].reshape(1, 3)
        if integrator == "implicit":
            theta_steps(self._system, n, dt, theta, q, v)
        else:
            rk4_steps(self._system, n, dt, q, v, self._rk4_stages)
        # the centre of mass, n steps at once: the θ-method's c ← c + h (ċ + θ h g) sums to
        # c + n h ċ + h² g (n(n − 1)/2 + θ n); RK4 is exact, the same with θ = ½
        weight = 0.5 * n * (n - 1) + (theta if integrator == "implicit" else 0.5) * n
        self.y[COM] += n * dt * self.y[COM_VELOCITY] + dt * dt * weight * self.gravity
        self.y[COM_VELOCITY] += n * dt * self.gravity
        self.time += n * dt

    # -- flat state for an ODE solver (integrators.reference) -----------------------------------

    def state_changed(self) -> None:
        """Nothing to recompute: every output reads the state vector."""

    def state_vector(self) -> np.ndarray:
        return self.y.copy()

    def set_state_vector(self, y: np.ndarray) -> None:
        self.y[:] = y
        self.y[ATTITUDE] /= np.linalg.norm(self.y[ATTITUDE])

    def rates(self, y: np.ndarray, out: np.ndarray) -> None:
        freebody_rates(self.inertia, self.inertia_inv, self.gravity, y, out, self._zero)

    def as_ode(self) -> "FreeBodyODE":
        """The body as y' = f(y), for `integrators.reference` (DOP853)."""
        return FreeBodyODE(self)


class FreeBodyODE:
    """A `FreeBody` as y' = f(y) (`integrators.reference.ODE`)."""

    def __init__(self, body: FreeBody):
        self.body = body

    def state(self) -> np.ndarray:
        return self.body.state_vector()

    def set_state(self, y: np.ndarray) -> None:
        self.body.set_state_vector(y)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        out = np.empty(y.shape[0])
        self.body.rates(y, out)
        return out

    def advance_clock(self, duration: float, steps: int) -> None:
        """A free body has no wind to advance."""
