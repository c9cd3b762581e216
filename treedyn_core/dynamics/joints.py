"""Joint forces (docs/design.md §2): the spring, the damper, and gravity's stiffness block.

All torques are on the child limb B about its joint, in B's axes; the parent
receives the equal and opposite torque through the articulated-body recursion
(a joint torque is internal to the tree). Allocation-free, for the compiled loops.
"""

from __future__ import annotations

import math

from ..numerics import mat3 as m3
from ..numerics import so3
from ..numerics.kernel import kernel
from ..numerics.so3 import SMALL_ANGLE

# Below this tan(φ/2) the error rotation uses the series atan(t)/t = Σ_k (−1)^k t^2k/(2k + 1)
# to t²⁰ instead of atan2; the first term left out, t²²/23, is below 2e-17 there.
_HALF_TANGENT_LIMIT = 0.2


@kernel(inline="always")
def spring_torque(R_rel, C_spring, K, k_scale):
    """Spring torque and energy of one joint.

    R_rel : (3, 3) joint rotation C_AB, child → parent axes
    C_spring : (3, 3) spring rest orientation C_ab, child → parent axes
    K : (3, 3) N m/rad, stiffness in the child's axes; k_scale multiplies it

    Returns (θ, τ, V): θ rad, rotation vector of the error attitude E = C_abᵀ C_AB;
    τ N m, τ_B = −J_r(θ)⁻ᵀ K θ, the exact gradient of V = ½ θᵀ K θ (J); vectors as tuples.
    """
    theta, phi, sin_phi, cos_phi = error_rotation_vector(R_rel, C_spring)
    cot_half = (1.0 + cos_phi) / sin_phi if phi >= SMALL_ANGLE else 0.0
    return _spring_gradient(theta, _gradient_coefficient(phi, cot_half), K, k_scale)


@kernel(inline="always")
def spring_torque_q(q, q_spring, K, k_scale):
    """`spring_torque` from unit quaternions: q the joint rotation, q_spring the spring's rest
    orientation ((4,) [w, x, y, z], child → parent). The same (θ, τ, V), cheaper: the error
    quaternion takes 16 products where E = C_abᵀ C_AB takes 27, and needs no case near π."""
    theta, b = error_rotation_vector_q(q, q_spring)
    return _spring_gradient(theta, b, K, k_scale)


@kernel(inline="always")
def _spring_gradient(theta, b, K, k_scale):
    """(θ, τ, V) of `spring_torque` from θ and b = 1/φ² − cot(φ/2)/(2φ), φ = |θ|: the
    coefficient of J_r⁻ᵀ y = y − ½ θ×y + b θ×(θ×y) (b = 1/12 + φ²/720 + … near 0)."""
    y = m3.vscale(k_scale, m3.matvec(m3.load(K), theta))
    c = m3.cross(theta, y)
    tau = m3.vscale(-1.0, m3.vadd(m3.vsub(y, m3.vscale(0.5, c)), m3.vscale(b, m3.cross(theta, c))))
    return theta, tau, 0.5 * m3.dot(theta, y)


@kernel(inline="always")
def _gradient_coefficient(phi, cot_half):
    """J_r⁻ᵀ's coefficient b = 1/φ² − cot(φ/2)/(2φ) from φ and cot(φ/2); below φ = 1e-4, where
    the difference cancels, its series 1/12 + φ²/720 (cot_half unused)."""
    if phi < SMALL_ANGLE:
        return 1.0 / 12.0 + phi * phi / 720.0
    return 1.0 / (phi * phi) - cot_half / (2.0 * phi)


