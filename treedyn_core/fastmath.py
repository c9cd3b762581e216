"""A cosine that numba can vectorise.

numba on the reference machine has no vector maths library (SVML), so
``math.cos`` inside a loop stays a scalar library call and a field of
10,000 points × 64 modes costs ~6.7 ms (FACTS, "Wind field cost"). The
cosine below is branch-free arithmetic (a rounding, an absolute value and a
polynomial), which LLVM turns into SIMD code inside such loops.

The argument is in turns (1 turn = 2π rad): the range reduction is then the
exact subtraction ``a − rint(a)``, with no rounded 2π in it. Use ``math.floor``
nowhere here: numba returns an int from it, and the float → int → float round
trip makes the loop ~1.7× slower.

numba's cache does not follow imports: a kernel that inlines these functions
keeps its cached copy after this file changes, until its own file changes or
its ``__pycache__`` entries are deleted.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

TWO_PI = 2.0 * math.pi
INV_TWO_PI = 1.0 / TWO_PI

# Coefficients c_n of sin(2π s) ≈ s Σ c_n s^(2n), n = 0 … 5, on |s| ≤ 1/4: the
# least-squares fit at 4,000 Chebyshev nodes of (0, 1/4], max error 1.5e-11.
# (The Taylor polynomial needs degree 15, two more terms, for that accuracy,
# and the wind kernel takes ~20 % longer with it.) Near the Taylor values
# (−1)^n (2π)^(2n+1) / (2n+1)!: 6.2832, −41.342, 81.605, −76.706, 42.058, −15.1.
SIN_TURNS_COEFFICIENTS = (6.283185306642637, -41.34170197032852, 81.60521267145795,
                          -76.70377770136078, 42.00165507666826, -14.346324764611971)
_C0, _C1, _C2, _C3, _C4, _C5 = SIN_TURNS_COEFFICIENTS


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def cos_turns(a):
    """cos(2π a) for a finite a (turns), |error| ≤ 2e-11.

    With r = a − rint(a) ∈ [−1/2, 1/2] (exact), cos(2π r) = sin(2π s) for
    s = 1/4 − |r| ∈ [−1/4, 1/4], an odd polynomial of degree 11 in s.
    """
    s = 0.25 - abs(a - np.rint(a))
    s2 = s * s
    poly = _C5
    poly = poly * s2 + _C4
    poly = poly * s2 + _C3
    poly = poly * s2 + _C2
    poly = poly * s2 + _C1
    poly = poly * s2 + _C0
    return poly * s


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def fast_cos(x):
    """cos x for a finite x (rad): `cos_turns` of x/2π.

    The conversion adds an error of about |x|·1e-16 (≈1e-12 at |x| = 1e4).
    """
    return cos_turns(x * INV_TWO_PI)
