"""treedyn's step against MuJoCo's `implicitfast` step on the same tree (docs/performance.md §6;
the performance issue's target at 1,026 limbs).

    pip install mujoco            # not a dependency of treedyn: this script's alone
    python scripts/mujoco_ratio.py [LIMBS ...]     # default 1000 (the bench's 1,026-limb tree)

The tree is `treedyn bench performance`'s of that size (`bench.performance.tree_of_size`), in
MuJoCo as nested bodies at their rest poses: each limb's mass, centre of mass and inertia
about it, a ball joint at its base with a spring (its bending stiffness, scalar: MuJoCo's
joint springs are isotropic) and a damper toward the rest pose, gravity, no geometry (no
contacts), dt = 1/120 s. MuJoCo has no wind: treedyn is timed with its wind off (the
aerodynamics off, as the bench's "no wind" column) and on. Both on one thread, wall time per
step, medians over repetitions, the two alternated; only their ratio counts on a shared
machine. MuJoCo's step is timed as it comes, whether or not its motion stays bounded: its
explicit treatment of the springs' stiffness (implicitfast makes the dampers implicit) cannot
hold the limbs' fast twist modes at this step: it warns within 0.1 s and starts again from
rest, as it does by default, which costs it about a tenth more a step than a stable run
(the same tree without springs: 2.27 against 2.5 ms here).
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("TREEDYN_THREADS", "1")

import numpy as np  # noqa: E402

from treedyn_core.bench.performance import DT, build  # noqa: E402

REPEATS = 7


def mjcf(sim) -> str:
    """The tree of `sim` at rest as an MJCF model (string)."""
    tree, model = sim.tree, sim.articulated_model()
    C = tree.rest_C_IF
    children = [[] for _ in range(tree.n)]
    for i in range(1, tree.n):
        children[int(tree.parent[i])].append(i)

    def body(i: int, depth: int) -> str:
        p = int(tree.parent[i])
        if p < 0:
            pos, rel = tree.rest_base[i], C[i]
        else:
            pos = C[p].T @ (tree.rest_base[i] - tree.rest_base[p])
            rel = C[p].T @ C[i]
        quat = np.empty(4)
        import mujoco
        mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rel).ravel())
        com = model.com_offset[i]
        mass = float(model.mass[i])
        # inertia about the centre of mass, limb axes (the model's is about the base)
        about_com = model.inertia_base[i] - mass * (np.dot(com, com) * np.eye(3)
                                                     - np.outer(com, com))
        full = " ".join(f"{v:.9g}" for v in (about_com[0, 0], about_com[1, 1], about_com[2, 2],
                                              about_com[0, 1], about_com[0, 2], about_com[1, 2]))
        k = float(model.stiffness[i, 0, 0])
        c = float(model.damping[i, 0, 0])
        pad = " " * depth
        inner = "".join(body(j, depth + 1) for j in children[i])
        return (f'{pad}<body pos="{pos[0]:.9g} {pos[1]:.9g} {pos[2]:.9g}" '
                f'quat="{quat[0]:.9g} {quat[1]:.9g} {quat[2]:.9g} {quat[3]:.9g}">\n'
                f'{pad} <inertial pos="{com[0]:.9g} {com[1]:.9g} {com[2]:.9g}" mass="{mass:.9g}" '
                f'fullinertia="{full}"/>\n'
                f'{pad} <joint type="ball" stiffness="{k:.9g}" damping="{c:.9g}"/>\n'
                f'{inner}{pad}</body>\n')

    return (f'<mujoco>\n<option timestep="{DT:.12g}" integrator="implicitfast" '
            f'gravity="0 0 -9.81"/>\n<worldbody>\n{body(0, 1)}</worldbody>\n</mujoco>\n')


def median_seconds(step, count: int) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        step(count)
        times.append((time.perf_counter() - start) / count)
    return float(np.median(times))


def main(sizes) -> int:
    import mujoco

    for size in sizes:
        sim, _ = build(size)
        model = mujoco.MjModel.from_xml_string(mjcf(sim))
        data = mujoco.MjData(model)
        count = max(20, int(20000 / sim.tree.n))

        def mujoco_steps(n):
            for _ in range(n):
                mujoco.mj_step(model, data)

        def treedyn_steps(n, aerodynamics):
            sim.aerodynamics = aerodynamics
            sim.step(n)

        mujoco_steps(count)
        treedyn_steps(count, False)
        treedyn_steps(count, True)
        rows = []
        for _ in range(3):
            rows.append((median_seconds(mujoco_steps, count),
                         median_seconds(lambda n: treedyn_steps(n, False), count),
                         median_seconds(lambda n: treedyn_steps(n, True), count)))
        for mj, still, windy in rows:
            print(f"{sim.tree.n:>7,} limbs: MuJoCo implicitfast {1e3 * mj:.3f} ms, treedyn "
                  f"implicit {1e3 * still:.3f} ms without wind ({mj / still:.1f}×), "
                  f"{1e3 * windy:.3f} ms with wind ({mj / windy:.1f}×)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]] or [1000]))
