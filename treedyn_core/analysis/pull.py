"""The pulling test (`treedyn pull`): a horizontal rope force on the stem, its static
response, and the free sway after the rope is cut.

Statics. The tree is linearised about its static equilibrium under gravity, wind off
(`linearise`, the model behind `treedyn modes`): K ε = Q, with Q the generalized force of a
horizontal force F at the rope point p on the stem, Q_j = C_IFjᵀ((p − b_j) × F) for the
joints j below p (b_j a joint's base, C_IFj its limb → inertial axes). Reported:

- ``deflection_m``: the rope point's displacement along the pull, Σ_j (C_IFj ε_j) × (p − b_j);
- ``base_inclination_deg``: the tilt of the root plate, what an inclinometer at the stem base
  reads and what the 0.25° limit of pulling tests refers to: where the root joint is the root
  plate in series with the stem's lowest half limb (a generated tree with ``root_stiffness``
  and a tapered stem, or a scan on its species' or its own root plate) its rotation times
  k_joint/k_root, the plate's share, so that it does not depend on the limb's length;
  otherwise the lowest stem limb's tilt (the joint is the plate, or the stem is anchored
  rigidly);
- ``base_moment_Nm``: the bending moment the root joint carries, |K_spring,0 ε_0|, the rope's
  moment F·h plus the weight's moment of the deflected tree.

Without a force, the rope pulls with the force that tilts the root plate by 0.25°, the usual
limit of non-destructive pulling tests (Wessolly & Erb 1998; Detter & Rust 2013, Brudi &
van Wassenaer 2002). A force is refused when the linear statics leave the range of a pulling
test: a stem bending stress above ``material.modulus_of_rupture`` (the stem would break) or a
base inclination above 2.5° (past the tipping curve's failure point, the tree would uproot).

Release. The tree starts from the pulled equilibrium (the joint rotations ε as the preset's
``initial_state``), at rest, in still air (wind speed 0; drag as the preset sets it), and is
simulated by the full nonlinear model. The rope point's displacement along the pull is fitted
as pull-and-release field studies do (e.g. Moore & Maguire 2004; Jonsson et al. 2007): the
frequency from the mean period between its first upward zero crossings, the damping ratio
from the logarithmic decrement δ of its peaks after the first cycle (which the higher modes
excited by the pull still disturb), ζ = δ / sqrt(4π² + δ²).

The release also records the tree's mechanical energy above its equilibrium,
E(t) − E(0) + F·d/2 (F·d/2 the rope's work, the strain energy of the linear statics), whose
decay rate gives the damping the whole tree dissipates, ζ_E = ln(E_a/E_b) / (2ω (t_b − t_a))
(`energy_damping_ratio`). It equals the decrement's ζ when one mode carries the sway; when
the stem's sway spreads over several modes of nearly its frequency (crown and branch sways),
the stem's amplitude falls faster than the energy: the branches take the energy over, the
"multiple resonance damping" of Spatz et al. (2007) and the branches' mass damping of James
et al. (2006), which the stem's decrement reads as damping (docs/validation.md, Damping).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from ..dynamics.linearise import Configuration, linearise
from ..errors import TreedynError
from ..model.generator import stem_second_moment
from ..numerics import so3

NON_DESTRUCTIVE_INCLINATION_DEG = 0.25
UPROOTING_INCLINATION_DEG = 2.5
# Release: cycles fitted, and simulated (a margin for the crossings and peaks).
FIT_CYCLES = 3
SIMULATED_CYCLES = FIT_CYCLES + 2.5
# Samples per period of the recorded displacement, and steps per period at least.
SAMPLES_PER_PERIOD = 200
# θ of the implicit θ-method during the release: its numerical damping, about (θ − ½)·ω·dt/2,
# stays below 1e-4 of critical at the steps used.
RELEASE_THETA = 0.51
# The smallest release: the rope point moved by this fraction of the tree's height. Positions
# are resolved to ~1e-16 of the height; below ~1e-12 the fitted damping is noise (NaN at a
# 1e-9 N pull on young_oak), and 1e-9 keeps six digits of it.
MIN_RELEASE_DEFLECTION = 1e-9
# Steps a release may take (its dt is the preset's, or 1/SAMPLES_PER_PERIOD of the sway
# period): a longer one is refused before it starts.
MAX_RELEASE_STEPS = 2_000_000


@dataclass
class PullResult:
    """A pulling test's outcome. Units in the names; frequency, damping and the release's
    record only with release."""

    height_m: float
    force_N: float
    direction_deg: float
    deflection_m: float
    base_inclination_deg: float
    base_moment_Nm: float
    max_stem_stress_Pa: float
    frequency_hz: float | None = None
    damping_ratio: float | None = None
    release: "ReleaseRecord | None" = None


@dataclass
class ReleaseRecord:
    """The free sway after the rope is cut, sampled every `dt` s from the release:
    ``displacement`` (n, 3) m, the rope point from its place at the equilibrium, inertial
    axes (along the pull it starts at the deflection); ``energy_J`` (n,) J, the mechanical
    energy above the equilibrium's (module docstring)."""

    dt: float
    displacement: np.ndarray
    energy_J: np.ndarray


