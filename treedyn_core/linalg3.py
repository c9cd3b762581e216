"""Allocation-free 3-vector and 3×3 matrix helpers for the compiled per-limb loops.

Each writes into `out` so that a loop over 10,000 limbs allocates nothing. The
inputs are read into locals first: `out` may alias an input, and the compiler
keeps the values in registers instead of reloading them after every store
(twice as fast as the same products written as loops).
"""

from __future__ import annotations

from .kernel import kernel


@kernel(inline="always")
def matmul(A, B, out):
    """out = A B."""
    a00, a01, a02 = A[0, 0], A[0, 1], A[0, 2]
    a10, a11, a12 = A[1, 0], A[1, 1], A[1, 2]
    a20, a21, a22 = A[2, 0], A[2, 1], A[2, 2]
    b00, b01, b02 = B[0, 0], B[0, 1], B[0, 2]
    b10, b11, b12 = B[1, 0], B[1, 1], B[1, 2]
    b20, b21, b22 = B[2, 0], B[2, 1], B[2, 2]
    out[0, 0] = a00 * b00 + a01 * b10 + a02 * b20
    out[0, 1] = a00 * b01 + a01 * b11 + a02 * b21
    out[0, 2] = a00 * b02 + a01 * b12 + a02 * b22
    out[1, 0] = a10 * b00 + a11 * b10 + a12 * b20
    out[1, 1] = a10 * b01 + a11 * b11 + a12 * b21
    out[1, 2] = a10 * b02 + a11 * b12 + a12 * b22
    out[2, 0] = a20 * b00 + a21 * b10 + a22 * b20
    out[2, 1] = a20 * b01 + a21 * b11 + a22 * b21
    out[2, 2] = a20 * b02 + a21 * b12 + a22 * b22


@kernel(inline="always")
def matmul_tn(A, B, out):
    """out = Aᵀ B."""
    a00, a01, a02 = A[0, 0], A[1, 0], A[2, 0]
    a10, a11, a12 = A[0, 1], A[1, 1], A[2, 1]
    a20, a21, a22 = A[0, 2], A[1, 2], A[2, 2]
    b00, b01, b02 = B[0, 0], B[0, 1], B[0, 2]
    b10, b11, b12 = B[1, 0], B[1, 1], B[1, 2]
    b20, b21, b22 = B[2, 0], B[2, 1], B[2, 2]
    out[0, 0] = a00 * b00 + a01 * b10 + a02 * b20
    out[0, 1] = a00 * b01 + a01 * b11 + a02 * b21
    out[0, 2] = a00 * b02 + a01 * b12 + a02 * b22
    out[1, 0] = a10 * b00 + a11 * b10 + a12 * b20
    out[1, 1] = a10 * b01 + a11 * b11 + a12 * b21
    out[1, 2] = a10 * b02 + a11 * b12 + a12 * b22
    out[2, 0] = a20 * b00 + a21 * b10 + a22 * b20
    out[2, 1] = a20 * b01 + a21 * b11 + a22 * b21
    out[2, 2] = a20 * b02 + a21 * b12 + a22 * b22


@kernel(inline="always")
def congruence(R, S, out):
    """out = R S Rᵀ for a symmetric S (rotate it into the frame R maps to)."""
    r00, r01, r02 = R[0, 0], R[0, 1], R[0, 2]
    r10, r11, r12 = R[1, 0], R[1, 1], R[1, 2]
    r20, r21, r22 = R[2, 0], R[2, 1], R[2, 2]
    s00, s01, s02 = S[0, 0], S[0, 1], S[0, 2]
    s11, s12, s22 = S[1, 1], S[1, 2], S[2, 2]
    # T = R S
    t00 = r00 * s00 + r01 * s01 + r02 * s02
    t01 = r00 * s01 + r01 * s11 + r02 * s12
    t02 = r00 * s02 + r01 * s12 + r02 * s22
    t10 = r10 * s00 + r11 * s01 + r12 * s02
    t11 = r10 * s01 + r11 * s11 + r12 * s12
    t12 = r10 * s02 + r11 * s12 + r12 * s22
    t20 = r20 * s00 + r21 * s01 + r22 * s02
    t21 = r20 * s01 + r21 * s11 + r22 * s12
    t22 = r20 * s02 + r21 * s12 + r22 * s22
    out[0, 0] = t00 * r00 + t01 * r01 + t02 * r02
    out[1, 1] = t10 * r10 + t11 * r11 + t12 * r12
    out[2, 2] = t20 * r20 + t21 * r21 + t22 * r22
    out[0, 1] = out[1, 0] = t00 * r10 + t01 * r11 + t02 * r12
    out[0, 2] = out[2, 0] = t00 * r20 + t01 * r21 + t02 * r22
    out[1, 2] = out[2, 1] = t10 * r20 + t11 * r21 + t12 * r22


@kernel(inline="always")
def matvec(A, x, out):
    """out = A x."""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0] = A[0, 0] * x0 + A[0, 1] * x1 + A[0, 2] * x2
    out[1] = A[1, 0] * x0 + A[1, 1] * x1 + A[1, 2] * x2
    out[2] = A[2, 0] * x0 + A[2, 1] * x1 + A[2, 2] * x2


@kernel(inline="always")
def matvec_t(A, x, out):
    """out = Aᵀ x."""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0] = A[0, 0] * x0 + A[1, 0] * x1 + A[2, 0] * x2
    out[1] = A[0, 1] * x0 + A[1, 1] * x1 + A[2, 1] * x2
    out[2] = A[0, 2] * x0 + A[1, 2] * x1 + A[2, 2] * x2


@kernel(inline="always")
def cross(a, b, out):
    """out = a × b."""
    a0, a1, a2 = a[0], a[1], a[2]
    b0, b1, b2 = b[0], b[1], b[2]
    out[0] = a1 * b2 - a2 * b1
    out[1] = a2 * b0 - a0 * b2
    out[2] = a0 * b1 - a1 * b0