@kernel(inline="always")
def _atan_series(u):
    """(atan(t)/t, (1 − atan(t)/t)/u) for u = t², 0 ≤ t ≤ `_HALF_TANGENT_LIMIT`, exact to
    round-off and without cancellation at small t.

    R = (1 − atan(t)/t)/u = Σ_k (−1)^k u^k/(2k + 3), k = 0 … 10 (the first term left out,
    u¹¹/25, is below 2e-17 of R), by Estrin's scheme (pairs of terms, then pairs of pairs: a
    dependency chain of 5 operations where Horner's takes 11); atan(t)/t = 1 − u R.
    """
    u2 = u * u
    u4 = u2 * u2
    low = (1.0 / 3.0 - u / 5.0) + u2 * (1.0 / 7.0 - u / 9.0)
    mid = (1.0 / 11.0 - u / 13.0) + u2 * (1.0 / 15.0 - u / 17.0)
    high = (1.0 / 19.0 - u / 21.0) + u2 * (1.0 / 23.0)
    R = low + u4 * (mid + u4 * high)
    return 1.0 - u * R, R


@kernel(inline="always")
def error_rotation_vector_q(q, q_spring):
    """θ = log(E)^∨ of the error attitude E = C_springᵀ R_rel, from unit quaternions
    ((4,) [w, x, y, z]): e = q_spring* ⊗ q = ±(cos(φ/2), sin(φ/2) n), θ = φ n.

    Returns (θ as a tuple, b = 1/φ² − cot(φ/2)/(2φ), J_r⁻ᵀ's coefficient for `_spring_gradient`),
    φ = |θ| ∈ [0, π].
    """
    s = q_spring
    if q[0] == s[0] and q[1] == s[1] and q[2] == s[2] and q[3] == s[3]:
        # At the rest orientation exactly: no error. (The products below cancel only to the
        # rounding of one of them once the compiler fuses them into multiply-adds, while
        # E = C_springᵀ R_rel is exactly symmetric for equal matrices: an unloaded spring
        # must give exactly no torque, or a static solve takes round-off for a load.)
        return (0.0, 0.0, 0.0), 1.0 / 12.0
    w, x, y, z = so3.quat_conj_mul(s, q)
    if w < 0.0:  # −e is the same rotation: take the one with φ ≤ π
        w, x, y, z = -w, -x, -y, -z
    v2 = x * x + y * y + z * z
    if v2 < (_HALF_TANGENT_LIMIT * w) ** 2:
        # t = tan(φ/2) = |v|/w ≤ 0.2 (nearly every joint): with S = atan(t)/t, φ = 2 t S and
        # cot(φ/2) = 1/t give θ = 2 S v/w and b = (1 − S)/(4 t² S²), all from u = t² = |v|²/w²
        # by `_atan_series`: no square root, no atan2, no cancellation in b as φ → 0.
        inv = 1.0 / w
        S, R = _atan_series(v2 * inv * inv)
        return m3.vscale(2.0 * S * inv, (x, y, z)), R / (4.0 * S * S)
    v = math.sqrt(v2)
    phi = 2.0 * math.atan2(v, w)
    return m3.vscale(phi / v, (x, y, z)), _gradient_coefficient(phi, w / v)