@dataclass
class _Statics:
    """The unit-force response: joint rotations per newton (N, 3) rad/N and the rope point."""

    limb: int
    point: np.ndarray
    direction: np.ndarray
    epsilon: np.ndarray
    config: Configuration
    model: object


def _stem(sim, config) -> list[int]:
    """The stem's limbs from the root up (breadth-first indices)."""
    from .modes import trunk_limbs

    trunk = trunk_limbs(sim, config)
    return [i for i in range(sim.tree.n) if trunk[i]]


def _unit_response(sim, height: float, direction_deg: float) -> _Statics:
    model = linearise(sim)
    config = Configuration(sim, model.equilibrium.R_rel)
    tree = sim.tree
    stem = _stem(sim, config)
    tip = config.base + tree.length[:, None] * np.einsum("nij,nj->ni", config.C_IF, tree.u)
    ground = config.base[0, 2]
    top = tip[stem[-1], 2] - ground
    if not 0.0 < height <= top:
        raise TreedynError(f"pull: --height {height:g} m is not on the stem (the stem runs "
                           f"from 0 to {top:.3g} m above its base)")
    z = ground + height
    limb = next(i for i in stem if tip[i, 2] >= z - 1e-12)
    s = (z - config.base[limb, 2]) / (tip[limb, 2] - config.base[limb, 2])
    point = config.base[limb] + s * (tip[limb] - config.base[limb])
    angle = math.radians(direction_deg)
    direction = np.array([math.cos(angle), math.sin(angle), 0.0])

    Q = np.zeros((tree.n, 3))
    chain = [limb] + tree.ancestors(limb)
    for j in chain:
        Q[j] = config.C_IF[j].T @ np.cross(point - config.base[j], direction)
    factor = model.K.factor()
    if not factor.ok or factor.negative:
        raise TreedynError("pull: the tree is statically unstable under its own weight")
    epsilon = factor.solve(Q.reshape(-1)).reshape(tree.n, 3)
    return _Statics(limb, point, direction, epsilon, config, model)


def _deflection(statics: _Statics, epsilon: np.ndarray, tree) -> float:
    config = statics.config
    chain = [statics.limb] + tree.ancestors(statics.limb)
    w = np.einsum("nij,nj->ni", config.C_IF[chain], epsilon[chain])
    return float(np.cross(w, statics.point - config.base[chain]).sum(axis=0) @ statics.direction)


def _root_plate_share(sim) -> float:
    """The root plate's share of the root joint's rotation (module docstring): k_joint/k_root
    when the root joint is the plate in series with the stem's lowest half limb (a generated
    tree with ``root_stiffness``, or a scan with a species or ``root_stiffness``), else 1.
    Both springs scale alike with ``tuning.stiffness_scale``."""
    spec = sim.data["tree"]
    if spec.get("scan") is not None:
        from ..model.scan import scan_limbs

        root = scan_limbs(spec["scan"], sim.data).root_stiffness
    else:
        root = (spec.get("generator") or {}).get("root_stiffness")
    if root is None:
        return 1.0
    return float(sim.tree.stiffness[0, 0, 0]) / float(root)


def _base_inclination_deg(sim, statics: _Statics, epsilon: np.ndarray) -> float:
    w0 = statics.config.C_IF[0] @ epsilon[0]
    return math.degrees(math.hypot(w0[0], w0[1])) * _root_plate_share(sim)


