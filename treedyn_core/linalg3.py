"""Allocation-free 3-vector and 3×3 matrix helpers for the compiled per-limb loops.

Each writes into `out` (which must not alias an input unless stated) so that a
loop over 10,000 limbs allocates nothing.
"""

from __future__ import annotations

from .kernel import kernel


@kernel(inline="always")
def matmul(A, B, out):
    """out = A B."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@kernel(inline="always")
def matmul_tn(A, B, out):
    """out = Aᵀ B."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[0, i] * B[0, j] + A[1, i] * B[1, j] + A[2, i] * B[2, j]


@kernel(inline="always")
def congruence(R, S, tmp, out):
    """out = R S Rᵀ (rotate a symmetric matrix S into the frame R maps to)."""
    matmul(R, S, tmp)
    for i in range(3):
        for j in range(3):
            out[i, j] = tmp[i, 0] * R[j, 0] + tmp[i, 1] * R[j, 1] + tmp[i, 2] * R[j, 2]


@kernel(inline="always")
def matvec(A, x, out):
    """out = A x."""
    for i in range(3):
        out[i] = A[i, 0] * x[0] + A[i, 1] * x[1] + A[i, 2] * x[2]


@kernel(inline="always")
def matvec_t(A, x, out):
    """out = Aᵀ x."""
    for i in range(3):
        out[i] = A[0, i] * x[0] + A[1, i] * x[1] + A[2, i] * x[2]


@kernel(inline="always")
def cross(a, b, out):
    """out = a × b."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@kernel(inline="always")
def inverse_symmetric(A, out):
    """out = A⁻¹ for a symmetric positive definite 3×3 A (cofactors)."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[0, 1] = (A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]) * inv
    out[0, 2] = (A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]) * inv
    out[1, 0] = c01 * inv
    out[1, 1] = (A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]) * inv
    out[1, 2] = (A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]) * inv
    out[2, 0] = c02 * inv
    out[2, 1] = (A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]) * inv
    out[2, 2] = (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]) * inv
