"""The `dop853` reference integrator (docs/design.md §4): `scipy.integrate.solve_ivp`, method DOP853.

The state is a flat vector of quaternions (as vectors in R⁴, ``q̇ = ½ q ⊗ (0, ω)``)
and rates; the quaternions are renormalised whenever the state is handed back.

- a `Simulation` (either model): the quaternions (4N) and rates (3N) its integrators step
  (articulated: joint ones; seed: absolute ones), the rates' derivative from the model's
  `systems.accelerations` with nothing implicit (`flat_rates`);
- any system that offers its own ODE (``as_ode()``: `bench.freebody.FreeBody`, its 13-vector).

External loads and the wind field are held at their values of the start of each
output step dt, as the other integrators hold the wind over a step; the wind is
advanced by dt after it. With aerodynamics off one solve spans the whole call.
Tolerances: ``rtol``, ``atol`` (default 1e-10). Slow: for validation and `treedyn run`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..dynamics.seed_model import SeedDynamics
from ..dynamics.systems import accelerations
from ..dynamics.wind import advance_wind
from ..numerics.kernel import kernel
from ..numerics.so3 import quat_rate

DEFAULT_RTOL = 1e-10
DEFAULT_ATOL = 1e-10


@kernel
def flat_rates(system, y, q, v, out):
    """dy/dt (7N,) of the flat state y = [q (4N), v (3N)] of ``system``'s model
    (`systems.accelerations`, nothing implicit); q (N, 4), v (N, 3) scratch copies."""
    n = q.shape[0]
    for i in range(n):
        for r in range(4):
            q[i, r] = y[4 * i + r]
        for r in range(3):
            v[i, r] = y[4 * n + 3 * i + r]
    vdot = accelerations(system, q, v, 0.0, 0.0)
    for i in range(n):
        quat_rate(q[i], v[i], out[4 * i:4 * i + 4])
        for r in range(3):
            out[4 * n + 3 * i + r] = vdot[i, r]


class SimulationODE:
    """A `Simulation` (either model) as y' = f(y): y = [quaternions (4N), rates (3N)]."""

    def __init__(self, sim):
        self.sim = sim
        n = sim.tree.n
        self.n_quaternions = n
        # the seed model's part of the simulation (its conversion and work arrays), else None
        self.seed = sim.dynamics if isinstance(sim.dynamics, SeedDynamics) else None
        air = sim.air()
        self.enabled = air.enabled
        self.system = sim.system(air) if self.seed is None else self.seed.system(sim, air)
        self._q = np.zeros((n, 4))
        self._v = np.zeros((n, 3))

    def _state_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The (N, 4) quaternions and (N, 3) rates the model steps, the seed's loaded."""
        if self.seed is None:
            return self.sim.q, self.sim.v
        self.seed.load(self.sim)
        return self.seed.qa, self.seed.omega

    def state(self) -> np.ndarray:
        q, v = self._state_arrays()
        return np.concatenate([q.ravel(), v.ravel()])

    def set_state(self, y: np.ndarray) -> None:
        n = self.n_quaternions
        q = y[:4 * n].reshape(n, 4)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        if self.seed is None:
            self.sim.q[:], self.sim.v[:] = q, y[4 * n:].reshape(n, 3)
            return
        self.seed.qa[:], self.seed.omega[:] = q, y[4 * n:].reshape(n, 3)
        self.seed.store(self.sim)

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        out = np.empty(y.shape[0])
        flat_rates(self.system, y, self._q, self._v, out)
        return out

    def advance_clock(self, duration: float, steps: int) -> None:
        """After a solve: the wind by each of `steps` output steps (not the time: the caller's)."""
        h = duration / steps
        for _ in range(steps):
            advance_wind(self.sim.wind.state, h)


class ODE(Protocol):
    """What DOP853 steps: a flat state y and y' = f(t, y)."""

    def state(self) -> np.ndarray: ...

    def set_state(self, y: np.ndarray) -> None: ...

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray: ...

    def advance_clock(self, duration: float, steps: int) -> None: ...