@kernel(inline="always")
def error_rotation_vector(R_rel, C_spring):
    """θ = log(E)^∨, E = C_springᵀ R_rel (rad), from E's trace and skew part.

    Returns (θ, φ, sin φ, cos φ): θ as a tuple and the error angle φ = |θ|.
    """
    E00 = C_spring[0, 0] * R_rel[0, 0] + C_spring[1, 0] * R_rel[1, 0] + C_spring[2, 0] * R_rel[2, 0]
    E11 = C_spring[0, 1] * R_rel[0, 1] + C_spring[1, 1] * R_rel[1, 1] + C_spring[2, 1] * R_rel[2, 1]
    E22 = C_spring[0, 2] * R_rel[0, 2] + C_spring[1, 2] * R_rel[1, 2] + C_spring[2, 2] * R_rel[2, 2]
    E01 = C_spring[0, 0] * R_rel[0, 1] + C_spring[1, 0] * R_rel[1, 1] + C_spring[2, 0] * R_rel[2, 1]
    E10 = C_spring[0, 1] * R_rel[0, 0] + C_spring[1, 1] * R_rel[1, 0] + C_spring[2, 1] * R_rel[2, 0]
    E02 = C_spring[0, 0] * R_rel[0, 2] + C_spring[1, 0] * R_rel[1, 2] + C_spring[2, 0] * R_rel[2, 2]
    E20 = C_spring[0, 2] * R_rel[0, 0] + C_spring[1, 2] * R_rel[1, 0] + C_spring[2, 2] * R_rel[2, 0]
    E12 = C_spring[0, 1] * R_rel[0, 2] + C_spring[1, 1] * R_rel[1, 2] + C_spring[2, 1] * R_rel[2, 2]
    E21 = C_spring[0, 2] * R_rel[0, 1] + C_spring[1, 2] * R_rel[1, 1] + C_spring[2, 2] * R_rel[2, 1]
    c = 0.5 * (E00 + E11 + E22 - 1.0)
    w = (0.5 * (E21 - E12), 0.5 * (E02 - E20), 0.5 * (E10 - E01))
    s = math.sqrt(m3.dot(w, w))
    if s < _HALF_TANGENT_LIMIT * (1.0 + c):
        # φ = 2 atan t with t = tan(φ/2) = sin φ / (1 + cos φ) ≤ 0.2 (φ < 22.6°, nearly every
        # joint): the series of atan(t)/t (`_atan_series`) is exact to round-off and cheaper than
        # atan2 (which costs 40 % of a joint's forces).
        inv = 1.0 / (1.0 + c)
        t = s * inv
        series = _atan_series(t * t)[0]
        return m3.vscale(2.0 * series * inv, w), 2.0 * t * series, s, c  # 2 series inv = φ/sin φ
    phi = math.atan2(s, c)
    if phi < so3.NEAR_PI:
        return m3.vscale(phi / s, w), phi, s, c
    # Near π the skew part vanishes: take the axis from the symmetric part (see so3.log).
    d0 = E00 - c
    d1 = E11 - c
    d2 = E22 - c
    if d0 >= d1 and d0 >= d2:
        a = (d0, 0.5 * (E01 + E10), 0.5 * (E02 + E20))
    elif d1 >= d2:
        a = (0.5 * (E01 + E10), d1, 0.5 * (E12 + E21))
    else:
        a = (0.5 * (E02 + E20), 0.5 * (E12 + E21), d2)
    sign = 1.0 if m3.dot(a, w) >= 0.0 else -1.0
    return m3.vscale(sign * phi / math.sqrt(m3.dot(a, a)), a), phi, s, c


