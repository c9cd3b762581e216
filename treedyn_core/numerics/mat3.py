"""3-vectors and 3×3 matrices as tuples, for the articulated-body recursion.

A vector is ``(x, y, z)``; a matrix is its nine entries row by row,
``(m00, m01, m02, m10, m11, m12, m20, m21, m22)``. The functions return new
tuples instead of writing into arrays: once inlined, the compiler keeps every
intermediate in registers, where work arrays would be stored and reloaded
after each write (an array write may alias any other array, so nothing can be
kept across it). The articulated-body recursion runs in 0.79 of the time this way.

They are inlined by LLVM, not by numba: numba's own inlining (``inline="always"``) types and
lowers the body again at every call, and made the articulated recursion take 18 s to compile
of a first run's 44 s (5 s without it); LLVM inlines these small functions into their callers
all the same (the recursion's time per step unchanged within the noise, 1.69–2.03 ms against
1.70–2.29 ms at 9,846 limbs, four alternating runs each).
"""

from __future__ import annotations

from .kernel import kernel


@kernel
def load(M):
    """The 3×3 array M as a tuple."""
    return (M[0, 0], M[0, 1], M[0, 2], M[1, 0], M[1, 1], M[1, 2], M[2, 0], M[2, 1], M[2, 2])


@kernel
def store(A, out):
    """Write the matrix A into the 3×3 array out."""
    out[0, 0], out[0, 1], out[0, 2] = A[0], A[1], A[2]
    out[1, 0], out[1, 1], out[1, 2] = A[3], A[4], A[5]
    out[2, 0], out[2, 1], out[2, 2] = A[6], A[7], A[8]


@kernel
def load_sym(a):
    """The symmetric matrix stored as its upper triangle a = (m00, m01, m02, m11, m12, m22)."""
    return (a[0], a[1], a[2], a[1], a[3], a[4], a[2], a[4], a[5])


@kernel
def store_sym(A, out):
    """Write the symmetric matrix A into out (6,) as its upper triangle (see `load_sym`)."""
    out[0], out[1], out[2] = A[0], A[1], A[2]
    out[3], out[4], out[5] = A[4], A[5], A[8]


@kernel
def add_into_sym(A, out):
    """out += A, A symmetric, out its upper triangle (6,) (see `load_sym`)."""
    store_sym(add(load_sym(out), A), out)


@kernel
def add_into(A, out):
    """out += A (3×3 array)."""
    store(add(load(out), A), out)


@kernel
def vload(x):
    """The 3-array x as a tuple."""
    return (x[0], x[1], x[2])


@kernel
def vstore(a, out):
    """Write the vector a into the 3-array out."""
    out[0], out[1], out[2] = a[0], a[1], a[2]


@kernel
def vadd_into(a, out):
    """out += a (3-array)."""
    out[0] += a[0]
    out[1] += a[1]
    out[2] += a[2]


@kernel
def add(A, B):
    """A + B."""
    return (A[0] + B[0], A[1] + B[1], A[2] + B[2], A[3] + B[3], A[4] + B[4], A[5] + B[5],
            A[6] + B[6], A[7] + B[7], A[8] + B[8])


@kernel
def sub(A, B):
    """A − B."""
    return (A[0] - B[0], A[1] - B[1], A[2] - B[2], A[3] - B[3], A[4] - B[4], A[5] - B[5],
            A[6] - B[6], A[7] - B[7], A[8] - B[8])


@kernel
def scale(s, A):
    """s A."""
    return (s * A[0], s * A[1], s * A[2], s * A[3], s * A[4], s * A[5], s * A[6], s * A[7],
            s * A[8])


@kernel
def transpose(A):
    """Aᵀ."""
    return (A[0], A[3], A[6], A[1], A[4], A[7], A[2], A[5], A[8])


