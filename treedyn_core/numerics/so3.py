"""Rotations: SO(3) exponential and logarithm, right Jacobian, unit quaternions.

Every function is numba-compiled so that the per-step kernels can call it, and
is callable from Python too. Rotation matrices map the rotated frame's
coordinates to the reference frame's (``C_IF`` maps limb → inertial), and a
rotation vector ``theta`` (rad) is the axis times the angle. Quaternions are
``[w, x, y, z]`` with ``R(q ⊗ p) = R(q) R(p)``.
"""

from __future__ import annotations

import math

import numpy as np

from . import mat3 as m3
from .kernel import kernel

# Below this angle (rad) the closed forms lose digits; Taylor series are exact to round-off there.
SMALL_ANGLE = 1e-4
# Below this angle (rad) quat_advance uses a 4-term series (next term < 1e-17).
_SERIES_LIMIT = 0.1
# Above this angle (rad) log() takes the axis from the symmetric part, which stays accurate at π.
NEAR_PI = 3.0


@kernel(inline="always")
def hat_into(w, out):
    """out = w^× (3, 3), without allocating."""
    out[0, 0] = 0.0
    out[0, 1] = -w[2]
    out[0, 2] = w[1]
    out[1, 0] = w[2]
    out[1, 1] = 0.0
    out[1, 2] = -w[0]
    out[2, 0] = -w[1]
    out[2, 1] = w[0]
    out[2, 2] = 0.0


@kernel(inline="always")
def _angle(theta):
    """(φ², φ) of a rotation vector theta, rad."""
    phi2 = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]
    return phi2, math.sqrt(phi2)


@kernel
def exp(theta):
    """Rotation matrix exp(theta^×) (3, 3) of a rotation vector theta (rad)."""
    phi2, phi = _angle(theta)
    if phi < SMALL_ANGLE:
        a = 1.0 - phi2 / 6.0
        b = 0.5 - phi2 / 24.0
    else:
        a = math.sin(phi) / phi
        b = (1.0 - math.cos(phi)) / phi2
    x, y, z = theta[0], theta[1], theta[2]
    R = np.empty((3, 3))
    R[0, 0] = 1.0 - b * (y * y + z * z)
    R[1, 1] = 1.0 - b * (x * x + z * z)
    R[2, 2] = 1.0 - b * (x * x + y * y)
    R[0, 1] = -a * z + b * x * y
    R[1, 0] = a * z + b * x * y
    R[0, 2] = a * y + b * x * z
    R[2, 0] = -a * y + b * x * z
    R[1, 2] = -a * x + b * y * z
    R[2, 1] = a * x + b * y * z
    return R


@kernel
def log(R):
    """Rotation vector theta (rad, |theta| ≤ π) with exp(theta^×) = R, accurate near 0 and π."""
    out = np.empty(3)
    log_into(R, out)
    return out


@kernel
def log_into(R, out):
    """`log` writing into out (3,) without allocating."""
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    w0 = 0.5 * (R[2, 1] - R[1, 2])
    w1 = 0.5 * (R[0, 2] - R[2, 0])
    w2 = 0.5 * (R[1, 0] - R[0, 1])
    s = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    phi = math.atan2(s, c)
    if phi < NEAR_PI:
        f = 1.0 + phi * phi / 6.0 if phi < SMALL_ANGLE else phi / s  # phi / sin(phi)
        out[0] = f * w0
        out[1] = f * w1
        out[2] = f * w2
        return
    # (R + Rᵀ)/2 − cos φ·1 = (1 − cos φ) a aᵀ: take the axis from its largest column.
    k = 0
    best = -1.0
    for i in range(3):
        if R[i, i] - c > best:
            best = R[i, i] - c
            k = i
    norm = 0.0
    for i in range(3):
        out[i] = 0.5 * (R[i, k] + R[k, i]) - (c if i == k else 0.0)
        norm += out[i] * out[i]
    norm = math.sqrt(norm)
    sign = 1.0 if out[0] * w0 + out[1] * w1 + out[2] * w2 >= 0.0 else -1.0
    for i in range(3):
        out[i] *= sign * phi / norm


