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
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

TWO_PI = 2.0 * math.pi
INV_TWO_PI = 1.0 / TWO_PI

# Taylor coefficients of sin(2π s) in odd powers s^(2n+1), n = 0 … 7:
# (−1)^n (2π)^(2n+1) / (2n+1)!. On |s| ≤ 1/4 (|2πs| ≤ π/2) the first omitted
# term, (π/2)^17 / 17! = 6.0e-12, bounds the truncation error (alternating
# series with decreasing terms).
SIN_TURNS_TAYLOR = np.array([(-1.0) ** n * TWO_PI ** (2 * n + 1) / math.factorial(2 * n + 1)
                             for n in range(8)])
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7 = (float(c) for c in SIN_TURNS_TAYLOR)


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def cos_turns(a):
    """cos(2π a) for a finite a (turns), |error| ≤ 1e-11.

    With r = a − rint(a) ∈ [−1/2, 1/2] (exact), cos(2π r) = sin(2π s) for
    s = 1/4 − |r| ∈ [−1/4, 1/4], an odd polynomial of degree 15 in s.
    """
    s = 0.25 - abs(a - np.rint(a))
    s2 = s * s
    poly = _S7
    poly = poly * s2 + _S6
    poly = poly * s2 + _S5
    poly = poly * s2 + _S4
    poly = poly * s2 + _S3
    poly = poly * s2 + _S2
    poly = poly * s2 + _S1
    poly = poly * s2 + _S0
    return poly * s


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def fast_cos(x):
    """cos x for a finite x (rad): `cos_turns` of x/2π.

    The conversion adds an error of about |x|·1e-16 (≈1e-12 at |x| = 1e4).
    """
    return cos_turns(x * INV_TWO_PI)
