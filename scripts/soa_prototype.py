"""A structure-of-arrays prototype of the step's largest stage, `implicit_joint_blocks`
(docs/performance.md §4): every per-limb input a row of one (47, N) array, the loop over all
limbs as numba's parallel loop. Run on one thread it vectorises, where today's kernel (an
array of 3×3 blocks per limb, a loop over a list of limbs) stays scalar; it checks that the
blocks agree and times both.

    NUMBA_NUM_THREADS=1 python scripts/soa_prototype.py [LIMBS]     # default 10000

Not used by the step: the evidence for the performance issue's item 2 (the layout and the
stages as parallel loops over ranges of limbs).
"""

from __future__ import annotations

import math
import re
import sys

import numba
import numpy as np
from numba import njit

from treedyn_core.bench.performance import _compiled, _median_seconds, tree_of_size
from treedyn_core.dynamics.articulated import (ImplicitTerms, implicit_joint_blocks,
                                               limb_inertias, subtree_sums)
from treedyn_core.simulation import Simulation

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
# X's rows: C_IF (9), stiffness (9), damping (9), tau (3), omega_rel (3), base (3), sub_m (1),
# sub_h (3), sub_fw (1), sub_fh (3), sub_f (3).
ROWS = (("C_IF", 9), ("stiffness", 9), ("damping", 9), ("tau", 3), ("omega_rel", 3),
        ("base", 3), ("sub_m", 1), ("sub_h", 3), ("sub_fw", 1), ("sub_fh", 3), ("sub_f", 3))


@njit(inline="always")
def _positive_part(a0, a1, a2, r0, r1, r2):
    """The positive part of (a·r) 1 − sym(a rᵀ) as its upper triangle (00, 01, 02, 11, 12,
    22): `joints.gravity_stiffness_psd(1, r, a)` written out, without its early return."""
    rr = r0 * r0 + r1 * r1 + r2 * r2
    aa = a0 * a0 + a1 * a1 + a2 * a2
    P = a0 * r0 + a1 * r1 + a2 * r2
    Q = math.sqrt(aa * rr)
    kappa = 0.25 * (Q - abs(P)) / (Q * (Q + abs(P)) + 1e-300)
    hanging = P >= 0.0
    diagonal = P if hanging else 0.0
    cross = kappa * Q - 0.5 if hanging else -kappa * Q
    along_a, along_r = kappa * rr, kappa * aa
    return (diagonal + 2 * cross * a0 * r0 + along_a * a0 * a0 + along_r * r0 * r0,
            cross * (a0 * r1 + r0 * a1) + along_a * a0 * a1 + along_r * r0 * r1,
            cross * (a0 * r2 + r0 * a2) + along_a * a0 * a2 + along_r * r0 * r2,
            diagonal + 2 * cross * a1 * r1 + along_a * a1 * a1 + along_r * r1 * r1,
            cross * (a1 * r2 + r1 * a2) + along_a * a1 * a2 + along_r * r1 * r2,
            diagonal + 2 * cross * a2 * r2 + along_a * a2 * a2 + along_r * r2 * r2)


@njit(inline="always")
def _implicit(k00, k01, k02, k11, k12, k22, h2, rate_h, w0, w1, w2,
              d00, d01, d02, d11, d12, d22, q0, q1, q2):
    """`articulated._implicit_stiffness` on upper triangles: d + h2 K and q − K rate_h ω."""
    v0, v1, v2 = rate_h * w0, rate_h * w1, rate_h * w2
    return (d00 + h2 * k00, d01 + h2 * k01, d02 + h2 * k02, d11 + h2 * k11, d12 + h2 * k12,
            d22 + h2 * k22, q0 - (k00 * v0 + k01 * v1 + k02 * v2),
            q1 - (k01 * v0 + k11 * v1 + k12 * v2), q2 - (k02 * v0 + k12 * v1 + k22 * v2))


