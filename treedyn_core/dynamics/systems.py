"""The models' dynamics as the integrators see them.

A *system* is a named record of everything one model's accelerations read: its static
arrays, its work arrays, the aerodynamic inputs, the external loads and the scales in force.
`accelerations(system, q, v, implicit_h, drag_h)` computes the rates' derivative of state
(q, v) for either model and returns the work array that holds it; the steppers in
`integrators` and the dop853 adapter in `integrators.reference` are written once against it.
`accelerations_about(system, q, v, rate_h, position_h2, rate_ref, position_ref, sample_wind)` is
a Newton iteration of an implicit step about reference accelerations (generalized-α's; the
articulated model only).

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
from numba import prange, types
from numba.experimental import structref
from numba.extending import overload

from ..numerics import mat3 as m3
from ..numerics.kernel import KERNEL_OPTIONS, kernel
from .aero import Air, drag_loads, midpoints
from .articulated import (ArticulatedModel, ImplicitTerms, Workspace, articulated_inward,
                          articulated_outward, forward_kinematics, implicit_joint_blocks,
                          limb_inertias, subtree_sums)
from .joints import joint_torques
from .partition import Partition
from .seed_model import SeedSystem, seed_dynamics
from .wind import advance_wind, plan_samples, wind_at


class Pull(NamedTuple):
    """A spring-damper pulling a material point of one limb toward a target (the app's grab):
    force k (target − p) − c ṗ at the point p, made implicit in the θ-method and in
    generalized-α as the stiff terms of the joints are (`pull_load`)."""

    limb: int                  # the pulled limb, −1: no pull
    offset: np.ndarray         # (3,) m, the limb's base → the point, limb axes
    target: np.ndarray         # (3,) m, inertial
    stiffness: float           # k, N/m
    damping: float             # c, N s/m

    @classmethod
    def none(cls) -> "Pull":
        return cls(-1, np.zeros(3), np.zeros(3), 0.0, 0.0)


class ArticulatedSystem(NamedTuple):
    """What `articulated_dynamics` reads: model, work arrays, air, loads and scales."""

    model: ArticulatedModel
    work: Workspace
    air: Air
    ext_force: np.ndarray      # (N, 3) N at each base, inertial axes
    ext_torque: np.ndarray     # (N, 3) N m, inertial axes
    k_scale: float             # stiffness scale
    c_scale: float             # damping scale
    pull: Pull
    partition: Partition       # the limbs as the threads share them (`partition.partition`)


@kernel(inline="always")
def pull_load(limbs, pull, w, rate_h, position_h2, stiffness_rate_h, force, torque):
    """Over ``limbs`` (int array): if the pulled limb is among them, add the pull's force at its
    point (and its moment about the limb's base) to force and torque (N, 3), and its implicit
    terms to ``w.point_mass`` (0 for the others): as the implicit steps treat a
    stiff joint, with K = k JᵀJ, C = c JᵀJ (J: joint rates → the point's velocity) an added
    mass rate_h c + position_h2 k at the point (``w.point_rate_share``: the damper's part),
    and the force −stiffness_rate_h k ṗ. The θ-method: rate_h = stiffness_rate_h = θh,
    position_h2 = (θh)², (M + θhC + θ²h²K) a = f − θhK v; generalized-α: c_v, c_q and 0, the
    added mass about the iteration's references (`articulated.limb_inertias`). All 0:
    explicit. After forward_kinematics."""
    for k in range(limbs.shape[0]):
        i = limbs[k]
        w.point_mass[i] = 0.0
        if i != pull.limb:
            continue
        C = m3.load(w.C_IF[i])
        rho = m3.matvec(C, m3.vload(pull.offset))
        p = m3.vadd(m3.vload(w.base[i]), rho)
        p_dot = m3.vadd(m3.vload(w.base_vel[i]), m3.cross(m3.vload(w.omega[i]), rho))
        F = m3.vsub(m3.vscale(pull.stiffness, m3.vsub(m3.vload(pull.target), p)),
                    m3.vscale(pull.damping + stiffness_rate_h * pull.stiffness, p_dot))
        m3.vadd_into(F, force[i])
        m3.vadd_into(m3.cross(rho, F), torque[i])
        damper = rate_h * pull.damping
        added = damper + position_h2 * pull.stiffness
        w.point_mass[i] = added
        w.point_rate_share[i] = damper / added if added > 0.0 else 0.0
        m3.vstore(rho, w.point_lever[i])


@kernel
def articulated_dynamics(system, q, v, implicit_h, drag_h):
    """Joint accelerations (N, 3) rad/s² of state (q, v) into and as ``system.work.vdot``;
    implicit_h = θh for the joints' springs and dampers, drag_h = h for the aerodynamic terms
    (both 0: explicit): the θ-method's `ImplicitTerms`, the pull's spring implicit with θh."""
    k_scale, c_scale = system.k_scale, system.c_scale
    drag = drag_h if system.air.enabled else 0.0
    terms = ImplicitTerms(implicit_h * implicit_h * k_scale, implicit_h * c_scale,
                          implicit_h * implicit_h, implicit_h, drag * drag, drag, drag, False)
    return _articulated(system, q, v, implicit_h, terms, implicit_h, implicit_h * implicit_h,
                        system.work.vdot, system.work.vdot, True)


@kernel
def articulated_dynamics_about(system, q, v, rate_h, position_h2, rate_ref, position_ref,
                               sample_wind):
    """Joint accelerations x (N, 3) rad/s² into and as ``system.work.vdot``: one Newton
    iteration at state (q, v), ``(M + rate_h 𝒞 + position_h2 𝒦) x = f(q, v) + rate_h 𝒞 x_r +
    position_h2 𝒦 x_p`` with 𝒞 the dampers and the drag's damping, 𝒦 the springs, gravity's
    PSD stiffness and the loads' stiffness, x_r = rate_ref and x_p = position_ref (N, 3)
    rad/s² (`ImplicitTerms` about references): the rates move by rate_h (x − x_r) and the
    rotations by position_h2 (x − x_p) from (q, v). The pull's spring and damper are implicit
    so too (`pull_load`). sample_wind False: the drag takes the wind velocities the last call
    sampled (``work.wind_at_mid``; a step's later iterations, docs/design.md §4.7)."""
    k_scale, c_scale = system.k_scale, system.c_scale
    drag = system.air.enabled
    terms = ImplicitTerms(position_h2 * k_scale, rate_h * c_scale, position_h2, 0.0,
                          position_h2 if drag else 0.0, 0.0, rate_h if drag else 0.0, True)
    return _articulated(system, q, v, 0.0, terms, rate_h, position_h2, rate_ref, position_ref,
                        sample_wind)


@kernel(inline="always")
def _articulated(system, q, v, implicit_kv, terms, pull_rate_h, pull_position_h2, rate_ref,
                 position_ref, sample_wind):
    """The articulated model's accelerations for `ImplicitTerms` terms (and references), the
    springs' right-hand side less implicit_kv K v, the pull's spring implicit with
    pull_rate_h, pull_position_h2 and implicit_kv (`pull_load`). With air or a pull, the loads
    given are added to theirs. sample_wind False: the wind velocities at the midpoints are the
    last call's.

    Three sweeps over the tree (RBDA Table 7.1's three passes), each over the partition's top
    on this thread and over its groups in parallel (`partition`): outward, the stages that
    are one limb's own (`_limb_stages`); inward, the subtree sums, the joints' implicit
    blocks and pass 2 (`_subtree_stages`); outward, pass 3."""
    model, w, air, part = system.model, system.work, system.air, system.partition
    force, torque = system.ext_force, system.ext_torque
    copy_loads = air.enabled or system.pull.limb >= 0
    if copy_loads:   # the loads given plus drag and pull
        force, torque = w.total_force, w.total_torque
    # (a runtime bool: a literal True here would make the stages a second compile)
    sample = sample_wind and air.enabled
    if sample:
        plan_samples(air.wind)
    grouped = part.starts.shape[0] > 1
    _limb_stages(part.top, system, q, v, implicit_kv, terms, pull_rate_h, pull_position_h2,
                 rate_ref, position_ref, sample, copy_loads, force, torque)
    if grouped:
        # made only where there are groups: a small tree's step does not pay for it
        stages = StageArguments(system, q, v, implicit_kv, terms, pull_rate_h, pull_position_h2,
                                rate_ref, position_ref, sample, copy_loads, force, torque)
        _limb_stages_in_groups(part.limbs, part.starts, stages)
        _subtree_stages_in_groups(part.limbs, part.starts, stages)
    _subtree_stages(part.top, model, w, terms, rate_ref, position_ref)
    articulated_outward(part.top, model, w)
    if grouped:
        _outward_in_groups(part.limbs, part.starts, stages)
    return w.vdot


@structref.register
class _StageArgumentsType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


class StageArguments(structref.StructRefProxy):
    """What the stages of one call take besides their limbs, as one reference (made in
    compiled code): numba's parallel loops take arrays and numbers, not records (it reads a
    tuple as an array's shape), so the records reach the groups inside this."""


structref.define_proxy(StageArguments, _StageArgumentsType, [
    "system", "q", "v", "implicit_kv", "terms", "pull_rate_h", "pull_position_h2", "rate_ref",
    "position_ref", "sample_wind", "copy_loads", "force", "torque"])


# Not inlined: the top and the groups run one compiled copy, so a limb's terms are the same
# arithmetic wherever it is (two inlined copies may fuse multiply-adds differently).
@kernel(allocates=False)
def _limb_stages(limbs, system, q, v, implicit_kv, terms, pull_rate_h, pull_position_h2,
                 rate_ref, position_ref, sample_wind, copy_loads, force, torque):
    """The first sweep over ``limbs`` (int array, breadth-first, their parents done):
    kinematics → the pull → aerodynamic loads (if ``air.enabled``; the wind sampled if
    sample_wind) → joint torques → pass 1 of the recursion (`articulated.limb_inertias`).
    copy_loads: force, torque are the work arrays that take the given loads plus drag and
    pull."""
    model, w, air = system.model, system.work, system.air
    forward_kinematics(limbs, model.parent, model.base_offset, q, v, w.C_IF, w.base, w.omega,
                       w.base_vel, w.omega_rel)
    if copy_loads:
        for k in range(limbs.shape[0]):
            i = limbs[k]
            for r in range(3):
                force[i, r] = system.ext_force[i, r]
                torque[i, r] = system.ext_torque[i, r]
    pull_load(limbs, system.pull, w, pull_rate_h, pull_position_h2, implicit_kv, force, torque)
    if air.enabled:
        midpoints(limbs, w.C_IF, w.base, w.omega, w.base_vel, air.length, air.limb_u, w.mid,
                  w.mid_vel, w.lever)
        if sample_wind:
            wind_at(limbs, w.mid, air.wind, w.wind_at_mid)
        drag_loads(limbs, w.wind_at_mid, w.mid_vel, w.lever, air.length, air.radius,
                   air.leaf_area, air.air_density, air.drag_coefficient,
                   air.leaf_drag_coefficient, air.vogel_exponent, terms.drag_h > 0.0,
                   w.aero_force, w.aero_torque, w.drag_jacobian)
        for k in range(limbs.shape[0]):
            i = limbs[k]
            for r in range(3):
                force[i, r] += w.aero_force[i, r]
                torque[i, r] += w.aero_torque[i, r]
    joint_torques(limbs, q, v, model.spring_q, model.stiffness, model.damping, system.k_scale,
                  system.c_scale, implicit_kv, w.theta, w.tau)
    limb_inertias(limbs, model, w, force, torque, terms.drag_h, terms.about_reference, rate_ref,
                  position_ref)


@kernel(allocates=False)
def _subtree_stages(limbs, model, w, terms, rate_ref, position_ref):
    """The second sweep over ``limbs`` (int array, breadth-first, from the last; their
    children done): the subtree sums, the joints' implicit blocks, pass 2 of the recursion."""
    subtree_sums(limbs, model, w, terms.gravity_h2 > 0.0, terms.drag_h > 0.0)
    implicit_joint_blocks(limbs, model, w, terms, rate_ref, position_ref)
    articulated_inward(limbs, model, w)


# The parallel loops are not cached on their own (cache=False): a process that compiled a
# stepper around the cached copy of one another process had compiled crashed at its first step
# (generalized-α and rk4 after the warm-up's implicit pair); compiled with each stepper, they
# are cached inside it.
@kernel(parallel=True, cache=False)
def _limb_stages_in_groups(limbs, starts, a):
    """`_limb_stages` over each group of a partition (group g: limbs[starts[g]:starts[g + 1]]),
    the groups in parallel; a: `StageArguments`."""
    for g in prange(starts.shape[0] - 1):
        _limb_stages(limbs[starts[g]:starts[g + 1]], a.system, a.q, a.v, a.implicit_kv,
                     a.terms, a.pull_rate_h, a.pull_position_h2, a.rate_ref, a.position_ref,
                     a.sample_wind, a.copy_loads, a.force, a.torque)


@kernel(parallel=True, cache=False)
def _subtree_stages_in_groups(limbs, starts, a):
    """`_subtree_stages` over each group of a partition, the groups in parallel."""
    for g in prange(starts.shape[0] - 1):
        _subtree_stages(limbs[starts[g]:starts[g + 1]], a.system.model, a.system.work, a.terms,
                        a.rate_ref, a.position_ref)


@kernel(parallel=True, cache=False)
def _outward_in_groups(limbs, starts, a):
    """Pass 3 (`articulated.articulated_outward`) over each group of a partition, in
    parallel."""
    for g in prange(starts.shape[0] - 1):
        articulated_outward(limbs[starts[g]:starts[g + 1]], a.system.model, a.system.work)


def _dispatcher(table: dict, name: str, doc: str):
    """A function ``name(system, *args)`` that calls ``table[type(system)](system, *args)``,
    and in compiled code an overload chosen by the record's type (numba's
    `numba.extending.overload`): the model's kernel itself, compiled in the dispatcher's
    place, so that the call costs what a direct call costs. (A wrapper that called the kernel
    would be one more call level, and numba increments and decrements the reference count of
    every array of a record at each level a record is handed down, ~60 of them.)"""

    def dispatch(system, *args):
        return table[type(system)](system, *args)

    dispatch.__name__ = dispatch.__qualname__ = name
    dispatch.__doc__ = doc

    # Not cached on its own (cache=False): numba makes this dispatcher while typing a caller,
    # after `kernel` has restored numba's cache folder, so it would be written beside this
    # file inside the installed package (docs/kernel_cache.md). The cached kernels that call
    # it keep its machine code. strict=False: the kernel names its own parameters, not *args.
    @overload(dispatch, jit_options={**KERNEL_OPTIONS, "cache": False}, strict=False)
    def _dispatch(system, *args):
        dynamics = table.get(getattr(system, "instance_class", None))
        return None if dynamics is None else dynamics.py_func

    return dispatch


_DYNAMICS = {ArticulatedSystem: articulated_dynamics, SeedSystem: seed_dynamics}
# Models whose dynamics can take a Newton iteration about reference accelerations (the
# generalized-α step's): the seed model cannot.
_DYNAMICS_ABOUT = {ArticulatedSystem: articulated_dynamics_about}


def register(record_type, dynamics, about=None) -> None:
    """Make `accelerations` of a ``record_type`` record call ``dynamics(system, q, v,
    implicit_h, drag_h)`` (a kernel), and `accelerations_about` call ``about(system, q, v,
    rate_h, position_h2, rate_ref, position_ref, sample_wind)`` if given; for models defined
    outside this module."""
    _DYNAMICS[record_type] = dynamics
    if about is not None:
        _DYNAMICS_ABOUT[record_type] = about


def supports_newton_about(record_type) -> bool:
    """Whether a model's records have `accelerations_about` (generalized-α needs it)."""
    return record_type in _DYNAMICS_ABOUT


accelerations = _dispatcher(
    _DYNAMICS, "accelerations",
    """accelerations(system, q, v, implicit_h, drag_h): the rates' derivative (N, 3) of state
    (q, v) of ``system``'s model, the θ-method's implicit terms with implicit_h = θh and
    drag_h (both 0: explicit).""")

accelerations_about = _dispatcher(
    _DYNAMICS_ABOUT, "accelerations_about",
    """accelerations_about(system, q, v, rate_h, position_h2, rate_ref, position_ref,
    sample_wind): the rates' derivative (N, 3) as one Newton iteration at state (q, v), the
    rates moving by rate_h (x − rate_ref) and the rotations by position_h2 (x − position_ref),
    the wind sampled anew or the last call's (`articulated_dynamics_about`).""")


def advance_clock(system, h):
    """After a step of h seconds: the wind's state of a system with air, else nothing (in
    compiled code an overload chosen by the record's type)."""
    if "air" in type(system)._fields:
        advance_wind(system.air.wind.state, h)


@overload(advance_clock, jit_options=dict(cache=False, nogil=True))
def _advance_clock(system, h):
    if "air" in getattr(system, "fields", ()):
        def advance(system, h):
            advance_wind(system.air.wind.state, h)
    else:
        def advance(system, h):
            pass
    return advance