@kernel(inline="always")
def _hat_and_square(theta):
    """(θ^×, (θ^×)²) as (3, 3) arrays."""
    T = np.empty((3, 3))
    hat_into(theta, T)
    return T, T @ T


@kernel
def right_jacobian(theta):
    """Right Jacobian J_r(theta) (3, 3): exp((θ + δ)^×) ≈ exp(θ^×) exp((J_r δ)^×)."""
    phi2, phi = _angle(theta)
    if phi < SMALL_ANGLE:
        a = 0.5 - phi2 / 24.0
        b = 1.0 / 6.0 - phi2 / 120.0
    else:
        a = (1.0 - math.cos(phi)) / phi2
        b = (phi - math.sin(phi)) / (phi2 * phi)
    T, T2 = _hat_and_square(theta)
    out = np.eye(3)
    for i in range(3):
        for j in range(3):
            out[i, j] += -a * T[i, j] + b * T2[i, j]
    return out


@kernel
def right_jacobian_inverse(theta):
    """Inverse right Jacobian J_r⁻¹(theta) (3, 3): θ̇ = J_r⁻¹(θ) ω for R(θ)̇ = R ω^×."""
    phi2, phi = _angle(theta)
    if phi < SMALL_ANGLE:
        b = 1.0 / 12.0 + phi2 / 720.0
    else:
        b = 1.0 / phi2 - (1.0 + math.cos(phi)) / (2.0 * phi * math.sin(phi))
    T, T2 = _hat_and_square(theta)
    out = np.eye(3)
    for i in range(3):
        for j in range(3):
            out[i, j] += 0.5 * T[i, j] + b * T2[i, j]
    return out


@kernel
def quat_to_matrix(q):
    """Rotation matrix (3, 3) of a quaternion [w, x, y, z]; q need not be unit (it is normalised)."""
    R = np.empty((3, 3))
    quat_to_matrix_into(q, R)
    return R


@kernel(inline="always")
def quat_matrix(q):
    """`quat_to_matrix` as a `mat3` tuple."""
    s = 2.0 / (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    w, x, y, z = q[0], q[1], q[2], q[3]
    return (1.0 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y),
            s * (x * y + w * z), 1.0 - s * (x * x + z * z), s * (y * z - w * x),
            s * (x * z - w * y), s * (y * z + w * x), 1.0 - s * (x * x + y * y))


@kernel(inline="always")
def quat_to_matrix_into(q, R):
    """`quat_to_matrix` writing into R (3, 3) without allocating."""
    m3.store(quat_matrix(q), R)


@kernel(inline="always")
def quat_advance(q, theta):
    """q ← normalise(q ⊗ exp_q(theta)) in place: rotate a joint by theta (rad) in its own axes."""
    phi2 = theta[0] * theta[0] + theta[1] * theta[1] + theta[2] * theta[2]
    if phi2 < _SERIES_LIMIT * _SERIES_LIMIT:
        # Taylor series of sin(φ/2)/φ and cos(φ/2): exact to round-off below the limit, and
        # a step's rotation is almost always there, which spares two trigonometric calls.
        s = 0.5 + phi2 * (-1.0 / 48.0 + phi2 * (1.0 / 3840.0 - phi2 / 645120.0))
        pw = 1.0 + phi2 * (-1.0 / 8.0 + phi2 * (1.0 / 384.0 - phi2 / 46080.0))
    else:
        phi = math.sqrt(phi2)
        s = math.sin(0.5 * phi) / phi
        pw = math.cos(0.5 * phi)
    quat_store_normalised(quat_mul(q, (pw, s * theta[0], s * theta[1], s * theta[2])), q)


@kernel(inline="always")
def quat_mul(a, b):
    """a ⊗ b of quaternions [w, x, y, z] (arrays or tuples), as a tuple."""
    return (a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0])


