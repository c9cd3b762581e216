"""A cosine that numba can vectorise.

numba on the reference machine has no vector maths library (SVML), so
``math.cos`` inside a loop stays a scalar library call and a field of
10,000 points × 64 modes costs ~6.7 ms (docs/performance.md §6). The
cosine below is branch-free arithmetic (a rounding, an absolute value and a
polynomial), which LLVM turns into SIMD code inside such loops.

The argument is in turns (1 turn = 2π rad): the range reduction is then the
exact subtraction ``a − rint(a)``, with no rounded 2π in it. Use ``math.floor``
nowhere here: numba returns an int from it, and the float → int → float round
trip makes the loop ~1.7× slower.

numba's cache does not follow imports: a kernel that inlines these functions
would keep its cached copy after this file changes; `kernel`'s stamp of every
kernel source deletes the package's cached kernels then.
"""

from __future__ import annotations

import math

import numpy as np

from .kernel import njit

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

    The polynomial in z = s² goes by Estrin's scheme, (c0 + c1 z) + z² ((c2 + c3 z) +
    z² (c4 + c5 z)): its three pairs are independent, so the longest chain of dependent
    operations is 4 long against Horner's 6, for one multiplication more: the wind field
    (64 such cosines per point) 2–6 % faster than with Horner, a bare loop of cosines 18 %.
    """
    s = 0.25 - abs(a - np.rint(a))
    z = s * s
    z2 = z * z
    poly = (_C0 + _C1 * z) + z2 * ((_C2 + _C3 * z) + z2 * (_C4 + _C5 * z))
    return poly * s


# exp and log for `fast_pow`, branch-free so that loops over points vectorise (in kernels with
# error_model="numpy": a checked division is a branch): the exponent and mantissa are taken
# apart and put together through the bits of the float (IEEE 754 binary64); integers are
# converted with the 2^52 + 2^51 "magic number" instead of int ↔ float instructions, which AVX2
# lacks for 64-bit integers. Only bit casts separate the magic additions from their
# subtractions, so fastmath's reassociation cannot fold them away.
_MAGIC = 6755399441055744.0          # 1.5 · 2^52: n + _MAGIC holds the integer n in its low bits
_MAGIC_BITS = np.float64(_MAGIC).view(np.int64)
_LN2_HI = 0.6931471803691238         # ln 2 split so that n · _LN2_HI is exact for |n| < 2^20
_LN2_LO = 1.9082149292705877e-10
_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)


# Their series' coefficients, highest power first: 1/k!, k = 12 … 0, and 1/k, k = 21, 19 … 1.
_EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(12, -1, -1))
_ATANH_SERIES = tuple(1.0 / k for k in range(21, 0, -2))


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def _horner(x, coefficients):
    """The polynomial c_0 x^n + c_1 x^(n−1) + … + c_n at x by Horner's scheme, coefficients
    (c_0, …, c_n) highest power first."""
    p = coefficients[0]
    for c in coefficients[1:]:
        p = p * x + c
    return p


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def fast_exp(x):
    """e^x for |x| < 700: e^x = 2^n e^r, n = rint(x/ln 2), Taylor series of degree 12 on
    |r| ≤ ln2/2. Relative error ≤ 4e-16 + 5e-17 |x| in the kernels (their reassociation merges
    the two halves of ln 2 in r; without it, ≤ 4e-16)."""
    n = np.rint(x * (1.0 / _LN2))
    r = (x - n * _LN2_HI) - n * _LN2_LO
    p = _horner(r, _EXP_TAYLOR)
    two_n = ((np.float64(n + _MAGIC).view(np.int64) - _MAGIC_BITS + 1023) << 52)
    return p * np.int64(two_n).view(np.float64)


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def fast_log(x):
    """ln x for a positive normal x, absolute error ≤ 3e-16 (1 + |ln x|): x = 2^e m with
    m ∈ [√½, √2), ln m = 2 atanh(s), s = (m − 1)/(m + 1), |s| ≤ 0.172, series to s^21."""
    bits = np.float64(x).view(np.int64)
    m = np.int64((bits & 0x000FFFFFFFFFFFFF) | 0x3FF0000000000000).view(np.float64)  # [1, 2)
    biased = np.int64(((bits >> 52) & 0x7FF) | 0x4330000000000000).view(np.float64)  # 2^52 + e
    exponent = biased - (_MAGIC / 1.5 + 1023.0)
    big = m > _SQRT2
    m = 0.5 * m if big else m
    exponent = exponent + 1.0 if big else exponent
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = _horner(s2, _ATANH_SERIES)
    return exponent * _LN2_HI + (exponent * _LN2_LO + 2.0 * s * p)


@njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
def fast_pow(x, y):
    """x^y for a positive normal x and |y ln x| < 700, relative error ≤ 1e-15 (1 + |y ln x|);
    `math.pow` is a library call that does not vectorise (~14 ns here, against ~3 ns)."""
    return fast_exp(y * fast_log(x))
