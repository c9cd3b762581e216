"""How the articulated step shares a tree among threads (docs/performance.md §3).

The recursion's passes run outward (parents before children) or inward (children before
parents), so no two limbs of one chain can be done at once; two disjoint subtrees can. A
`Partition` cuts the tree into a *top* (the root and the limbs nearest it) and subtrees
hanging from it, dealt out to ``groups`` threads with about as many limbs each:

- outward passes do the top in breadth-first order on the calling thread, then each group's
  limbs in breadth-first order, the groups at once;
- inward passes do the groups at once, each from its last limb, then the top from its last.

A subtree's root (a *cut* limb) belongs to the top, not to its group: an inward pass adds a
limb's terms to its parent, and two groups' cut limbs may share a parent. So every limb's
parent is in its own group or in the top, and a group writes nothing another reads. Every
limb's children are added to it in the same order (from the last) whatever the partition,
so a step gives the same numbers bit for bit on any number of threads.

The number of threads is ``TREEDYN_THREADS`` if set, else the cores this process may use.
A tree of fewer than `MIN_LIMBS_PER_GROUP` limbs a thread stays on one: starting the threads
of a parallel loop costs a few microseconds, which a small tree's step does not repay.
"""

from __future__ import annotations

import heapq
import os
import threading
from typing import NamedTuple

import numpy as np

from ..errors import TreedynError

# Held while a simulation steps (`Simulation._call`): numba's fallback threading layer
# (workqueue, where neither OpenMP nor TBB is found) aborts the process if two threads start
# parallel loops at once; steps of simulations in different threads take turns.
PARALLEL_STEPS = threading.Lock()

# Fewest limbs a group gets (measured: docs/performance.md §3): below this the threads cost
# more than they give.
MIN_LIMBS_PER_GROUP = 400
# The subtrees are cut until the largest holds at most 1/(SUBTREES_PER_GROUP·groups) of the
# tree: enough of them to deal out evenly, so few that the top stays a handful of limbs.
SUBTREES_PER_GROUP = 8


class Partition(NamedTuple):
    """A tree's limbs as the parallel passes take them (`partition`), breadth-first indices."""

    top: np.ndarray       # (T,) int64, the root, its nearest limbs and the cut limbs, ascending
    limbs: np.ndarray     # (N − T,) int64, the groups' limbs, group after group, each ascending
    starts: np.ndarray    # (groups + 1,) int64, group g is limbs[starts[g]:starts[g + 1]]

    @property
    def groups(self) -> int:
        return self.starts.shape[0] - 1


def thread_count() -> int:
    """Threads the step may use: ``TREEDYN_THREADS`` (an integer ≥ 1) if set, else the number of
    cores this process may run on."""
    chosen = os.environ.get("TREEDYN_THREADS", "").strip()
    if chosen:
        try:
            count = int(chosen)
        except ValueError:
            count = 0
        if count < 1:
            raise TreedynError(f"TREEDYN_THREADS must be an integer >= 1, got {chosen!r}")
        return count
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:     # not on Linux
        return os.cpu_count() or 1


def partition(parent: np.ndarray, threads: int | None = None,
              min_limbs_per_group: int = MIN_LIMBS_PER_GROUP) -> Partition:
    """The tree of ``parent`` (N,) (breadth-first, −1 for the root) cut for ``threads`` threads
    (default: `thread_count`), as many groups as threads but no more than N /
    min_limbs_per_group; one group or none: everything in the top (one thread).

    The subtrees are found by splitting the largest one left (its root joins the top, its
    children's subtrees are split next) until the largest holds at most 1/(8·groups) of the
    limbs; they are then dealt out largest first, each to the group with the fewest limbs.
    """
    parent = np.asarray(parent, dtype=np.int64)
    n = parent.shape[0]
    threads = thread_count() if threads is None else int(threads)
    groups = min(threads, n // max(min_limbs_per_group, 1))
    if groups <= 1:
        return Partition(np.arange(n, dtype=np.int64), np.zeros(0, dtype=np.int64),
                         np.zeros(1, dtype=np.int64))
    size = np.ones(n, dtype=np.int64)
    for i in range(n - 1, 0, -1):
        size[parent[i]] += size[i]
    children: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        children[parent[i]].append(i)

    largest = n // (SUBTREES_PER_GROUP * groups)
    top: list[int] = []
    frontier = [(-int(size[0]), 0)]
    while frontier and -frontier[0][0] > largest and children[frontier[0][1]]:
        _, split = heapq.heappop(frontier)
        top.append(split)
        for child in children[split]:
            heapq.heappush(frontier, (-int(size[child]), child))
    cut = sorted((int(-s), root) for s, root in frontier)[::-1]

    load = [(0, g) for g in range(groups)]
    members: list[list[int]] = [[] for _ in range(groups)]
    for subtree_size, root in cut:
        limbs, g = heapq.heappop(load)
        members[g].append(root)
        heapq.heappush(load, (limbs + subtree_size - 1, g))

    group_of = np.full(n, -1, dtype=np.int64)
    for g, roots in enumerate(members):
        group_of[roots] = g
    for i in range(1, n):   # breadth-first: a parent's group is known before its children's
        if group_of[i] < 0:
            group_of[i] = group_of[parent[i]]
    group_of[top] = -1
    cut_roots = [root for _, root in cut]
    group_of[cut_roots] = -1

    in_top = np.flatnonzero(group_of < 0)
    order = np.argsort(group_of[group_of >= 0], kind="stable")
    grouped = np.flatnonzero(group_of >= 0)[order]
    counts = np.bincount(group_of[group_of >= 0], minlength=groups)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Partition(in_top.astype(np.int64), grouped.astype(np.int64), starts)