@kernel(inline="always")
def quat_conj_mul(a, b):
    """conj(a) ⊗ b of quaternions [w, x, y, z] (arrays or tuples), as a tuple: the rotation
    from b's frame to a's when both map to a common one."""
    return (a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3],
            a[0] * b[1] - a[1] * b[0] - a[2] * b[3] + a[3] * b[2],
            a[0] * b[2] + a[1] * b[3] - a[2] * b[0] - a[3] * b[1],
            a[0] * b[3] - a[1] * b[2] + a[2] * b[1] - a[3] * b[0])


@kernel(inline="always")
def quat_store_normalised(q, out):
    """out (4,) = q / |q| for a quaternion q (tuple or array)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    n = 1.0 / math.sqrt(w * w + x * x + y * y + z * z)
    out[0] = w * n
    out[1] = x * n
    out[2] = y * n
    out[3] = z * n


@kernel
def quat_from_matrix(R):
    """Unit quaternion [w, x, y, z] (w ≥ 0) of a rotation matrix (Shepperd's method)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    q = np.empty(4)
    if tr >= R[0, 0] and tr >= R[1, 1] and tr >= R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + tr)
        q[0] = 0.25 * s
        q[1] = (R[2, 1] - R[1, 2]) / s
        q[2] = (R[0, 2] - R[2, 0]) / s
        q[3] = (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q[0] = (R[2, 1] - R[1, 2]) / s
        q[1] = 0.25 * s
        q[2] = (R[0, 1] + R[1, 0]) / s
        q[3] = (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] >= R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q[0] = (R[0, 2] - R[2, 0]) / s
        q[1] = (R[0, 1] + R[1, 0]) / s
        q[2] = 0.25 * s
        q[3] = (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q[0] = (R[1, 0] - R[0, 1]) / s
        q[1] = (R[0, 2] + R[2, 0]) / s
        q[2] = (R[1, 2] + R[2, 1]) / s
        q[3] = 0.25 * s
    if q[0] < 0.0:
        for i in range(4):
            q[i] = -q[i]
    return q


# The three functions below convert whole trees at load (N up to ~10⁵): plain numpy, so that
# building a tree and drawing its rest pose compile no kernel (the app shows the tree at once on
# a first run), with the same formulas, branches and thresholds as the compiled one-rotation
# functions above (the tests compare them).

def exp_many(thetas):
    """Rotation matrices (N, 3, 3) of N rotation vectors (N, 3) rad (`exp` of each)."""
    thetas = np.asarray(thetas, dtype=np.float64).reshape(-1, 3)
    phi2 = np.einsum("ni,ni->n", thetas, thetas)
    phi = np.sqrt(phi2)
    small = phi < SMALL_ANGLE
    safe = np.where(small, 1.0, phi)
    a = np.where(small, 1.0 - phi2 / 6.0, np.sin(safe) / safe)
    b = np.where(small, 0.5 - phi2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    x, y, z = thetas[:, 0], thetas[:, 1], thetas[:, 2]
    R = np.empty((thetas.shape[0], 3, 3))
    R[:, 0, 0] = 1.0 - b * (y * y + z * z)
    R[:, 1, 1] = 1.0 - b * (x * x + z * z)
    R[:, 2, 2] = 1.0 - b * (x * x + y * y)
    R[:, 0, 1] = -a * z + b * x * y
    R[:, 1, 0] = a * z + b * x * y
    R[:, 0, 2] = a * y + b * x * z
    R[:, 2, 0] = -a * y + b * x * z
    R[:, 1, 2] = -a * x + b * y * z
    R[:, 2, 1] = a * x + b * y * z
    return R


def quats_from_matrices(Rs):
    """Unit quaternions (N, 4) [w, x, y, z], w ≥ 0, of N rotation matrices (N, 3, 3)
    (`quat_from_matrix` of each: Shepperd's method)."""
    Rs = np.asarray(Rs, dtype=np.float64).reshape(-1, 3, 3)
    d0, d1, d2 = Rs[:, 0, 0], Rs[:, 1, 1], Rs[:, 2, 2]
    tr = d0 + d1 + d2
    # Shepperd's four cases in the kernel's order of tests: the largest of tr, d0, d1, d2.
    case = np.where((tr >= d0) & (tr >= d1) & (tr >= d2), 0,
                    np.where((d0 >= d1) & (d0 >= d2), 1, np.where(d1 >= d2, 2, 3)))
    big = np.choose(case, (1.0 + tr, 1.0 + d0 - d1 - d2, 1.0 + d1 - d0 - d2,
                           1.0 + d2 - d0 - d1))
    s = 2.0 * np.sqrt(big)
    skew = (Rs[:, 2, 1] - Rs[:, 1, 2], Rs[:, 0, 2] - Rs[:, 2, 0], Rs[:, 1, 0] - Rs[:, 0, 1])
    sym = {(0, 1): Rs[:, 0, 1] + Rs[:, 1, 0], (0, 2): Rs[:, 0, 2] + Rs[:, 2, 0],
           (1, 2): Rs[:, 1, 2] + Rs[:, 2, 1]}
    quarter = 0.25 * s
    q = np.empty((Rs.shape[0], 4))
    q[:, 0] = np.choose(case, (quarter, skew[0] / s, skew[1] / s, skew[2] / s))
    q[:, 1] = np.choose(case, (skew[0] / s, quarter, sym[0, 1] / s, sym[0, 2] / s))
    q[:, 2] = np.choose(case, (skew[1] / s, sym[0, 1] / s, quarter, sym[1, 2] / s))
    q[:, 3] = np.choose(case, (skew[2] / s, sym[0, 2] / s, sym[1, 2] / s, quarter))
    q[q[:, 0] < 0.0] *= -1.0
    return q


def log_many(Rs):
    """Rotation vectors (N, 3) rad of N rotation matrices (N, 3, 3) (`log` of each)."""
    Rs = np.asarray(Rs, dtype=np.float64).reshape(-1, 3, 3)
    c = 0.5 * (Rs[:, 0, 0] + Rs[:, 1, 1] + Rs[:, 2, 2] - 1.0)
    w = 0.5 * np.stack((Rs[:, 2, 1] - Rs[:, 1, 2], Rs[:, 0, 2] - Rs[:, 2, 0],
                        Rs[:, 1, 0] - Rs[:, 0, 1]), axis=1)
    s = np.sqrt(np.einsum("ni,ni->n", w, w))
    phi = np.arctan2(s, c)
    small = phi < SMALL_ANGLE
    f = np.where(small, 1.0 + phi * phi / 6.0, phi / np.where(small | (s == 0.0), 1.0, s))
    out = f[:, None] * w
    near = np.flatnonzero(phi >= NEAR_PI)
    if near.size:
        # (R + Rᵀ)/2 − cos φ·1 = (1 − cos φ) a aᵀ: take the axis from its largest column.
        R, cn = Rs[near], c[near]
        k = np.argmax(np.diagonal(R, axis1=1, axis2=2) - cn[:, None], axis=1)
        rows = np.arange(near.size)
        axis = 0.5 * (R[rows, :, k] + R[rows, k, :])
        axis[rows, k] -= cn
        norm = np.linalg.norm(axis, axis=1)
        sign = np.where(np.einsum("ni,ni->n", axis, w[near]) >= 0.0, 1.0, -1.0)
        out[near] = axis * (sign * phi[near] / norm)[:, None]
    return out


@kernel(inline="always")
def quat_rate(q, w, out):
    """out = ½ q ⊗ (0, w): the time derivative of a quaternion q whose frame turns at w (rad/s,
    in its own axes)."""
    out[0] = 0.5 * (-q[1] * w[0] - q[2] * w[1] - q[3] * w[2])
    out[1] = 0.5 * (q[0] * w[0] + q[2] * w[2] - q[3] * w[1])
    out[2] = 0.5 * (q[0] * w[1] - q[1] * w[2] + q[3] * w[0])
    out[3] = 0.5 * (q[0] * w[2] + q[1] * w[1] - q[2] * w[0])


def hat_many(w: np.ndarray) -> np.ndarray:
    """(..., 3, 3) cross-product matrices w^× of vectors (..., 3) (numpy, vectorised)."""
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -w[..., 2], w[..., 1]
    out[..., 1, 0], out[..., 1, 2] = w[..., 2], -w[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -w[..., 1], w[..., 0]
    return out
