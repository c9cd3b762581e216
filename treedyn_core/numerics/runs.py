"""Runs of consecutive limbs in a list of limbs, for loops that vectorise.

The step's passes go over lists of limb indices (`dynamics.partition`); a loop that reads
``x[limbs[k]]`` gathers, and LLVM leaves a gathering loop scalar. The lists are long runs of
consecutive indices (a subtree's limbs of one depth are consecutive in breadth-first order), so
a loop that matters goes over each run's arrays as views that start at 0,
``x[first:stop]`` indexed by ``range(stop − first)``, which LLVM vectorises. (A loop over
``range(limbs[k], …)`` itself stays scalar: an index read from an array might be negative,
and numba wraps negative indices; `tests/test_vectorise.py`.)
"""

from __future__ import annotations

from .kernel import kernel


@kernel(inline="always")
def run_end(limbs, k):
    """The index m > k in limbs (int array) where the run of consecutive values that starts at
    limbs[k] ends: limbs[k:m] == range(limbs[k], limbs[k] + m − k)."""
    m = k + 1
    while m < limbs.shape[0] and limbs[m] == limbs[k] + (m - k):
        m += 1
    return m
