"""The models' dynamics as the integrators see them.

A *system* is a named record of everything one model's accelerations read: its static
arrays, its work arrays, the aerodynamic inputs, the external loads and the scales in force.
`accelerations(system, q, v, implicit_h, drag_h)` computes the rates' derivative of state
(q, v) for either model and returns the work array that holds it; the steppers in
`integrators` and the dop853 adapter in `reference_integrator` are written once against it.

- `ArticulatedSystem`: the articulated model, joint quaternions q (N, 4) child → parent and
  joint rates v (N, 3) rad/s, child axes (`articulated_dynamics`);
- `seed_model.SeedSystem`: the seed model, absolute quaternions (N, 4) limb → inertial and
  body rates (N, 3) rad/s (`seed_model.seed_dynamics`).

The choice between them is made by numba when it compiles a stepper for a record type
(`numba.extending.overload`), so the call costs what a direct call costs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.extending import overload

from .aero import Air, drag_loads, midpoints
from .articulated import (ArticulatedModel, Workspace, forward_kinematics,
                          implicit_accelerations)
from .joints import joint_torques
from .kernel import kernel
from .seed_model import SeedSystem, seed_dynamics
from .wind import advance_wind, wind_at


class ArticulatedSystem(NamedTuple):
    """What `articulated_dynamics` reads: model, work arrays, air, loads and scales."""

    model: ArticulatedModel
    work: Workspace
    air: Air
    ext_force: np.ndarray      # (N, 3) N at each base, inertial axes
    ext_torque: np.ndarray     # (N, 3) N m, inertial axes
    k_scale: float             # stiffness scale
    c_scale: float             # damping scale


@kernel
def articulated_dynamics(system, q, v, implicit_h, drag_h):
    """Joint accelerations (N, 3) rad/s² of state (q, v) into and as ``system.work.vdot``;
    implicit_h = θh for the joints' springs and dampers, drag_h = h for the aerodynamic terms
    (both 0: explicit).

    Stages: kinematics → aerodynamic loads (if ``air.enabled``) → joint torques →
    articulated-body recursion. With air, the loads given are added to the drag.
    """
    model, w, air = system.model, system.work, system.air
    k_scale, c_scale = system.k_scale, system.c_scale
    forward_kinematics(model.parent, model.base_offset, q, v, w.C_IF, w.base, w.omega,
                       w.base_vel, w.omega_rel)
    drag_implicit_h = 0.0
    force, torque = system.ext_force, system.ext_torque
    if air.enabled:
        midpoints(w.C_IF, w.base, w.omega, w.base_vel, air.length, air.limb_u, w.mid, w.mid_vel,
                  w.lever)
        wind_at(w.mid, air.wind, w.wind_at_mid)
        drag_loads(w.wind_at_mid, w.mid_vel, w.lever, air.length, air.radius, air.leaf_area,
                   air.air_density, air.drag_coefficient, air.leaf_drag_coefficient,
                   air.vogel_exponent, drag_h > 0.0, w.aero_force, w.aero_torque,
                   w.drag_jacobian)
        for i in range(w.total_force.shape[0]):
            for r in range(3):
                w.total_force[i, r] = force[i, r] + w.aero_force[i, r]
                w.total_torque[i, r] = torque[i, r] + w.aero_torque[i, r]
        force, torque = w.total_force, w.total_torque
        drag_implicit_h = drag_h
    joint_torques(q, v, model.spring_q, model.stiffness, model.damping, k_scale, c_scale,
                  implicit_h, w.theta, w.tau)
    implicit_accelerations(model, w, force, torque, implicit_h * implicit_h * k_scale,
                           implicit_h * c_scale, implicit_h, drag_implicit_h)
    return w.vdot


_DYNAMICS = {ArticulatedSystem: articulated_dynamics, SeedSystem: seed_dynamics}


def register(record_type, dynamics) -> None:
    """Make `accelerations` of a ``record_type`` record call ``dynamics(system, q, v,
    implicit_h, drag_h)`` (a kernel); for models defined outside this module."""
    _DYNAMICS[record_type] = dynamics


def accelerations(system, q, v, implicit_h, drag_h):
    """The rates' derivative (N, 3) of state (q, v) of ``system``'s model (in compiled code
    an overload chosen by the record's type)."""
    return _DYNAMICS[type(system)](system, q, v, implicit_h, drag_h)


@overload(accelerations, jit_options=dict(nogil=True))
def _accelerations(system, q, v, implicit_h, drag_h):
    dynamics = _DYNAMICS.get(getattr(system, "instance_class", None))
    if dynamics is None:
        return None

    def call(system, q, v, implicit_h, drag_h):
        return dynamics(system, q, v, implicit_h, drag_h)

    return call


def advance_clock(system, h):
    """After a step of h seconds: the wind's state of a system with air, else nothing (in
    compiled code an overload chosen by the record's type)."""
    if "air" in type(system)._fields:
        advance_wind(system.air.wind.state, h)


@overload(advance_clock, jit_options=dict(nogil=True))
def _advance_clock(system, h):
    if "air" in getattr(system, "fields", ()):
        def advance(system, h):
            advance_wind(system.air.wind.state, h)
    else:
        def advance(system, h):
            pass
    return advance