@kernel
def mul(A, B):
    """A B."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6],
            A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
            A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6],
            A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@kernel
def mul_symmetric(A, B):
    """A B for a product known to be symmetric (A D⁻¹ Aᵀ, …): six entries, mirrored."""
    m00 = A[0] * B[0] + A[1] * B[3] + A[2] * B[6]
    m01 = A[0] * B[1] + A[1] * B[4] + A[2] * B[7]
    m02 = A[0] * B[2] + A[1] * B[5] + A[2] * B[8]
    m11 = A[3] * B[1] + A[4] * B[4] + A[5] * B[7]
    m12 = A[3] * B[2] + A[4] * B[5] + A[5] * B[8]
    m22 = A[6] * B[2] + A[7] * B[5] + A[8] * B[8]
    return (m00, m01, m02, m01, m11, m12, m02, m12, m22)


@kernel
def congruence(R, S):
    """R S Rᵀ for a symmetric S."""
    return mul_symmetric(mul(R, S), transpose(R))


@kernel
def inverse_symmetric(A):
    """A⁻¹ for a symmetric positive definite A (cofactors)."""
    c00 = A[4] * A[8] - A[5] * A[5]
    c01 = A[5] * A[2] - A[1] * A[8]
    c02 = A[1] * A[5] - A[4] * A[2]
    c11 = A[0] * A[8] - A[2] * A[2]
    c12 = A[2] * A[1] - A[0] * A[5]
    c22 = A[0] * A[4] - A[1] * A[1]
    inv = 1.0 / (A[0] * c00 + A[1] * c01 + A[2] * c02)
    c00, c01, c02, c11, c12, c22 = c00 * inv, c01 * inv, c02 * inv, c11 * inv, c12 * inv, c22 * inv
    return (c00, c01, c02, c01, c11, c12, c02, c12, c22)


@kernel
def hat(a):
    """a^×, the matrix of a × ·."""
    return (0.0, -a[2], a[1], a[2], 0.0, -a[0], -a[1], a[0], 0.0)


@kernel
def diagonal(s):
    """s 1."""
    return (s, 0.0, 0.0, 0.0, s, 0.0, 0.0, 0.0, s)


@kernel
def outer(a, b):
    """a bᵀ."""
    return (a[0] * b[0], a[0] * b[1], a[0] * b[2], a[1] * b[0], a[1] * b[1], a[1] * b[2],
            a[2] * b[0], a[2] * b[1], a[2] * b[2])


@kernel
def hat_mul(d, M):
    """d^× M: each column of M crossed with d from the left."""
    return (d[1] * M[6] - d[2] * M[3], d[1] * M[7] - d[2] * M[4], d[1] * M[8] - d[2] * M[5],
            d[2] * M[0] - d[0] * M[6], d[2] * M[1] - d[0] * M[7], d[2] * M[2] - d[0] * M[8],
            d[0] * M[3] - d[1] * M[0], d[0] * M[4] - d[1] * M[1], d[0] * M[5] - d[1] * M[2])


@kernel
def mul_hat(M, d):
    """M d^×: each row of M crossed with d from the right."""
    return (M[1] * d[2] - M[2] * d[1], M[2] * d[0] - M[0] * d[2], M[0] * d[1] - M[1] * d[0],
            M[4] * d[2] - M[5] * d[1], M[5] * d[0] - M[3] * d[2], M[3] * d[1] - M[4] * d[0],
            M[7] * d[2] - M[8] * d[1], M[8] * d[0] - M[6] * d[2], M[6] * d[1] - M[7] * d[0])


@kernel
def matvec(A, x):
    """A x."""
    return (A[0] * x[0] + A[1] * x[1] + A[2] * x[2],
            A[3] * x[0] + A[4] * x[1] + A[5] * x[2],
            A[6] * x[0] + A[7] * x[1] + A[8] * x[2])


@kernel
def matvec_t(A, x):
    """Aᵀ x."""
    return (A[0] * x[0] + A[3] * x[1] + A[6] * x[2],
            A[1] * x[0] + A[4] * x[1] + A[7] * x[2],
            A[2] * x[0] + A[5] * x[1] + A[8] * x[2])


@kernel
def vadd(a, b):
    """a + b."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@kernel
def vsub(a, b):
    """a − b."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@kernel
def vscale(s, a):
    """s a."""
    return (s * a[0], s * a[1], s * a[2])


@kernel
def dot(a, b):
    """a · b."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@kernel
def cross(a, b):
    """a × b."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])