def _stem_stress(sim, statics: _Statics, epsilon: np.ndarray) -> float:
    """Largest bending stress (Pa) in the stem's joints: M c / I with M = |K_spring ε| bending,
    c and I the limb's section as its joint's stiffness has it (`_stem_sections`)."""
    tree = sim.tree
    stem = _stem(sim, statics.config)
    moments = np.einsum("nij,nj->ni", statics.model.K_spring[stem], epsilon[stem])
    bending = np.linalg.norm(moments - np.einsum("ni,ni->n", moments, tree.u[stem])[:, None]
                             * tree.u[stem], axis=1)
    fibre, second_moment = _stem_sections(sim, np.asarray(stem))
    return float(np.max(bending * fibre / second_moment))


def _stem_sections(sim, stem: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(c, I) of the stem limbs `stem` (from the root up: a generated stem's k-th is its trunk
    limb k), for σ = M c / I at the outer fibre: I (m⁴) the section's second moment in the
    outer wood's modulus, c (m) its radius r. A generated tapered stem's sections as
    `generator.stem_joint_stiffness` has them: over a juvenile core, the outer wood carries
    more (`generator.stem_second_moment`); above a fork, n leaders of radius r/√n share the
    moment, each with a moment M/n on I/n², so σ = M (r √n) / I: c = r √n (the drawn stem,
    one of radius r, had the leaders √n times less stressed than they are)."""
    r = sim.tree.radius[stem]
    fibre, second_moment = r.copy(), np.pi * r ** 4 / 4.0
    gen = sim.data["tree"].get("generator") or {}
    if gen.get("stem_form") is None:
        return fibre, second_moment
    trunk = gen["trunk"]
    segments = int(trunk["segments"])
    k = np.arange(len(stem))
    height = (k + 0.5) * float(trunk["length"]) / segments  # mid-heights, where r is taken
    on_trunk = k < segments
    cored = stem_second_moment(r, float(gen.get("juvenile_radius") or 0.0),
                               float(gen.get("juvenile_modulus_ratio", 1.0)))
    second_moment = np.where(on_trunk, cored, second_moment)
    if gen.get("fork_height") is not None:
        leaders = np.where(on_trunk & (height > float(gen["fork_height"])),
                           int(gen.get("fork_leaders", 1)), 1)
        fibre = fibre * np.sqrt(leaders)
    return fibre, second_moment


def pull(sim, height: float, force: float | None = None, inclination_deg: float | None = None,
         direction_deg: float = 0.0, release: bool = False) -> PullResult:
    """The pulling test on `sim` (a `Simulation`) at `height` m above the stem base: a rope
    `force` N, or the force giving `inclination_deg` at the stem base (default 0.25°), toward
    `direction_deg` (azimuth, 0 = +x). With `release`, also the free sway's frequency and
    damping ratio. Raises TreedynError (one line) for a height off the stem or a force that
    would break or uproot the tree."""
    for name, value in (("height", height), ("force", force), ("inclination", inclination_deg),
                        ("direction", direction_deg)):
        if value is not None and not math.isfinite(value):
            raise TreedynError(f"pull: --{name} must be a finite number, got {value}")
    if force is not None and not force > 0:
        raise TreedynError(f"pull: --force must be > 0 N, got {force:g}")
    statics = _unit_response(sim, height, direction_deg)
    tree = sim.tree
    per_newton = _base_inclination_deg(sim, statics, statics.epsilon)
    if force is None:
        target = NON_DESTRUCTIVE_INCLINATION_DEG if inclination_deg is None else inclination_deg
        if not 0.0 < target <= UPROOTING_INCLINATION_DEG:
            raise TreedynError(f"pull: --inclination must be in (0, {UPROOTING_INCLINATION_DEG}]"
                               f" deg, got {target:g}")
        if not per_newton > 0.0:   # a rope at the ground (or 5e-324 m) has no lever
            raise TreedynError(f"pull: a rope at {height:g} m does not tilt the stem base; "
                               f"pull higher up the stem")
        force = target / per_newton
    epsilon = force * statics.epsilon
    inclination = _base_inclination_deg(sim, statics, epsilon)
    stress = _stem_stress(sim, statics, epsilon)
    rupture = float(sim.data["material"]["modulus_of_rupture"])
    if stress > rupture:
        raise TreedynError(f"pull: a force of {force:.4g} N would break the stem (bending stress "
                           f"{stress / 1e6:.3g} MPa above the modulus of rupture "
                           f"{rupture / 1e6:.3g} MPa)")
    if inclination > UPROOTING_INCLINATION_DEG:
        raise TreedynError(f"pull: a force of {force:.4g} N would uproot the tree (stem-base "
                           f"inclination {inclination:.3g}° beyond {UPROOTING_INCLINATION_DEG}°)")
    result = PullResult(
        height_m=height, force_N=float(force), direction_deg=direction_deg,
        deflection_m=_deflection(statics, epsilon, tree), base_inclination_deg=inclination,
        base_moment_Nm=float(np.linalg.norm(statics.model.K_spring[0] @ epsilon[0])),
        max_stem_stress_Pa=stress)
    if release:
        smallest = MIN_RELEASE_DEFLECTION * tree.height
        if not abs(result.deflection_m) >= smallest:
            raise TreedynError(
                f"pull: a force of {force:.3g} N moves the rope point by "
                f"{result.deflection_m:.3g} m, too little to fit a release on (at least "
                f"{smallest:.3g} m, {MIN_RELEASE_DEFLECTION:g} of the tree's height): pull "
                f"with at least {force * smallest / max(abs(result.deflection_m), 1e-300):.3g} N")
        rope_work = result.force_N * result.deflection_m
        result.release = release_record(sim, statics, epsilon, rope_work)
        along = result.release.displacement @ statics.direction
        result.frequency_hz, result.damping_ratio = fit_decay(along, result.release.dt)
    return result


def _lowest_frequency_hz(model) -> float:
    factor = model.K.factor()
    # Inverse iteration for the lowest eigenvalue of (K, M): a time scale for the release.
    x = np.cos(np.arange(model.M.n_dof) * 0.7) + 1.5
    for _ in range(30):
        x = factor.solve(model.M.matvec(x))
        x /= np.linalg.norm(x)
    omega2 = float(x @ model.K.matvec(x)) / float(x @ model.M.matvec(x))
    return math.sqrt(max(omega2, 1e-300)) / (2.0 * math.pi)


def release_record(sim, statics: _Statics, epsilon: np.ndarray, rope_work: float
                   ) -> ReleaseRecord:
    """The free sway from the pulled pose (module docstring); `rope_work` J, F·d, twice the
    strain energy of the pulled pose."""
    from ..simulation import Simulation

    tree = sim.tree
    f_guess = _lowest_frequency_hz(statics.model)
    period = 1.0 / f_guess
    data = copy.deepcopy(sim.data)
    data["wind"]["speed"] = 0.0
    data["simulation"]["implicit_theta"] = RELEASE_THETA
    data["simulation"]["dt"] = min(data["simulation"]["dt"], period / SAMPLES_PER_PERIOD)
    # Initial rotations relative to the rest pose, limb axes: R_rest exp(θ) = R_eq exp(ε).
    R_eq = statics.config.R_rel
    entries = []
    for i in range(tree.n):
        R = R_eq[i] @ so3.exp(epsilon[i])
        theta = so3.log(tree.rest_C_rel[i].T @ R)
        if np.any(theta):
            entries.append({"limb": tree.names[i], "rotation_deg": np.degrees(theta).tolist(),
                            "angular_velocity": [0.0, 0.0, 0.0]})
    data["initial_state"] = entries
    released = Simulation.from_data(data, integrator="implicit")
    dt = released.dt
    steps = int(math.ceil(SIMULATED_CYCLES * period / dt))
    if steps > MAX_RELEASE_STEPS:
        raise TreedynError(f"pull: the release would take {steps:,} steps of {dt:g} s (the tree "
                           f"sways at about {f_guess:.3g} Hz), more than {MAX_RELEASE_STEPS:,}: "
                           f"raise simulation.dt or stiffen the tree")
    limb = statics.limb
    s = (np.linalg.norm(statics.point - statics.config.base[limb])
         / tree.length[limb])
    displacement = np.empty((steps + 1, 3))
    energy = np.empty(steps + 1)
    released.warm_up()
    # An overdamped tree creeps back without crossing its equilibrium: seen after two periods.
    give_up = int(math.ceil(2.0 * period / dt))
    for k in range(steps + 1):
        if k:
            released.step(1)
        base, tip = released.base[limb], released.tip[limb]
        displacement[k] = base + s * (tip - base) - statics.point
        energy[k] = released.energy()
        if k == give_up and not np.any(displacement[:k + 1] @ statics.direction < 0.0):
            raise TreedynError(OVERDAMPED)
    return ReleaseRecord(dt, displacement, energy - energy[0] + 0.5 * rope_work)


OVERDAMPED = ("pull: the released tree did not swing back through its equilibrium "
              "(overdamped); no frequency to fit")


def fit_decay(x: np.ndarray, dt: float) -> tuple[float, float]:
    """(frequency Hz, damping ratio) of a decaying oscillation x (sampled every dt s) about 0:
    mean period between upward zero crossings, logarithmic decrement of the first peaks."""
    up = np.flatnonzero((x[:-1] < 0.0) & (x[1:] >= 0.0))
    if len(up) < 2:
        raise TreedynError(OVERDAMPED)
    crossings = (up + x[up] / (x[up] - x[up + 1])) * dt
    cycles = min(len(crossings) - 1, FIT_CYCLES)
    frequency = cycles / (crossings[cycles] - crossings[0])
    # The peak of each cycle between upward crossings, refined by a parabola through three
    # samples. The release pose itself (t = 0) is not used: the static deflection also holds
    # higher modes, which damp out within the first cycle.
    peaks = []
    for a, b in zip(up[:-1], up[1:]):
        k = a + int(np.argmax(x[a:b + 1]))
        if 0 < k < len(x) - 1:
            y0, y1, y2 = x[k - 1], x[k], x[k + 1]
            denom = y0 - 2.0 * y1 + y2
            y1 = y1 - 0.125 * (y2 - y0) ** 2 / denom if denom else y1
        else:
            y1 = x[k]
        peaks.append(y1)
    n = min(len(peaks) - 1, FIT_CYCLES)
    delta = math.log(peaks[0] / peaks[n]) / n if n >= 1 and peaks[0] > 0 < peaks[n] else math.nan
    if not (math.isfinite(delta) and math.isfinite(frequency)):
        raise TreedynError("pull: the released sway holds too few clean cycles to fit a "
                           "damping ratio")
    return float(frequency), float(delta / math.sqrt(4.0 * math.pi ** 2 + delta ** 2))


def energy_damping_ratio(record: ReleaseRecord, frequency_hz: float, first: int = 1,
                         cycles: int = FIT_CYCLES) -> float:
    """The damping ratio of the whole tree's energy loss, ζ_E = ln(E_a/E_b) / (2ω (t_b − t_a)),
    over `cycles` periods of `frequency_hz` starting `first` periods after the release (by
    default the cycles the decrement uses): a free oscillation's energy decays as
    exp(−2ζωt)."""
    period = 1.0 / frequency_hz
    a = int(round(first * period / record.dt))
    b = int(round((first + cycles) * period / record.dt))
    if b >= len(record.energy_J):
        raise ValueError(f"the release holds {len(record.energy_J) * record.dt:.3g} s, "
                         f"not {(first + cycles) * period:.3g} s")
    omega = 2.0 * math.pi * frequency_hz
    return math.log(record.energy_J[a] / record.energy_J[b]) / (2.0 * omega * (b - a) * record.dt)


def format_text(result: PullResult) -> str:
    lines = [f"pull at {result.height_m:g} m toward {result.direction_deg:g}°: force "
             f"{result.force_N:.4g} N",
             f"  rope-point deflection {result.deflection_m * 1e3:.4g} mm",
             f"  stem-base inclination {result.base_inclination_deg:.4g}°",
             f"  base bending moment {result.base_moment_Nm / 1e3:.4g} kN·m",
             f"  largest stem bending stress {result.max_stem_stress_Pa / 1e6:.3g} MPa"]
    if result.frequency_hz is not None:
        lines.append(f"  release in still air: frequency {result.frequency_hz:.4g} Hz, damping "
                     f"ratio {result.damping_ratio:.4g} (logarithmic decrement, first "
                     f"{FIT_CYCLES} cycles)")
    return "\n".join(lines)


def format_json(result: PullResult) -> dict:
    """The result as JSON-ready numbers (units in the names); a figure that is not finite is
    null, never NaN (not JSON)."""
    values = {"height_m": result.height_m, "force_N": result.force_N,
            "direction_deg": result.direction_deg, "deflection_m": result.deflection_m,
            "base_inclination_deg": result.base_inclination_deg,
            "base_moment_Nm": result.base_moment_Nm,
            "max_stem_stress_Pa": result.max_stem_stress_Pa,
            "frequency_hz": result.frequency_hz, "damping_ratio": result.damping_ratio}
    return {key: value if value is None or math.isfinite(value) else None
            for key, value in values.items()}
