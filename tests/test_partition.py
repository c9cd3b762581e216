"""The step's threads (`dynamics.partition`, docs/performance.md §3): the tree cut into a top
and subtrees that no two threads share, the number of threads a setting, and trajectories
that do not depend on it."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from random_trees import TOPOLOGIES, random_parents
from treedyn_core.bench.performance import tree_of_size
from treedyn_core.dynamics import partition as partition_module
from treedyn_core.dynamics.partition import Partition, partition, thread_count
from treedyn_core.errors import TreedynError
from treedyn_core.simulation import Simulation


def check_partition(parent: np.ndarray, part: Partition) -> None:
    """Every limb once; the top closed toward the root; a group's limbs' parents in the group
    or the top, and no limb of the top the parent of limbs of two groups (the inward passes
    add a limb's terms to its parent: two groups would write into one); each group ascending
    (breadth-first order kept)."""
    n = parent.shape[0]
    group_of = np.full(n, -2)
    group_of[part.top] = -1
    for g in range(part.groups):
        members = part.limbs[part.starts[g]:part.starts[g + 1]]
        assert np.all(np.diff(members) > 0)
        assert np.all(group_of[members] == -2), "a limb in two places"
        group_of[members] = g
    assert np.all(group_of > -2), "a limb in no place"
    assert np.all(np.diff(part.top) > 0) and part.top[0] == 0
    groups_below = {}
    for i in range(1, n):
        p = parent[i]
        if group_of[i] == -1:
            assert group_of[p] == -1
        else:
            assert group_of[p] in (-1, group_of[i])
            if group_of[p] == -1:
                groups_below.setdefault(p, set()).add(group_of[i])
    assert all(len(groups) == 1 for groups in groups_below.values())


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 400), seed=st.integers(0, 10_000), topology=st.sampled_from(TOPOLOGIES),
       threads=st.integers(1, 5))
def test_every_partition_is_a_valid_schedule(n, seed, topology, threads):
    parent = random_parents(n, np.random.default_rng(seed), topology)
    part = partition(parent, threads, min_limbs_per_group=10)
    check_partition(parent, part)
    assert part.groups <= max(threads, 1)


def test_a_generated_tree_is_shared_evenly_and_its_top_is_small():
    parent = Simulation.from_data(tree_of_size(10_000)).tree.parent
    part = partition(parent, 2)
    check_partition(parent, part)
    sizes = np.diff(part.starts)
    assert part.groups == 2
    assert sizes.max() <= 1.15 * sizes.mean()
    assert len(part.top) < 0.01 * len(parent)


def test_small_trees_stay_on_one_thread():
    parent = random_parents(2 * partition_module.MIN_LIMBS_PER_GROUP - 1,
                            np.random.default_rng(1))
    part = partition(parent, 8)
    assert part.groups == 0 and len(part.top) == len(parent)


def test_the_number_of_threads_is_a_setting(monkeypatch):
    monkeypatch.setenv("TREEDYN_THREADS", "3")
    assert thread_count() == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("TREEDYN_THREADS", bad)
        with pytest.raises(TreedynError, match="TREEDYN_THREADS must be an integer >= 1"):
            thread_count()
    monkeypatch.delenv("TREEDYN_THREADS")
    assert thread_count() >= 1


def _trajectory(data, integrator, threads, monkeypatch, steps):
    monkeypatch.setenv("TREEDYN_THREADS", str(threads))
    sim = Simulation.from_data(data, integrator=integrator)
    if integrator == "rk4":
        sim.dt = sim.rk4_stable_dt()
    assert sim.partition.groups == (threads if threads > 1 else 0)
    limb = sim.tree.n - 1
    sim.set_pull(limb, np.zeros(3), sim.workspace.base[limb] + [0.05, 0.0, 0.0], 50.0, 1.0)
    sim.step(steps)
    return sim.q.copy(), sim.v.copy()


@pytest.mark.parametrize("integrator, steps", [("implicit", 120), ("galpha", 60), ("rk4", 40)])
def test_trajectories_do_not_depend_on_the_number_of_threads(integrator, steps, monkeypatch):
    """A 2,050-limb tree in a turbulent wind, a tip pulled: the same numbers bit for bit on 1,
    2 and 3 threads (each limb's terms are the same arithmetic, and a parent takes its
    children's in the same order)."""
    data = tree_of_size(2000)
    data["wind"].update(speed=12.0, turbulence_intensity=0.3)
    one = _trajectory(data, integrator, 1, monkeypatch, steps)
    for threads in (2, 3):
        other = _trajectory(data, integrator, threads, monkeypatch, steps)
        assert np.array_equal(one[0], other[0]) and np.array_equal(one[1], other[1])
    assert np.abs(one[1]).max() > 1e-3   # the tree moved
