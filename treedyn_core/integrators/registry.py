"""The time steppers by name (docs/design.md §4), as scipy's `solve_ivp` keeps its METHODS:
the one list from which `Simulation`'s dispatch, the command line's ``--integrator``, the
app's Integrator menu and the benchmarks derive their choices. The preset schema, a layer
below, spells the same names; a test checks that it does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stepper:
    """A time stepper.

    name : the value of ``simulation.integrator``;  compiled : a numba loop over the limbs (`steppers`), fast enough to run
    live in the app (else a scipy solve, for validation);  implicit : the joints' springs and
    dampers implicit, stable at the app's time steps on stiff trees;  summary : one line for
    a user."""

    name: str
    compiled: bool
    implicit: bool
    summary: str


STEPPERS: dict[str, Stepper] = {stepper.name: stepper for stepper in (
    Stepper("implicit", True, True,
            "the θ-method, springs, dampers and drag damping implicit (default)"),
    Stepper("galpha", True, True,
            "Lie-group generalized-α, second order, numerical damping set by ρ∞"),
    Stepper("rk4", True, False,
            "classical Runge–Kutta, explicit: time step within its stability limit"),
    Stepper("dop853", False, False,
            "scipy's DOP853 to rtol and atol, the reference: slow"),
)}

INTEGRATORS: tuple[str, ...] = tuple(STEPPERS)
"""Every stepper's name, the default first."""

LIVE_INTEGRATORS: tuple[str, ...] = tuple(name for name, stepper in STEPPERS.items()
                                          if stepper.compiled)
"""The compiled steppers: those the app runs live."""

IMPLICIT_INTEGRATORS: tuple[str, ...] = tuple(name for name, stepper in STEPPERS.items()
                                              if stepper.implicit)
"""The steppers with the joints' springs and dampers implicit."""
