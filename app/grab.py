"""Grab a branch: picking a limb on screen, and the spring that pulls it (no Qt, no vispy).

The user presses the left button on a limb and drags. `GrabTool` (GUI thread,
fed the canvas's mouse events by the main window) picks the limb drawn nearest
the cursor (`pick_segment`) and hands a `GrabSpring` to the worker, which
applies it before every step as an external load
(`Simulation.set_external_loads`) until the button is released.

The spring pulls the grabbed point (the point of the limb under the cursor when
it was pressed, a fixed fraction `s` of the way from base to tip) toward the
target (the point under the cursor on the plane through the grabbed point that
faces the camera).

Stiffness: the point moves by u = C k (d − u) under a drag d, C the point's
compliance (3×3: the joint springs from the root to the grabbed limb, each
joint's rotation turning the point about that joint's base; gravity's geometric
stiffness left out), so it misses the cursor by (1 + kC)⁻¹ d. C is far from
isotropic (a branch barely moves along its own axis, where only its parents'
bending carries it), so k is `PULL_FRACTION_STIFFNESS` × the tree's stiffness in
the point's *stiffest* direction, 1/c_min: then a twig and a trunk, a sapling
and a giant, pulled any way, all follow to within 1/21 of the drag statically
(less the arcs a point turning about its joints cannot leave). Where the joints
cannot move the point (along a straight trunk: a compliance below
1/`MAX_STIFFNESS_RATIO` of the softest), that direction is left out of c_min: a
pull there, or the drop of a point swung on an arc, would otherwise ask for
tens of meganewtons. The force the status line shows is what holds the tree
there. (A
stiffness made from mass and height alone leaves twigs, whose springs are stiff
for their weight, nearly unmoved.) A dashpot (damping ratio
`SPRING_DAMPING_RATIO` on k and the grabbed limb's effective mass) acts on the
grabbed point's velocity, so a pulled branch settles under the hand instead of
ringing; on release only the tree's own damping is left and it swings back.

Such a spring on a twig is far stiffer than anything an explicit force can
follow at the frame's step. The articulated model with the implicit integrator
takes it into the step (`Simulation.set_pull`, docs/design.md §4.1: an added
mass at the point), which keeps it stable at any k. Elsewhere (the seed model,
rk4, dop853) the pull is an external load held over each step, its rate capped:
k ≤ m_eff (`MAX_SPRING_RATE` / dt)², m_eff = subtree mass /
`EFFECTIVE_MASS_DIVISOR` (a rod turning about its base has a tip effective mass
of m/3); the point then follows less far.

The spring is held at an anchor that follows the cursor at most at
`MAX_ANCHOR_SPEED`: on old_oak's first branch k is 3e9 N/m, and a cursor's jump
of 0.3 m in one step turned the limb too far for the step's linearisation.

The status line names the grabbed point in words (`limb_label`): "trunk at 2.1 m
up", "branch 3 at 4.5 m from the trunk".
"""

from __future__ import annotations

import math

import numpy as np

from treedyn_core.numerics.so3 import hat_many

# Picking: a limb is grabbed if the cursor is within this many pixels of its drawn segment
# (plus half its drawn width).
PICK_TOLERANCE_PX = 10.0
# The spring: this many times the tree's own stiffness at the grabbed point (the point then
# goes k/(k + k_tree) = 20/21 of the way to the cursor, statically).
PULL_FRACTION_STIFFNESS = 20.0
# Directions this many times stiffer than the point's softest count as immovable.
MAX_STIFFNESS_RATIO = 1.0e3
# Explicit fallback only: ω_spring · dt ≤ this (a spring force held over a step).
MAX_SPRING_RATE = 1.0
EFFECTIVE_MASS_DIVISOR = 4.0
SPRING_DAMPING_RATIO = 0.4
# m/s: the spring's anchor catches up with the cursor no faster (a stiff spring pulled by a
# sudden jump of the cursor would move a limb by a large rotation in one step, where the
# step's linearisation no longer holds).
MAX_ANCHOR_SPEED = 2.0