@kernel(inline="always")
def gravity_stiffness_psd(mass, rho, g):
    """Positive-semidefinite part of a rigid subtree's gravity stiffness about its joint.

    mass : kg, the subtree's mass;  rho : (3,) m, its centre of mass relative to the joint;
    g : (3,) m/s². Returns the 3×3 matrix, N m/rad, in the axes of rho and g (docs/design.md §4),
    as a `mat3` tuple. (Only m ρ matters: `gravity_stiffness_psd(1, m ρ, g)` is the same.)

    Rotating the subtree by δφ changes V = −m g·ρ by ½ δφᵀ K_g δφ with
    K_g = m [(g·ρ) 1 − sym(g ρᵀ)], whose eigenvalues are m|g||ρ| (1 + c)/2 along a − b,
    m|g||ρ| (c − 1)/2 ≤ 0 along a + b and m|g||ρ| c along a × b (a = ĝ, b = ρ̂, c = a·b).
    The negative ones are removed in closed form (no eigen-solver in the step), written with
    P = g·ρ and Q = |g||ρ| so that it costs one square root and one division:
    c ≥ 0: K_g less λ2 e eᵀ/|e|² along e = a + b;  c < 0: λ1 e eᵀ/|e|² along e = a − b, with
    Q e eᵀ = (|ρ|/|g|) g gᵀ ± (g ρᵀ + ρ gᵀ) + (|g|/|ρ|) ρ ρᵀ, and λ2 e eᵀ/|e|² = −κ Q e eᵀ,
    λ1 e eᵀ/|e|² = κ Q e eᵀ with κ = (Q − |P|)/(4 Q (Q + |P|)) ≥ 0.
    """
    gg = m3.dot(g, g)
    rr = m3.dot(rho, rho)
    P = m3.dot(g, rho)
    Q = math.sqrt(gg * rr)
    if Q == 0.0 or mass == 0.0:
        return m3.diagonal(0.0)
    # Both cases through κ: one division and selects, no branch on the sign of P (which the
    # drag's loads make unpredictable).
    kappa = 0.25 * (Q - abs(P)) / (Q * (Q + abs(P)))
    hanging = P >= 0.0
    diagonal = P if hanging else 0.0
    cross = kappa * Q - 0.5 if hanging else -kappa * Q
    along_g, along_rho = kappa * rr, kappa * gg
    g_rho = m3.outer(g, rho)
    K = m3.add(m3.add(m3.diagonal(diagonal), m3.scale(cross, m3.add(g_rho, m3.transpose(g_rho)))),
               m3.add(m3.scale(along_g, m3.outer(g, g)), m3.scale(along_rho, m3.outer(rho, rho))))
    return m3.scale(mass, K)


@kernel(inline="always")
def load_stiffness_magnitude(F, rho):
    """An implicit stiffness that covers the whole geometric stiffness of a force F (N) fixed
    in space at ρ (m) from the joint, N m/rad (mat3 tuple): |K| + ½|F × ρ| 1.

    Turning the joint by δφ changes the moment by −[(F·ρ) 1 − ρ Fᵀ] δφ: a symmetric part
    K = (F·ρ) 1 − sym(F ρᵀ), indefinite, and an antisymmetric one of norm ½|F × ρ|. Gravity's
    block keeps K's positive part only (docs/design.md §4); for the drag that left the willow's
    shoots diverging in a 30 m/s storm, so its negative eigenvalues are made positive
    (|K| = 2 K₊ − K, K₊ from `gravity_stiffness_psd`) and the antisymmetric norm is added.
    """
    f_rho = m3.outer(F, rho)
    K = m3.sub(m3.diagonal(m3.dot(F, rho)), m3.scale(0.5, m3.add(f_rho, m3.transpose(f_rho))))
    twist = m3.cross(F, rho)
    return m3.add(m3.sub(m3.scale(2.0, gravity_stiffness_psd(1.0, rho, F)), K),
                  m3.diagonal(0.5 * math.sqrt(m3.dot(twist, twist))))


@kernel(allocates=False)
def joint_torques(limbs, q, v, spring_q, stiffness, damping, k_scale, c_scale, implicit_kv, theta,
                  tau):
    """Spring + damper torques (N, 3), N m, child axes, of the joints of ``limbs`` (int array);
    minus implicit_kv·K v (the θh K v of
    the θ-method's right-hand side; 0 for explicit methods). q (N, 4) joint quaternions,
    spring_q (N, 4) the springs' rest orientations, both child → parent. Writes the springs'
    error rotation vectors into theta (N, 3), rad. Returns the spring energy, J."""
    energy = 0.0
    for k in range(limbs.shape[0]):
        i = limbs[k]
        theta_i, spring, V = spring_torque_q(q[i], spring_q[i], stiffness[i], k_scale)
        rate_matrix = m3.add(m3.scale(c_scale, m3.load(damping[i])),
                             m3.scale(implicit_kv * k_scale, m3.load(stiffness[i])))
        m3.vstore(theta_i, theta[i])
        m3.vstore(m3.vsub(spring, m3.matvec(rate_matrix, m3.vload(v[i]))), tau[i])
        energy += V
    return energy
