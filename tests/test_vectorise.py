"""A loop of the step over runs of consecutive limbs runs on the vector units
(docs/performance.md §3): the foliage drag's power in `drag_loads` (the wind's mean profile
in `wind.wind_at_points` is written the same way). Checked in the machine code numba makes
for this machine, as `inspect_asm` shows it: packed double-precision arithmetic (``…pd``),
which a scalar loop lacks.

A loop over ``range(limbs[k], …)`` stayed scalar (numba wraps negative indices, and an index
read from an array might be negative); over views that start at 0 it vectorises."""

from __future__ import annotations

import re

import numba
import numpy as np

from treedyn_core.dynamics.aero import VOGEL_REFERENCE_SPEED, drag_loads
from treedyn_core.numerics.fastmath import fast_pow
from treedyn_core.numerics.kernel import KERNEL_OPTIONS

# packed double-precision arithmetic, AVX (v…) or SSE2
PACKED = re.compile(r"\b(?:vfn?m(?:add|sub)\d*pd|v?(?:mul|add|sub|div|sqrt|max|min)pd)\b")


def packed_operations(kernel, *args) -> int:
    """Packed double-precision arithmetic instructions in `kernel`'s machine code for `args`
    (compiled afresh: numba does not show the code of a kernel loaded from its cache)."""
    fresh = numba.njit(**{**KERNEL_OPTIONS, "cache": False, "_nrt": False})(kernel.py_func)
    fresh(*args)
    return len(PACKED.findall(fresh.inspect_asm(fresh.signatures[0])))


def test_foliage_drag_power_runs_on_the_vector_units():
    n = 64
    rng = np.random.default_rng(1)
    vectors = [rng.normal(size=(n, 3)) for _ in range(3)]  # wind, limb velocity, lever
    args = (np.arange(n), *vectors, np.ones(n), np.full(n, 0.05), np.ones(n), 1.2, 1.0, 0.3,
            -0.6, True, np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3, 3)))
    assert packed_operations(drag_loads, *args) > 0
    # and a loop written over the array's indices, as it was, does not
    scalar = numba.njit(**{**KERNEL_OPTIONS, "cache": False})(_indexed_power)
    scalar(np.arange(n), vectors[0], vectors[1], np.zeros((n, 3)), -0.6)
    assert not PACKED.findall(scalar.inspect_asm(scalar.signatures[0]))


def _indexed_power(limbs, wind, motion, out, exponent):
    """The foliage's power over limbs[0] … limbs[0] + n − 1, indexed from the list's first
    value: the loop `drag_loads` had, which stayed scalar."""
    for i in range(limbs[0], limbs[0] + limbs.shape[0]):
        speed2 = 0.0
        for r in range(3):
            speed2 += (wind[i, r] - motion[i, r]) ** 2
        relative = max(speed2, 1e-300) * (1.0 / VOGEL_REFERENCE_SPEED ** 2)
        out[i, 0] = fast_pow(relative, 0.5 * exponent)