def pick_segment(start: np.ndarray, end: np.ndarray, cursor, half_width=0.0,
                 tolerance: float = PICK_TOLERANCE_PX):
    """The segment drawn nearest the cursor.

    start, end : (N, 2) screen points of each segment's ends (px); NaN rows are skipped
    (behind the camera). cursor : (2,) px. half_width : scalar or (N,) px, each segment's
    drawn half width. Returns (index, fraction along the segment 0..1, distance px), or
    None when no segment lies within `tolerance` px of its drawn edge.
    """
    start = np.asarray(start, dtype=float)
    end = np.asarray(end, dtype=float)
    cursor = np.asarray(cursor, dtype=float)
    d = end - start
    length2 = np.einsum("ij,ij->i", d, d)
    along = np.einsum("ij,ij->i", cursor - start, d) / np.maximum(length2, 1e-12)
    along = np.clip(np.nan_to_num(along, nan=0.0), 0.0, 1.0)
    nearest = start + along[:, None] * d
    distance = np.hypot(*(nearest - cursor).T)
    reach = distance - np.broadcast_to(np.asarray(half_width, dtype=float), distance.shape)
    reach = np.where(np.isfinite(reach), reach, np.inf)
    if not len(reach):
        return None
    best = int(np.argmin(reach))
    if reach[best] > tolerance:
        return None
    return best, float(along[best]), float(distance[best])


def point_compliance(tree, C_IF: np.ndarray, base: np.ndarray, limb: int, point: np.ndarray,
                     stiffness_scale: float = 1.0) -> np.ndarray:
    """(3, 3) m/N: static displacement of `point` (m, inertial, on limb `limb`) per unit force
    there, from the joint springs on the path root → limb (gravity's stiffness left out).

    Joint j (spring s·K_j, child axes, C_IF[j] limb j → inertial) turns the point about
    base[j] by C_IF[j] (s K_j)⁻¹ C_IF[j]ᵀ (r × F), r = point − base[j]; the point moves by
    that rotation × r. Summed: Σ [r]ₓᵀ C (sK)⁻¹ Cᵀ [r]ₓ.
    """
    path = [limb] + tree.ancestors(limb)
    path = np.array(path, dtype=np.int64)
    C = C_IF[path]
    K = stiffness_scale * tree.stiffness[path]
    compliance_world = C @ np.linalg.inv(K) @ np.transpose(C, (0, 2, 1))
    R = hat_many(point[None, :] - base[path])
    return np.einsum("mji,mjk,mkl->il", R, compliance_world, R)