def _ode(system) -> ODE:
    """A `Simulation`'s ODE, or the one a system offers itself (``as_ode()``: a free body)."""
    as_ode = getattr(system, "as_ode", None)
    return as_ode() if as_ode is not None else SimulationODE(system)


def _solve(ode, duration: float, rtol: float, atol: float, t_eval=None):
    """One solve_ivp(DOP853) from the current state over [0, duration]; (solution, ok)."""
    from scipy.integrate import solve_ivp  # imported here: it costs ~0.5 s of start-up

    solution = solve_ivp(ode.rhs, (0.0, duration), ode.state(), method="DOP853", rtol=rtol,
                         atol=atol, t_eval=t_eval)
    ok = solution.status == 0 and bool(np.all(np.isfinite(solution.y[:, -1])))
    return solution, ok


def _first_bad_limb(ode, y: np.ndarray) -> int:
    """Index of the first limb whose state is non-finite (0 if none can be named)."""
    n = getattr(ode, "n_quaternions", 0)
    if n == 0:
        return 0
    bad = ~np.isfinite(y[:4 * n].reshape(n, 4)).all(axis=1) | ~np.isfinite(
        y[4 * n:].reshape(n, 3)).all(axis=1)
    return int(np.argmax(bad)) if bad.any() else 0


def dop853_steps(sim, n: int) -> tuple[int, int]:
    """n output steps of sim.dt with DOP853 at sim.rtol, sim.atol (the `Simulation` stepper:
    the caller advances sim.time and the kinematics). Returns (steps completed, first limb
    with a non-finite state or −1), the state left at the last good output step."""
    ode = SimulationODE(sim)
    chunks = [(n, n * sim.dt)] if not ode.enabled else [(1, sim.dt)] * n
    done = 0
    for steps, duration in chunks:
        solution, ok = _solve(ode, duration, sim.rtol, sim.atol)
        if not ok:
            return done, _first_bad_limb(ode, solution.y[:, -1])
        ode.set_state(solution.y[:, -1])
        ode.advance_clock(duration, steps)
        done += steps
    return done, -1


def dop853_advance(system, duration: float, rtol: float = DEFAULT_RTOL,
                   atol: float = DEFAULT_ATOL) -> None:
    """Advance a `Simulation` (either model) or a `FreeBody` by `duration` s with DOP853 in
    one solve (loads and wind held), renormalise its quaternions, advance its time."""
    ode = _ode(system)
    solution, ok = _solve(ode, duration, rtol, atol)
    if not ok:
        from ..errors import SimulationDiverged

        raise SimulationDiverged(f"dop853 failed after t = {system.time:.4f} s: "
                                 f"{solution.message}")
    ode.set_state(solution.y[:, -1])
    ode.advance_clock(duration, 1)
    system.time += duration
    _refresh(system)


def dop853_samples(system, duration: float, dt: float, measure, rtol: float = DEFAULT_RTOL,
                   atol: float = DEFAULT_ATOL) -> list:
    """[measure(system)] at t = 0, dt, 2dt, … ≤ duration from ONE DOP853 solve (dense
    sampling without restarts; loads and wind held). The system is left at the last sample."""
    ode = _ode(system)
    count = int(round(duration / dt))
    times = dt * np.arange(count + 1)
    solution, ok = _solve(ode, float(times[-1]), rtol, atol, t_eval=times)
    if not ok:
        from ..errors import SimulationDiverged

        raise SimulationDiverged(f"dop853 failed: {solution.message}")
    start = system.time
    values = []
    for k, t in enumerate(times):
        ode.set_state(solution.y[:, k])
        system.time = start + float(t)
        _refresh(system)
        values.append(measure(system))
    ode.advance_clock(float(times[-1]), 1)
    return values


def _refresh(system) -> None:
    """Tell a simulation (or free body) that its state changed under it."""
    system.state_changed()
