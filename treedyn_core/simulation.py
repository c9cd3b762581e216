"""The one stepping API used by `treedyn run`, the benchmarks and the app.

A `Simulation` is a facade over three parts: the static `static_model.Model` built from the
preset (``static_model``: the tree's arrays, gravity, inertias), the changing `State`
(``state``: joint quaternions ``q``, joint rates ``v``, breadth-first order, the time and
the wind's state) and the settings that may change between any two steps (stiffness and
damping scales, integrator, time step, external loads, the wind's targets). `step(n)` runs
n steps of an `integrators` stepper over the model's `dynamics` in compiled code;
`snapshot()` returns a cheap read-only copy for display.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from .dynamics.aero import Air, drag_loads, midpoints
from .dynamics.articulated import ArticulatedModel, Workspace, forward_kinematics, limb_tips
from .dynamics.divergence import CHECK_INTERVAL, DivergenceGuard, TreeReach
from .dynamics.easing import UPDATE_INTERVAL, SliderEases
from .dynamics.equilibrium import start_of
from .dynamics.joints import joint_torques
from .dynamics.models import ArticulatedDynamics, ModelDynamics, SeedModelDynamics
from .dynamics.partition import PARALLEL_STEPS, partition
from .dynamics.seed_model import SeedSystem
from .dynamics.stability import RK4_STABILITY, SAFETY, fastest_rate
from .dynamics.static_model import Model
from .dynamics.systems import ArticulatedSystem, Pull, supports_newton_about
from .dynamics.wind import DIRECTION, INTENSITY, SPEED, TARGET, WindField
from .errors import SimulationDiverged, TreedynError
from .integrators.reference import DEFAULT_ATOL, DEFAULT_RTOL, dop853_steps
from .integrators.registry import INTEGRATORS, STEPPERS
from .integrators.steppers import (GALPHA_CONTROL, GalphaState, RK4Stages, galpha_coefficients,
                                   galpha_steps, rk4_steps, theta_steps)
from .model.canopy import stand_frontal_area_index
from .model.schema import MAX_PROFILE_SPEED
from .numerics import so3
from .numerics.compile_notice import announce_if_slow

MODELS = ("articulated", "seed")


@dataclass(frozen=True)
class Snapshot:
    """A read-only copy of what the display needs, breadth-first limb order.

    time : s;  base, tip : (N, 3) m inertial;  kinetic, potential, energy : J
    (potential = gravity + spring).
    """

    time: float
    base: np.ndarray
    tip: np.ndarray
    kinetic: float
    potential: float

    @property
    def energy(self) -> float:
        return self.kinetic + self.potential


@dataclass
class State:
    """Everything of a simulation that changes as it steps (the rest is its static model and
    settings): joint quaternions q (N, 4) child → parent and rates v (N, 3) rad/s in the
    child's axes, breadth-first order; the time, s; the wind field's state (`wind.STATE_SIZE`,),
    the same array as `WindField.state`. The arrays are updated in place."""

    q: np.ndarray
    v: np.ndarray
    time: float
    wind: np.ndarray

    def copy(self) -> "State":
        return State(self.q.copy(), self.v.copy(), self.time, self.wind.copy())

    def assign(self, other: "State") -> None:
        """Take other's values into this state's arrays (they stay the same objects)."""
        self.q[:], self.v[:], self.wind[:] = other.q, other.v, other.wind
        self.time = other.time


def _loads(array: np.ndarray) -> np.ndarray:
    """An external load array as the kernels type it: (N, 3) C-contiguous float64."""
    return np.ascontiguousarray(array, dtype=np.float64)


def _part(owner: str, name: str, doc: str) -> property:
    """A read-only property of `Simulation` that reads ``self.<owner>.<name>``."""
    return property(lambda self: getattr(getattr(self, owner), name), doc=doc)


class Simulation:
    """A tree in motion: `Simulation(preset)` with a `preset.Preset` (or anything with `.data`
    and `.error`), or `Simulation.from_data(data)` with a validated preset dict."""

    def __init__(self, preset, *, integrator: str | None = None, model: str | None = None,
                 dt: float | None = None, rtol: float | None = None, atol: float | None = None,
                 threads: int | None = None):
        self.data = preset.data
        self.rtol = DEFAULT_RTOL if rtol is None else float(rtol)   # dop853 tolerances
        self.atol = DEFAULT_ATOL if atol is None else float(atol)
        sim = self.data["simulation"]
        # the static model (`Model`); tree, gravity, inertia_base and prestress read it
        self.static_model = Model.from_data(self.data, getattr(preset, "error", None))
        self.theta_method = float(sim["implicit_theta"])
        self.rho_inf = float(sim["rho_inf"])   # generalized-α's spectral radius at infinity
        self.galpha_control = GALPHA_CONTROL   # its Newton iterations (`GalphaControl`)
        self.stiffness_scale = float(self.data["tuning"]["stiffness_scale"])
        self.damping_scale = float(self.data["tuning"]["damping_scale"])
        self.dt = float(dt if dt is not None else sim["dt"])
        self.integrator = integrator or sim["integrator"]
        self.model = model or sim["model"]
        self.start = start_of(self.data)   # "rest" | "mean_wind" (docs/design.md §6.7)
        self._check_choice("integrator", self.integrator, INTEGRATORS)
        self._check_choice("model", self.model, MODELS)
        self._check_model_takes(self.integrator)

        tree = self.tree
        n = tree.n
        self.spring_C_rel = tree.spring_C_rel.copy()
        self.ext_force = np.zeros((n, 3))
        self.ext_torque = np.zeros((n, 3))
        self.pull = Pull.none()   # a point pulled by a spring-damper (`set_pull`)
        self._reach: TreeReach | None = None
        self.wind = WindField(self.data["wind"], stand_frontal_area_index(
            tree, self.data["wind"], getattr(preset, "error", None)))
        self._check_profile(self.wind.state[SPEED + TARGET])
        self.state = State(np.zeros((n, 4)), np.zeros((n, 3)), 0.0, self.wind.state)
        self._workspace = Workspace.zeros(n)
        # the limbs as the step's threads share them (`partition`; threads None: the setting,
        # `partition.thread_count`), and every limb in order
        self.partition = partition(tree.parent, threads)
        self._limbs = np.arange(n, dtype=np.int64)
        self._stale = False
        self._rk4_stages = RK4Stages.zeros(n)
        self._galpha_state = GalphaState.zeros(n)
        self._warm: set[str] = set()
        self.eases = SliderEases(tree)   # slider changes in progress (`easing`)
        self._entries: dict = {}   # compiled stepper → its entry point for our records (`_call`)
        # the model's part (`dynamics.models`): its steppers' state, balance and outputs
        self.dynamics: ModelDynamics = (SeedModelDynamics(tree, self.inertia_base)
                                        if self.model == "seed" else ArticulatedDynamics())
        self._guard: DivergenceGuard | None = None   # the bounds of the loads in force
        self._checked_at = 0.0   # s, simulated time of the last check of the bounds
        # Whether the steps compute aerodynamic loads: the model's drag (no drag is "wind off"
        # in the sense of docs/design.md §3); the benchmarks switch it off to time the rest.
        self.aerodynamics = self.static_model.has_drag
        with announce_if_slow():
            self.reset()
            self.energies()

    @classmethod
    def from_data(cls, data: dict, **kwargs) -> "Simulation":
        """A simulation of a validated preset dict (no file behind it)."""

        class _Source:
            pass

        source = _Source()
        source.data = data
        return cls(source, **kwargs)

    @staticmethod
    def _check_choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
        if value not in allowed:
            raise TreedynError(f"{what} '{value}' is not available (choose from "
                               f"{', '.join(allowed)})")

    def _check_model_takes(self, integrator: str) -> None:
        system = SeedSystem if self.model == "seed" else ArticulatedSystem
        if integrator == "galpha" and not supports_newton_about(system):
            raise TreedynError(f"integrator galpha is not available with model {self.model} "
                               "(choose model articulated, or integrator implicit)")

    # the static model's parts (`static_model`)
    tree = _part("static_model", "tree", "The limbs' static arrays (`tree.Tree`).")
    gravity = _part("static_model", "gravity", "(3,) m/s², inertial.")
    inertia_base = _part("static_model", "inertia_base",
                         "(N, 3, 3) kg m², each limb's inertia about its base, limb axes.")
    prestress = _part("static_model", "prestress", "The preset asks for prestressed springs.")

    def preset_data(self) -> dict:
        """A complete preset dict that loads to this simulation: the preset's data with the
        settings in force, and — when the stiffness scale moved since the prestress was
        computed — the spring rest rotations in force baked in as explicit limbs with
        ``prestress: false`` (docs/design.md §6: a saved preset loads to the same simulation)."""
        from .dynamics.expand import expanded_data

        data = copy.deepcopy(self.data)
        data["tuning"].update(stiffness_scale=self.stiffness_scale,
                              damping_scale=self.damping_scale)
        data["wind"].update(speed=self.wind.state[SPEED + TARGET],
                            direction_deg=self.wind.state[DIRECTION + TARGET] % 360.0,
                            turbulence_intensity=self.wind.state[INTENSITY + TARGET])
        data["simulation"].update(model=self.model, dt=self.dt, start=self.start)
        if self.prestressed and self.prestress_stiffness_scale != self.stiffness_scale:
            data = expanded_data(data, self.tree, self.spring_C_rel)
        return data

    @property
    def spring_C_rel(self) -> np.ndarray:
        """(N, 3, 3) the springs' rest orientations, child → parent (prestressed ones when
        prestress is on). Assigning it also sets `spring_q`, the same rotations as (N, 4)
        quaternions, which the step uses; do not modify it in place."""
        return self._spring_C_rel

    @spring_C_rel.setter
    def spring_C_rel(self, value: np.ndarray) -> None:
        self._spring_C_rel = np.ascontiguousarray(value, dtype=np.float64)
        self.spring_q = so3.quats_from_matrices(self._spring_C_rel)
        self.spring_C_in_force = self._spring_C_rel

    # spring_C_in_force: (N, 3, 3) the rest orientations the step uses now, `spring_q` as
    # matrices: `spring_C_rel` once any stiffness ease is done, between the old and the new
    # prestress while one is under way (`_apply_eases`). The seed model reads these.

    @property
    def prestressed(self) -> bool:
        """The spring rest rotations are computed (prestress on, none given in the preset)."""
        return self.prestress and not self.tree.spring_given.any()

    # -- the records handed to the compiled kernels (`dynamics`) ------------------------------

    def articulated_model(self) -> ArticulatedModel:
        """The articulated model's constant arrays (the springs' rest rotations in force)."""
        t = self.tree
        return ArticulatedModel(t.parent, t.base_offset, t.mass, t.com_offset,
                                self.inertia_base, t.stiffness, t.damping, self.spring_q,
                                self.gravity)

    def air(self) -> Air:
        """The aerodynamic inputs of the step kernels (aerodynamics off: wind and drag off)."""
        t, wind = self.tree, self.data["wind"]
        return Air(bool(self.aerodynamics), t.length, t.radius, t.leaf_area, t.u,
                   float(wind["air_density"]), float(wind["drag_coefficient"]),
                   float(wind["leaf_drag_coefficient"]), float(wind["vogel_exponent"]),
                   self.wind.inputs(t.n))

    def system(self, air: Air | None = None) -> ArticulatedSystem:
        """The articulated model's record for the steppers (`systems.accelerations`), with
        the loads and scales in force; its work arrays are `workspace`'s."""
        return ArticulatedSystem(self.articulated_model(), self._workspace,
                                 self.air() if air is None else air, _loads(self.ext_force),
                                 _loads(self.ext_torque), float(self.stiffness_scale),
                                 float(self.damping_in_force), self.pull, self.partition)

    # -- the state (`State`): joint quaternions and rates, time, the wind's state --------------

    q = _part("state", "q", "(N, 4) joint quaternions, child → parent, breadth-first order "
                            "(change it in place).")
    v = _part("state", "v", "(N, 3) rad/s, joint rates in the child's axes (change it in place).")

    @property
    def time(self) -> float:
        """s, simulated time since the last reset (`state.time`)."""
        return self.state.time

    @time.setter
    def time(self, value: float) -> None:
        self.state.time = float(value)

    # -- state ---------------------------------------------------------------------------------

    def reset(self) -> None:
        """Back to t = 0: the rest pose (prestressed with the stiffness scale now in force) —
        with ``start`` "mean_wind", the model's static equilibrium under the mean wind in force
        (`balance`) — plus the preset's initial_state; external loads cleared. The settings in
        force (wind speed, direction and turbulence, stiffness and damping scales, integrator,
        dt) are kept: a reset restarts the motion, it does not undo the sliders."""
        self.eases.clear()
        self._prestress(self.stiffness_scale)
        self.time = 0.0
        self.wind.restart()
        R = self.tree.rest_C_rel.copy()
        self.start_notice = None
        if self.start == "mean_wind":
            R = self._start_balance(R)
        self.v[:] = 0.0
        for i, rotation, rate in self.static_model.initial_state:
            R[i] = R[i] @ so3.exp(rotation)
            self.v[i] = rate
        self.q[:] = so3.quats_from_matrices(R)
        self.ext_force[:] = 0.0
        self.ext_torque[:] = 0.0
        self.pull = Pull.none()
        self._guard = None
        self._kinematics()

    def _prestress(self, stiffness_scale: float) -> None:
        """The springs' rest rotations: the model's own prestress for `stiffness_scale` (each
        model's rest pose its balance under gravity), or the preset's."""
        if self.prestressed:
            self.spring_C_rel = self.dynamics.prestressed_spring_rotations(
                self.tree, self.gravity, stiffness_scale)
            self.prestress_stiffness_scale = stiffness_scale
        else:
            self.spring_C_rel = self.tree.spring_C_rel.copy()

    def balance(self) -> np.ndarray:
        """(N, 3, 3) joint rotations, child → parent: the static equilibrium of the model in
        force under gravity and the mean wind in force (turbulence off), with the springs and
        stiffness scale in force — the articulated model's (`equilibrium`) or the seed
        model's (`seed_equilibrium`). Raises TreedynError if none is found."""
        return self.dynamics.balance(self)

    def _start_balance(self, rest: np.ndarray) -> np.ndarray:
        """`balance`, or — when none is found and the start was not asked for by name —
        `rest`, with `start_notice` saying so."""
        try:
            return self.balance()
        except TreedynError as exc:
            if self.data["simulation"].get("start") is not None:
                raise   # asked for by name: an error
            # The default for a prestressed tree: a wind too strong for any balance (a storm
            # on a tall tree) starts from rest, as before the default, and says so.
            self.start_notice = f"{str(exc).split(' (')[0]}; the run starts from rest"
            return rest

    def step(self, n: int = 1) -> None:
        """Advance n steps of dt with the integrator in force; raises SimulationDiverged if a
        joint rate becomes non-finite (state left at the last finite step) or the state leaves
        the physical bounds of the loads in force (`divergence.DivergenceGuard`, checked at
        the end of the call when `divergence.CHECK_INTERVAL` of simulated time has passed
        since the last check). While a stiffness or damping change eases in (`easing`), its
        values are updated every `UPDATE_INTERVAL`."""
        if self._guard is None:   # bounds for the loads in force, from the state before
            self._guard = DivergenceGuard(self)
        if not self.time >= self._checked_at:   # a reset, a restored state
            self._checked_at = self.time
        guard = self._guard
        self._step_eased(n)
        if self.time - self._checked_at >= CHECK_INTERVAL:
            self._checked_at = self.time
            guard.check()

    @property
    def reach(self) -> TreeReach:
        """How far each limb can reach (`divergence.TreeReach`), made on first use."""
        if self._reach is None:
            self._reach = TreeReach(self.tree)
        return self._reach

    def loads_changed(self) -> None:
        """Say that the loads changed (external forces set in place, a model switch): the
        bounds of the divergence check are made anew before the next step."""
        self._guard = None

    def _step_eased(self, n: int) -> None:
        while n > 0 and self._apply_eases():
            chunk = min(n, max(1, int(round(UPDATE_INTERVAL / self.dt))))
            self._step_warm(chunk)
            n -= chunk
            self._apply_eases()    # the outputs read the values of the time reached
        if n > 0:
            self._step_warm(n)

    def _step_warm(self, n: int) -> None:
        if self.integrator not in self._warm:
            with announce_if_slow():
                self._step(n)
            self._warm.add(self.integrator)
        else:
            self._step(n)

    def warm_up(self) -> None:
        """Compile (or load) the step kernels of the integrator in force without changing the
        simulation: one step is taken and undone."""
        if self.integrator in self._warm:
            return
        saved = self.state.copy()
        try:
            self.step(1)
        finally:
            self.state.assign(saved)
            self.wind.resample()
            self._guard = None
            self._kinematics()

    def _step(self, n: int) -> None:
        # The compiled loops stop before a non-finite update (the state stays the last finite
        # one); the seed model's and dop853's steppers are given a copy to fall back on.
        stepper = STEPPERS[self.integrator]
        in_place = self.dynamics.steps_in_place and stepper.compiled
        before = None if in_place else (self.q.copy(), self.v.copy())
        if not stepper.compiled:
            done, bad = dop853_steps(self, n)
        else:
            system, q, v = self.dynamics.stepped_state(self)
            done, bad = self._COMPILED_STEPS[self.integrator](self, system, n, q, v)
            self.dynamics.store(self)
        self.time += done * self.dt
        if bad >= 0:
            if done == 0 and before is not None:
                self.q[:], self.v[:] = before
            self._kinematics()
            raise SimulationDiverged(
                f"the simulation diverged at t = {self.time:.4f} s: limb "
                f"'{self.tree.names[bad]}' got a non-finite angular rate (dt = {self.dt:g} s, "
                f"integrator {self.integrator}); reset, or lower dt / stiffness")
        self._stale = True  # outputs recompute the kinematics of the new state when read

    def _theta(self, system, n: int, q: np.ndarray, v: np.ndarray) -> tuple[int, int]:
        return self._call(theta_steps, system, n, float(self.dt), float(self.theta_method), q, v)

    def _galpha(self, system, n: int, q: np.ndarray, v: np.ndarray) -> tuple[int, int]:
        return self._call(galpha_steps, system, n, float(self.dt),
                          galpha_coefficients(self.rho_inf), self.galpha_control, q, v,
                          self._galpha_state)

    def _rk4(self, system, n: int, q: np.ndarray, v: np.ndarray) -> tuple[int, int]:
        return self._call(rk4_steps, system, n, float(self.dt), q, v, self._rk4_stages)

    # The compiled steppers of `integrators.registry` by name: (steps completed, first limb
    # with a non-finite rate or −1).
    _COMPILED_STEPS = {"implicit": _theta, "galpha": _galpha, "rk4": _rk4}

    @property
    def workspace(self) -> Workspace:
        """The articulated model's work arrays, with the kinematics (poses, velocities) of the
        current state; the other arrays hold what the last step's last stage computed."""
        if self._stale:
            self._kinematics()
        return self._workspace

    _work = workspace  # the name the tests of earlier versions read

    def _call(self, stepper, *args):
        """stepper(*args), after the first call through the compiled entry point directly.

        numba's dispatcher checks the types of the ~70 named arrays of a system record on
        every call (≈ 8 µs, 3 % of a 1,000-limb step); a simulation's records keep their
        types (its own C-contiguous float64 arrays, scalars made float or bool in `system`),
        so the machine code the first call finds serves every later one."""
        with PARALLEL_STEPS:
            entry = self._entries.get(stepper)
            if entry is not None:
                return entry(*args)
            result = stepper(*args)
            signature = tuple(stepper.typeof_pyval(arg) for arg in args)
            self._entries[stepper] = stepper.overloads[signature].entry_point
            return result

    def state_changed(self) -> None:
        """Say that q or v were changed in place: the outputs recompute the poses and
        velocities when next read, and the divergence check's bounds are made anew from the
        new state before the next step."""
        self._stale = True
        self._guard = None

    def _kinematics(self) -> None:
        self._stale = False
        t, w = self.tree, self._workspace
        forward_kinematics(self._limbs, t.parent, t.base_offset, self.q, self.v, w.C_IF, w.base,
                           w.omega, w.base_vel, w.omega_rel)

    def saved_state(self) -> tuple:
        """Copies of what changes as the simulation runs (joints, rates, time, wind, the
        springs' rest rotations), for `restore_state` on a simulation of the same preset: an
        export goes on from the live motion."""
        return (self.q.copy(), self.v.copy(), self.time, self.wind.state.copy(),
                self.spring_C_rel.copy())

    def restore_state(self, state: tuple) -> None:
        """Take up a `saved_state`."""
        q, v, self.time, wind, self.spring_C_rel = state
        self.eases.clear()
        self.q[:], self.v[:], self.wind.state[:] = q, v, wind
        self.wind.resample()
        self._guard = None
        self._kinematics()

    def take_over(self, other: "Simulation") -> None:
        """Go on with the motion of `other`, a simulation of the same tree (the app's switch
        between the models): its time, wind, rates, scales and the eases under way, so the run
        continues instead of restarting at t = 0. When the models differ, a prestressed tree
        takes this model's own prestress (for the stiffness scale `other` was prestressed
        with), and a tree that starts in balance (``start`` "mean_wind") sways about this
        model's balance: every joint keeps its rotation away from `other`'s balance in the
        wind in force, R = B_self B_otherᵀ R_other per joint (the two models' balances
        differ: from `other`'s pose this model would lurch). When either balance is not
        found, the joints are taken as they are."""
        self.restore_state(other.saved_state())
        self.stiffness_scale, self.damping_scale = other.stiffness_scale, other.damping_scale
        if hasattr(other, "prestress_stiffness_scale"):
            self.prestress_stiffness_scale = other.prestress_stiffness_scale
        if other.model != self.model:
            if self.prestressed:
                self._prestress(other.prestress_stiffness_scale)
            if self.start == "mean_wind":
                self._sway_about_balance(other)
        self.eases.stiffness, self.eases.damping = other.eases_under_way()
        self._apply_eases()

    def _sway_about_balance(self, other: "Simulation") -> None:
        """The joints of `other`'s motion moved from its balance to this model's (`take_over`)."""
        try:
            ours, theirs = self.balance(), other.balance()
        except TreedynError:
            return
        R = np.array([so3.quat_to_matrix(q) for q in other.q])   # once per switch
        self.q[:] = so3.quats_from_matrices(ours @ np.swapaxes(theirs, 1, 2) @ R)
        self._kinematics()

    def eases_under_way(self):
        """(stiffness ease, damping ease) in progress (`easing`), for `take_over`."""
        return self.eases.stiffness, self.eases.damping

    # -- settings that take effect at the next step ---------------------------------------------

    def set_stiffness_scale(self, value: float) -> None:
        """Multiply every joint stiffness by value (> 0); the prestress is not recomputed.
        The springs' torques carry on unchanged and the tree eases to the new stiffness over
        a few of its sway periods (`easing.StiffnessEase`, docs/design.md §2.1): the change
        injects no energy, and the tree follows the ease quasi-statically."""
        if not value > 0:
            raise TreedynError(f"stiffness scale must be > 0, got {value}")
        value = float(value)
        if value == self.stiffness_scale:
            return
        self._apply_eases()
        theta = np.empty((self.tree.n, 3))
        self._spring_errors(theta)
        self.eases.ease_stiffness(theta, self.stiffness_scale, value, self.time)
        self.stiffness_scale = value
        self._guard = None
        self._apply_eases()

    def set_damping_scale(self, value: float) -> None:
        """Multiply every joint damping by value (≥ 0), eased in over
        `easing.DAMPING_EASE_TIME` of simulated time."""
        if not value >= 0:
            raise TreedynError(f"damping scale must be ≥ 0, got {value}")
        if float(value) != self.damping_scale:
            self.eases.ease_damping(value, self.time, self.damping_scale)
            self._guard = None
        self.damping_scale = float(value)

    @property
    def damping_in_force(self) -> float:
        """The damping scale the step uses now (during an ease, between the old and the set
        `damping_scale`)."""
        return self.eases.damping_scale(self.damping_scale, self.time)

    def end_eases(self) -> None:
        """Put the stiffness and damping scales set fully in force now, as if set long ago
        (the springs' own rest rotations, the set damping): for scripts and tests that
        change a scale at t = 0, before the motion starts."""
        self.eases.clear()
        self.spring_C_rel = self._spring_C_rel

    @property
    def eased_by(self) -> float:
        """Simulated time, s, by which the stiffness and damping changes under way are fully in
        force (the current time when none is)."""
        return self.eases.end_time(self.time)

    def _apply_eases(self) -> bool:
        """Put the eased springs' rest rotations in force for the current time; ends the eases
        that are done. Returns whether one is still under way."""
        rest = self.eases.advance(self._spring_C_rel, self.time)
        if rest is not None:
            self.spring_q = so3.quats_from_matrices(rest)
            self.spring_C_in_force = rest
        return self.eases.under_way

    def _spring_errors(self, theta: np.ndarray) -> None:
        """The springs' error rotation vectors (N, 3) rad, child axes, into theta (in force)."""
        t = self.tree
        joint_torques(self._limbs, self.q, self.v, self.spring_q, t.stiffness, t.damping,
                      self.stiffness_scale, 0.0, 0.0, theta, np.empty((t.n, 3)))

    def set_dt(self, dt: float) -> None:
        """Time step, s (> 0), from the next step on."""
        if not (dt > 0 and np.isfinite(dt)):
            raise TreedynError(f"dt must be a finite number > 0 s, got {dt}")
        self.dt = float(dt)

    def rk4_stable_dt(self) -> float:
        """The largest rk4 step, s, below the stability bound of `stability.fastest_rate` for
        the stiffness and damping scales in force (a safe, somewhat cautious estimate)."""
        rate = fastest_rate(self.tree, self.inertia_base, self.stiffness_scale,
                            self.damping_scale)
        return SAFETY * RK4_STABILITY / rate if rate > 0 else float("inf")

    def set_integrator(self, name: str) -> None:
        self._check_choice("integrator", name, INTEGRATORS)
        self._check_model_takes(name)
        self.integrator = name

    def set_wind_speed(self, speed: float) -> None:
        """Mean wind speed at the reference height, m/s (≥ 0), ramped over 1 s."""
        self._check_profile(speed)
        self.wind.set_speed(speed)
        self._guard = None

    def set_wind_direction(self, degrees: float) -> None:
        """Azimuth the wind blows toward, deg (0 = +x, 90 = +y), ramped over 1 s."""
        self.wind.set_direction(degrees)
        self._guard = None

    def set_turbulence_intensity(self, intensity: float) -> None:
        """Turbulence intensity σ_u / U, 0..1, ramped over 1 s."""
        self.wind.set_intensity(intensity)
        self._guard = None

    def _check_profile(self, speed: float) -> None:
        """Refuse a mean wind above `schema.MAX_PROFILE_SPEED` at the highest point the tree
        can reach (its limbs straightened up), whatever the profile's parameters."""
        field = self.wind
        top = float(self.reach.top.max())
        with np.errstate(all="ignore"):
            mean = float(field.mean_speed(top, speed))
        if not mean <= MAX_PROFILE_SPEED:
            raise TreedynError(
                f"wind.speed {float(speed):g} m/s at wind.reference_height "
                f"{field.reference_height:g} m gives a mean wind of {mean:.4g} m/s at "
                f"{top:.3g} m, the highest point the tree can reach, above the "
                f"{MAX_PROFILE_SPEED:g} m/s allowed anywhere on a tree: lower wind.speed or "
                f"wind.profile_exponent, or raise wind.reference_height")

    @property
    def wind_speed(self) -> float:
        """The wind speed in force (during a ramp, its current value), m/s."""
        return self.wind.speed

    @property
    def wind_direction_deg(self) -> float:
        return self.wind.direction_deg

    @property
    def turbulence_intensity(self) -> float:
        return self.wind.intensity

    def set_pull(self, limb: int, offset: np.ndarray, target: np.ndarray, stiffness: float,
                 damping: float) -> None:
        """Pull the point base + C_IF offset (offset (3,) m, limb axes) of limb `limb` toward
        `target` (3,) m, inertial, with a spring `stiffness` N/m and a damper `damping` N s/m
        on its velocity, held until changed; limb −1 lets go. The articulated model makes it
        implicit in the θ-method (`systems.Pull`); the seed model does not take it."""
        if not self.dynamics.takes_pull and limb >= 0:
            raise TreedynError("the seed model takes external loads only (set_external_loads)")
        self.pull = Pull(int(limb), np.array(offset, dtype=np.float64),
                         np.array(target, dtype=np.float64), float(stiffness), float(damping))
        self._guard = None

    def set_external_loads(self, force: np.ndarray, torque: np.ndarray | None = None) -> None:
        """External force (N, 3) N at each limb's base and torque (N, 3) N m, inertial axes,
        breadth-first order; held until changed."""
        self.ext_force[:] = force
        self.ext_torque[:] = 0.0 if torque is None else torque
        self._guard = None

    # -- outputs ---------------------------------------------------------------------------------

    @property
    def C_IF(self) -> np.ndarray:
        """(N, 3, 3) limb → inertial, breadth-first order (a copy)."""
        return self._work.C_IF.copy()

    @property
    def omega(self) -> np.ndarray:
        """(N, 3) rad/s, angular velocity of each limb in its own axes, breadth-first order."""
        return np.einsum("nji,nj->ni", self._work.C_IF, self._work.omega)

    @property
    def base(self) -> np.ndarray:
        """(N, 3) m, inertial base points."""
        return self._work.base.copy()

    @property
    def tip(self) -> np.ndarray:
        """(N, 3) m, inertial tips: base + L C_IF u."""
        t, w = self.tree, self._work
        tip = np.empty((t.n, 3))
        limb_tips(w.C_IF, w.base, t.length, t.u, tip)
        return tip

    def energies(self) -> tuple[float, float, float]:
        """(kinetic, gravity potential, spring potential), J (seed model: the energies it
        conserves, `seed_model`)."""
        return self.dynamics.energies(self)

    def aerodynamic_forces(self) -> np.ndarray:
        """(N, 3) N: drag on each limb (at its midpoint) in the current state, inertial axes."""
        t, w = self.tree, self._work
        if not self.aerodynamics:
            return np.zeros((t.n, 3))
        air = self.air()
        midpoints(self._limbs, w.C_IF, w.base, w.omega, w.base_vel, t.length, t.u, w.mid,
                  w.mid_vel, w.lever)
        self.wind.velocity_at(w.mid, w.wind_at_mid)
        force, torque = np.empty((t.n, 3)), np.empty((t.n, 3))
        drag_loads(self._limbs, w.wind_at_mid, w.mid_vel, w.lever, t.length, t.radius, t.leaf_area,
                   air.air_density, air.drag_coefficient, air.leaf_drag_coefficient,
                   air.vogel_exponent, False, force, torque, w.drag_jacobian)
        return force

    def root_moment(self) -> np.ndarray:
        """(3,) N m, inertial axes: the moment the root joint (spring + damper) exerts on the
        tree, the bending moment at the base of the trunk."""
        return self.dynamics.root_moment(self)

    def crown_top(self) -> int:
        """Index of the limb whose tip is highest at rest: the top of the crown."""
        return int(np.argmax(self.tree.rest_tip[:, 2]))

    def energy(self) -> float:
        """Total mechanical energy T + V_gravity + V_spring, J."""
        return sum(self.energies())

    @property
    def energy_scale(self) -> float:
        """m_total·|g|·H (docs/design.md §8), J; the height H is the rest height of the tree."""
        return float(self.tree.mass.sum() * np.linalg.norm(self.gravity) * self.tree.height)

    def snapshot(self) -> Snapshot:
        """A read-only copy of positions and energies for display."""
        kinetic, gravity, spring = self.energies()
        base, tip = self.base, self.tip
        base.setflags(write=False)
        tip.setflags(write=False)
        return Snapshot(self.time, base, tip, kinetic, gravity + spring)