@njit(fastmath=FASTMATH, error_model="numpy", boundscheck=False, parallel=True)
def blocks_soa(X, g0, g1, g2, ak, ac, gh2, grh, lh2, lrh, Y):
    """`implicit_joint_blocks` for every limb, the inputs rows of X (`ROWS`), D0's upper
    triangles rows 0–5 of Y and Q rows 6–8; g the gravity (m/s²); ak, ac, gh2, grh, lh2, lrh
    the `ImplicitTerms` (θ-method, not about references)."""
    n = X.shape[1]
    for i in numba.prange(n):
        c00, c01, c02 = X[0, i], X[1, i], X[2, i]
        c10, c11, c12 = X[3, i], X[4, i], X[5, i]
        c20, c21, c22 = X[6, i], X[7, i], X[8, i]
        # S = ak K + ac D (general 3x3, limb axes)
        s00 = ak * X[9, i] + ac * X[18, i]
        s01 = ak * X[10, i] + ac * X[19, i]
        s02 = ak * X[11, i] + ac * X[20, i]
        s10 = ak * X[12, i] + ac * X[21, i]
        s11 = ak * X[13, i] + ac * X[22, i]
        s12 = ak * X[14, i] + ac * X[23, i]
        s20 = ak * X[15, i] + ac * X[24, i]
        s21 = ak * X[16, i] + ac * X[25, i]
        s22 = ak * X[17, i] + ac * X[26, i]
        # T = C S
        t00 = c00 * s00 + c01 * s10 + c02 * s20
        t01 = c00 * s01 + c01 * s11 + c02 * s21
        t02 = c00 * s02 + c01 * s12 + c02 * s22
        t10 = c10 * s00 + c11 * s10 + c12 * s20
        t11 = c10 * s01 + c11 * s11 + c12 * s21
        t12 = c10 * s02 + c11 * s12 + c12 * s22
        t20 = c20 * s00 + c21 * s10 + c22 * s20
        t21 = c20 * s01 + c21 * s11 + c22 * s21
        t22 = c20 * s02 + c21 * s12 + c22 * s22
        # D = T C^T (symmetric part stored)
        d00 = t00 * c00 + t01 * c01 + t02 * c02
        d01 = t00 * c10 + t01 * c11 + t02 * c12
        d02 = t00 * c20 + t01 * c21 + t02 * c22
        d11 = t10 * c10 + t11 * c11 + t12 * c12
        d12 = t10 * c20 + t11 * c21 + t12 * c22
        d22 = t20 * c20 + t21 * c21 + t22 * c22
        ta0, ta1, ta2 = X[27, i], X[28, i], X[29, i]
        q0 = c00 * ta0 + c01 * ta1 + c02 * ta2
        q1 = c10 * ta0 + c11 * ta1 + c12 * ta2
        q2 = c20 * ta0 + c21 * ta1 + c22 * ta2
        w0, w1, w2 = X[30, i], X[31, i], X[32, i]
        b0, b1, b2 = X[33, i], X[34, i], X[35, i]
        # gravity's block: the positive part of the subtree's stiffness, m ρ = sub_h − sub_m b
        m = X[36, i]
        k00, k01, k02, k11, k12, k22 = _positive_part(
            g0, g1, g2, X[37, i] - m * b0, X[38, i] - m * b1, X[39, i] - m * b2)
        d00, d01, d02, d11, d12, d22, q0, q1, q2 = _implicit(
            k00, k01, k02, k11, k12, k22, gh2, grh, w0, w1, w2,
            d00, d01, d02, d11, d12, d22, q0, q1, q2)
        # the loads' block (drag): F = sub_f / sub_fw at ρ = sub_fh − sub_fw b
        fw = X[40, i]
        inv = 1.0 / fw if fw > 0.0 else 0.0
        F0, F1, F2 = X[44, i] * inv, X[45, i] * inv, X[46, i] * inv
        p0, p1, p2 = X[41, i] - fw * b0, X[42, i] - fw * b1, X[43, i] - fw * b2
        k00, k01, k02, k11, k12, k22 = _positive_part(F0, F1, F2, p0, p1, p2)
        Fp = F0 * p0 + F1 * p1 + F2 * p2
        x0, x1, x2 = F1 * p2 - F2 * p1, F2 * p0 - F0 * p2, F0 * p1 - F1 * p0
        twist = 0.5 * math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
        on = fw > 0.0
        # |K| = 2 K₊ − K with K = (F·ρ) 1 − sym(F ρᵀ)
        d00, d01, d02, d11, d12, d22, q0, q1, q2 = _implicit(
            2 * k00 - Fp + F0 * p0 + twist, 2 * k01 + 0.5 * (F0 * p1 + p0 * F1),
            2 * k02 + 0.5 * (F0 * p2 + p0 * F2), 2 * k11 - Fp + F1 * p1 + twist,
            2 * k12 + 0.5 * (F1 * p2 + p1 * F2), 2 * k22 - Fp + F2 * p2 + twist,
            lh2 if on else 0.0, lrh if on else 0.0, w0, w1, w2,
            d00, d01, d02, d11, d12, d22, q0, q1, q2)
        Y[0, i] = d00
        Y[1, i] = d01
        Y[2, i] = d02
        Y[3, i] = d11
        Y[4, i] = d12
        Y[5, i] = d22
        Y[6, i] = q0
        Y[7, i] = q1
        Y[8, i] = q2


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    sim = Simulation.from_data(tree_of_size(n), threads=1)
    sim.step(30)
    w, model, dt = sim.workspace, sim.articulated_model(), sim.dt
    th = sim.theta_method * dt
    limbs = np.arange(sim.tree.n)
    limb_inertias(limbs, model, w, w.aero_force, w.aero_torque, 4 * dt, False, w.vdot, w.vdot)
    subtree_sums(limbs, model, w, True, True)
    terms = ImplicitTerms(th * th * sim.stiffness_scale, th * sim.damping_scale, th * th, th,
                          16 * dt * dt, 4 * dt, 4 * dt, False)
    today = _compiled(implicit_joint_blocks, limbs, model, w, terms, w.vdot, w.vdot)
    today()
    arrays = {"C_IF": w.C_IF, "stiffness": model.stiffness, "damping": model.damping,
              "tau": w.tau, "omega_rel": w.omega_rel, "base": w.base, "sub_m": w.sub_m,
              "sub_h": w.sub_h, "sub_fw": w.sub_fw, "sub_fh": w.sub_fh, "sub_f": w.sub_f}
    X = np.ascontiguousarray(np.vstack([arrays[name].reshape(sim.tree.n, -1).T
                                        for name, _ in ROWS]))
    Y = np.zeros((9, sim.tree.n))
    args = (X, *model.gravity, terms.armature_k, terms.armature_c, terms.gravity_h2,
            terms.gravity_rate_h, terms.load_h2, terms.load_rate_h, Y)
    blocks_soa(*args)
    scale = max(np.abs(w.D0).max(), np.abs(w.Q).max())
    print(f"largest difference from the kernel's blocks: "
          f"{max(np.abs(Y[:6].T - w.D0).max(), np.abs(Y[6:].T - w.Q).max()) / scale:.1e} of "
          f"the largest entry")
    asm = blocks_soa.inspect_asm(blocks_soa.signatures[0])
    packed = len(re.findall(r"\bv\w+pd\b", asm))
    scalar = len(re.findall(r"\bv\w+sd\b", asm))
    print(f"machine code: {packed} packed, {scalar} scalar double-precision instructions "
          f"({numba.get_num_threads()} thread(s))")
    for _ in range(3):
        print(f"{sim.tree.n} limbs: today's kernel {_median_seconds(today) * 1e3:.3f} ms, "
              f"structure of arrays {_median_seconds(lambda: blocks_soa(*args)) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