class GrabSpring:
    """A spring from a material point of limb `limb` (fraction `s` from base to tip) to a
    target point (m, inertial). Built on the GUI thread; everything else runs in the worker
    (`apply` before each step, `set_target` through `worker.call`).

    Read by the GUI for display (plain values, replaced whole): `force` N (magnitude of the
    spring's pull at the last step), `stiffness` N/m (0 until the first step).
    """

    def __init__(self, limb: int, s: float, target: np.ndarray):
        self.limb = int(limb)
        self.s = float(np.clip(s, 0.0, 1.0))
        self.target = np.array(target, dtype=float)
        self.stiffness = 0.0
        self.damping = 0.0
        self.force = 0.0
        # The pull's bending moment over the breaking moment at the grabbed limb's base and at
        # the tree's base, the larger (≥ 1: the wood would break; display only).
        self.overload = 0.0
        self.overload_at_ground = False
        self._breaking = None   # N m: breaking moments at the limb's base and the tree's base
        self._implicit = None   # the pull is in the step (True) or an external load (False)
        self._anchor = None     # m, inertial: where the spring is held (moves to the target)
        self._n = None
        self._last_point = None
        self._last_time = None

    # -- worker thread ---------------------------------------------------------------------------

    def set_target(self, target) -> None:
        self.target = np.array(target, dtype=float)

    def point(self, sim) -> tuple[np.ndarray, np.ndarray]:
        """(grabbed point, limb base), m, inertial, in the simulation's current state."""
        i = self.limb
        base = sim.base[i]
        tip = sim.tip[i]
        return base + self.s * (tip - base), base

    def _set_up(self, sim, implicit: bool) -> None:
        tree = sim.tree
        self._n, self._implicit = tree.n, implicit
        point, _ = self.point(sim)
        compliance = point_compliance(tree, sim.C_IF, sim.base, self.limb, point,
                                      sim.stiffness_scale)
        principal = np.linalg.eigvalsh(0.5 * (compliance + compliance.T))   # ascending, m/N
        mobile = principal[principal >= principal[-1] / MAX_STIFFNESS_RATIO]
        mass = float(tree.mass[tree.subtree(self.limb)].sum()) / EFFECTIVE_MASS_DIVISOR
        self.stiffness = PULL_FRACTION_STIFFNESS / max(float(mobile[0]), 1e-300)
        if not implicit:
            self.stiffness = min(self.stiffness, mass * (MAX_SPRING_RATE / sim.dt) ** 2)
        self.damping = 2.0 * SPRING_DAMPING_RATIO * math.sqrt(self.stiffness * mass)
        # M = π/32·MOR·d³, a round section's breaking moment from the modulus of rupture.
        rupture = float(sim.data["material"]["modulus_of_rupture"])
        self._breaking = [math.pi / 4.0 * rupture * float(tree.radius[i]) ** 3
                          for i in (self.limb, 0)]

    def apply(self, sim) -> None:
        """Put this spring's pull in force in the simulation (before a step)."""
        implicit = sim.model == "articulated" and sim.integrator == "implicit"
        if self._n != sim.tree.n or self._implicit != implicit:
            self.release(sim)
            self._set_up(sim, implicit)
        point, base = self.point(sim)
        # the spring's anchor follows the cursor at most at MAX_ANCHOR_SPEED
        if self._anchor is None:
            self._anchor = point
        step = self.target - self._anchor
        reach = MAX_ANCHOR_SPEED * sim.dt
        size = float(np.linalg.norm(step))
        self._anchor = self._anchor + (step if size <= reach else step * (reach / size))
        self.force = float(self.stiffness * np.linalg.norm(self._anchor - point))
        pull = self.stiffness * (self._anchor - point)
        ratios = [float(np.linalg.norm(np.cross(point - sim.base[i], pull))) / m
                  for i, m in zip((self.limb, 0), self._breaking)]
        self.overload, self.overload_at_ground = max(ratios), ratios[1] > ratios[0]
        if implicit:
            offset = self.s * sim.tree.length[self.limb] * sim.tree.u[self.limb]
            sim.set_pull(self.limb, offset, self._anchor, self.stiffness, self.damping)
            return
        velocity = np.zeros(3)
        if self._last_time is not None and sim.time > self._last_time:
            velocity = (point - self._last_point) / (sim.time - self._last_time)
        self._last_point, self._last_time = point, sim.time
        force = self.stiffness * (self._anchor - point) - self.damping * velocity
        forces, torques = np.zeros((self._n, 3)), np.zeros((self._n, 3))
        forces[self.limb] = force
        torques[self.limb] = np.cross(point - base, force)
        sim.set_external_loads(forces, torques)

    def release(self, sim) -> None:
        """Take the load off (the tree swings back)."""
        n = sim.tree.n
        if sim.model == "articulated":
            sim.set_pull(-1, np.zeros(3), np.zeros(3), 0.0, 0.0)
        sim.set_external_loads(np.zeros((n, 3)), np.zeros((n, 3)))
        self.force = self.overload = 0.0


def limb_label(tree, limb: int, point: np.ndarray, base: np.ndarray) -> str:
    """Where the grabbed point is, in words, for the status line: "trunk at 2.1 m up" (the
    point's height above the tree's base) on the trunk (the root and the limbs named trunk…),
    "branch 3 at 4.5 m from the trunk" (its distance from where the branch leaves the trunk)
    on a generated tree's branch b2…, else the limb's own name and its distance from the
    tree's base. Distances of the point, never of the pull: "Pulling branch 1, 3.7 m out"
    read as a pull of 3.7 m after a drag of a few pixels.

    point : (3,) m, the grabbed point; base : (N, 3) m, the limbs' bases, inertial."""
    name = tree.names[limb]
    root = base[0]
    if limb == 0 or name.startswith("trunk"):
        return f"trunk at {point[2] - root[2]:.1f} m up"
    first = limb
    while tree.parent[first] > 0 and not tree.names[tree.parent[first]].startswith("trunk"):
        first = int(tree.parent[first])
    if name.startswith("b") and tree.names[first][1:].isdigit():
        number = int(tree.names[first][1:]) + 1
        return f"branch {number} at {np.linalg.norm(point - base[first]):.1f} m from the trunk"
    return f"{name} at {np.linalg.norm(point - root):.1f} m from the base"


class GrabTool:
    """The GUI side of grabbing (no Qt widgets touched: it talks to the canvas's verbs and
    the worker's). The main window connects the canvas's mouse events to `press`, `move`
    and `release`, and calls `follow(base, tip)` with every pose it draws.

    Left button on a limb, no modifier: grab. The event is then blocked so the camera does
    not also orbit; anything else passes through to the camera.
    """

    def __init__(self, canvas, worker_of, on_change=None):
        self.canvas = canvas
        self._worker_of = worker_of  # () → the current worker (it is replaced on a restart)
        self._on_change = on_change or (lambda text: None)
        self.enabled = True
        self.spring: GrabSpring | None = None
        self._plane_point = None
        self._target = None
        self._limb_name = ""

    @property
    def active(self) -> bool:
        return self.spring is not None

    def press(self, event) -> None:
        if self.spring is not None:  # a second button while grabbing: keep the grab
            event.blocked = True
            return
        if not self.enabled or event.button != 1 or event.modifiers:
            return
        picked = self.canvas.pick_limb(event.pos)
        pose = self.canvas.tree.pose
        if picked is None or pose is None:
            return
        limb, s = picked
        base, tip = pose
        point = base[limb] + s * (tip[limb] - base[limb])
        self._plane_point = point
        self._target = point.copy()
        self.spring = GrabSpring(limb, s, point)
        worker = self._worker_of()
        tree = worker.latest.tree
        self._limb_name = (limb_label(tree, limb, point, base) if tree is not None
                           else f"limb {limb}")
        worker.set_external_load(self.spring)
        self.canvas.set_spring(point, point)
        self._on_change(f"Pulling {self._limb_name}")
        event.blocked = True

    def move(self, event) -> None:
        if self.spring is None:
            return
        target = self.canvas.unproject(event.pos, self._plane_point)
        self._target = target
        spring = self.spring
        self._worker_of().call(lambda sim: spring.set_target(target))
        pose = self.canvas.tree.pose
        if pose is not None:
            self.follow(*pose)
        event.blocked = True

    def release(self, event=None) -> None:
        if self.spring is None:
            return
        self.cancel()
        if event is not None:
            event.blocked = True

    def cancel(self) -> None:
        """Let go (button released, simulation replaced, mode viewer opened)."""
        if self.spring is None:
            return
        self.spring = None
        self._worker_of().set_external_load(None)
        self.canvas.set_spring(None)
        self._on_change(None)

    def follow(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Redraw the spring from the grabbed point of the limb as drawn to the target."""
        spring = self.spring
        if spring is None:
            return
        i = spring.limb
        point = base[i] + spring.s * (tip[i] - base[i])
        self.canvas.set_spring(point, self._target)
        if spring.force > 0:
            self._on_change(f"Pulling {self._limb_name}: {format_force(spring.force)}"
                            + breaking_words(spring, self._limb_name))


def breaking_words(spring: GrabSpring, limb_name: str) -> str:
    """' — would break the branch' (or the trunk, or the trunk at the ground) when the pull's
    bending moment exceeds the wood's breaking moment there; '' otherwise."""
    if spring.overload < 1.0:
        return ""
    if spring.overload_at_ground:
        return " — would break the trunk at the ground"
    return " — would break the " + ("trunk" if limb_name.startswith("trunk") else "branch")


def format_force(newtons: float) -> str:
    """'12.3 N', '4.56 kN'."""
    return f"{newtons / 1e3:.3g} kN" if abs(newtons) >= 1e3 else f"{newtons:.3g} N"
