"""Symmetric tree matrices of low rank between ancestors and descendants, in O(N) memory
(docs/design.md §7): the form of M and K that `linearise` uses for trees too deep for the
block-tree pattern (a long chain has N²/2 ancestor pairs, but only N limbs).

A `LowRankTreeMatrix` A (3N, 3N) has its own diagonal blocks ``D_a`` (3×3, symmetric) and,
for a strict ancestor a of b, the blocks ``A[a, b] = U_aᵀ X_abᵀ W_b`` (and ``A[b, a]`` its
transpose), with ``U, W (N, 6, 3)`` spatial (motion, force) vectors, each at its own limb's
point, and ``X_ab`` the motion shift from a's point to b's, ``[w; v] → [w; v − s^× w]``, s the
offset from a's point to b's (its transpose shifts a force [n; F] back: ``[n + s^× F; F]``).
The joint-space mass matrix and the gravity stiffness have this form with the points the
joints' base points, U_a = [C_a; 0] joint a's motion subspace and W_b the composite body of
b's subtree acting on joint b's motion (see `linearise.lowrank_matrices`). Keeping every
vector at its own limb's point (as RBDA's algorithms do in body coordinates) rather than at
one origin keeps lever arms short: no cancellation of the large moments about a far origin.

Products and solves never form a block off the diagonal:

- ``A x`` by two passes: outward ``z_a = Σ_{c strict ancestor of a} X_ca U_c x_c`` (the
  parent's "velocity" at a's point), inward ``f_a = Σ_{b strict descendant of a} X_abᵀ W_b x_b``
  (the children's "forces" at a's point), then ``(A x)_a = D_a x_a + U_aᵀ f_a + W_aᵀ z_a``.
- ``A x = r`` by block Gaussian elimination with children before parents, the elimination
  order of `linearise.BlockTreeMatrix.factor` and so the same pivots ``P_a``: eliminating a
  subtree leaves its effect on the ancestors as a symmetric 6×6 ``Φ`` (the articulated-body
  inertia of RBDA §7.2 generalised to any W): inward, with ``Φ̄_a = Σ_children X_acᵀ Φ_c X_ac``,
  ``P_a = D_a + U_aᵀ Φ̄_a U_a``, ``B_a = U_aᵀ Φ̄_a + W_aᵀ`` (3×6),
  ``Φ_a = Φ̄_a − B_aᵀ P_a⁻¹ B_a``; a solve is then ``α_a = P_a⁻¹ (r_a − U_aᵀ φ̄_a)``,
  ``φ_a = φ̄_a + B_aᵀ α_a`` (``φ̄_a = Σ_children X_acᵀ φ_c``) inward and
  ``x_a = α_a − P_a⁻¹ B_a z_a``, ``z_child = X_a,child (z_a + U_a x_a)`` outward. The number of negative eigenvalues of A is that of
  the pivots (Sylvester's law of inertia).

All arrays are in the tree's breadth-first order (parents before children).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernel import kernel

# A pivot block counts as singular when its smallest eigenvalue is below this fraction of
# its largest (as in `linearise.BlockTreeMatrix.factor`).
SINGULAR_PIVOT = 1e-15


class LowRankTreeMatrix:
    """Symmetric (3N, 3N): diagonal blocks ``D`` (N, 3, 3) and ``A[a, b] = U_aᵀ X_abᵀ W_b`` for
    a a strict ancestor of b; ``U, W`` (N, 6, 3); ``parent`` (N,) breadth-first, −1 at the
    root; ``offset`` (N, 3) each limb's point minus its parent's (the root's: unused)."""

    def __init__(self, parent: np.ndarray, offset: np.ndarray, D: np.ndarray, U: np.ndarray,
                 W: np.ndarray):
        self.parent = np.ascontiguousarray(parent, dtype=np.int64)
        self.offset = np.ascontiguousarray(offset, dtype=float)
        self.D = np.ascontiguousarray(D, dtype=float)
        self.U = np.ascontiguousarray(U, dtype=float)
        self.W = np.ascontiguousarray(W, dtype=float)

    @property
    def n_dof(self) -> int:
        return 3 * self.D.shape[0]

    def diagonal_blocks(self) -> np.ndarray:
        """(N, 3, 3) the joints' own blocks."""
        return self.D

    def plus_diagonal(self, diagonal: np.ndarray) -> "LowRankTreeMatrix":
        """This matrix plus a block-diagonal one (N, 3, 3)."""
        return LowRankTreeMatrix(self.parent, self.offset, self.D + diagonal, self.U, self.W)

    def combined(self, other: "LowRankTreeMatrix", factor: float) -> "LowRankTreeMatrix":
        """self + factor · other (the same U and points: about the same configuration)."""
        if not (np.array_equal(other.U, self.U) and np.array_equal(other.offset, self.offset)):
            raise ValueError("combined: the matrices have different motion subspaces U")
        return LowRankTreeMatrix(self.parent, self.offset, self.D + factor * other.D, self.U,
                                 self.W + factor * other.W)

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """A x for x (3N,) or (3N, k)."""
        x = np.asarray(x, dtype=float)
        flat = x.ndim == 1
        X = np.ascontiguousarray(x.reshape(-1, 3, 1) if flat else x.reshape(-1, 3, x.shape[1]))
        Y = np.empty_like(X)
        n = self.D.shape[0]
        _lowrank_matvec(self.parent, self.offset, self.D, self.U, self.W, X, Y,
                        np.empty((n, 6)), np.empty((n, 6)))
        return Y.reshape(-1) if flat else Y.reshape(x.shape)

    def to_dense(self) -> np.ndarray:
        """The full matrix as a dense (3N, 3N) array (small trees: N matrix products)."""
        return self.matvec(np.eye(self.n_dof))

    def factor(self) -> "LowRankTreeFactor":
        """The elimination of the module's docstring (children before parents)."""
        n = self.D.shape[0]
        P_inv, B = np.empty((n, 3, 3)), np.empty((n, 3, 6))
        negative = np.zeros(n, dtype=np.int64)
        ok = _lowrank_factor(self.parent, self.offset, self.D, self.U, self.W,
                             np.zeros((n, 6, 6)), P_inv, B, negative)
        return LowRankTreeFactor(self.parent, self.offset, self.U, P_inv, B,
                                 int(negative.sum()), bool(ok))


@dataclass
class LowRankTreeFactor:
    """The elimination of a `LowRankTreeMatrix`: ``P_inv`` (N, 3, 3) the inverse pivots,
    ``B`` (N, 3, 6) the couplings to the ancestors, ``negative`` the number of negative
    eigenvalues of A (of the pivots), ``ok`` False when a pivot was singular."""

    parent: np.ndarray
    offset: np.ndarray
    U: np.ndarray
    P_inv: np.ndarray
    B: np.ndarray
    negative: int
    ok: bool

    def solve(self, r: np.ndarray) -> np.ndarray:
        """A⁻¹ r for r (3N,) or (3N, k)."""
        r = np.asarray(r, dtype=float)
        flat = r.ndim == 1
        X = np.array(r.reshape(-1, 3, 1) if flat else r.reshape(-1, 3, r.shape[1]), dtype=float)
        n = self.P_inv.shape[0]
        _lowrank_solve(self.parent, self.offset, self.U, self.P_inv, self.B, X,
                       np.empty((n, 6)))
        return X.reshape(-1) if flat else X.reshape(r.shape)


@kernel(inline="always")
def _shift_motion(v, s, out, row):
    """out[row] = the motion v (6,) moved by the offset s (3,): [w; v − s × w]."""
    out[row, 0], out[row, 1], out[row, 2] = v[0], v[1], v[2]
    out[row, 3] = v[3] - (s[1] * v[2] - s[2] * v[1])
    out[row, 4] = v[4] - (s[2] * v[0] - s[0] * v[2])
    out[row, 5] = v[5] - (s[0] * v[1] - s[1] * v[0])


@kernel(inline="always")
def _add_shifted_force(f, s, out, row):
    """out[row] += the force f (6,) moved back by the offset s (3,): [n + s × F; F]."""
    out[row, 0] += f[0] + s[1] * f[5] - s[2] * f[4]
    out[row, 1] += f[1] + s[2] * f[3] - s[0] * f[5]
    out[row, 2] += f[2] + s[0] * f[4] - s[1] * f[3]
    out[row, 3] += f[3]
    out[row, 4] += f[4]
    out[row, 5] += f[5]


@kernel
def _lowrank_matvec(parent, offset, D, U, W, X, Y, z, f):
    """Y = A X, one column at a time; z, f (N, 6) work: the strict-ancestor motions and the
    strict-descendant forces, each at its limb's point."""
    n = parent.shape[0]
    v = np.empty(6)
    for c in range(X.shape[2]):
        # Outward: z_a = X_pa (z_p + U_p x_p).
        for r in range(6):
            z[0, r] = 0.0
        for a in range(1, n):
            p = parent[a]
            for r in range(6):
                v[r] = z[p, r] + (U[p, r, 0] * X[p, 0, c] + U[p, r, 1] * X[p, 1, c]
                                  + U[p, r, 2] * X[p, 2, c])
            _shift_motion(v, offset[a], z, a)
        # Inward: f_p += X_paᵀ (f_a + W_a x_a).
        for a in range(n):
            for r in range(6):
                f[a, r] = 0.0
        for a in range(n - 1, 0, -1):
            for r in range(6):
                v[r] = f[a, r] + (W[a, r, 0] * X[a, 0, c] + W[a, r, 1] * X[a, 1, c]
                                  + W[a, r, 2] * X[a, 2, c])
            _add_shifted_force(v, offset[a], f, parent[a])
        for a in range(n):
            for k in range(3):
                acc = D[a, k, 0] * X[a, 0, c] + D[a, k, 1] * X[a, 1, c] + D[a, k, 2] * X[a, 2, c]
                for r in range(6):
                    acc += U[a, r, k] * f[a, r] + W[a, r, k] * z[a, r]
                Y[a, k, c] = acc


@kernel
def _lowrank_factor(parent, offset, D, U, W, Phi, P_inv, B, negative):
    """Inward elimination: Phi (N, 6, 6) holds Φ̄ (zero on entry), P_inv and B are filled.
    Returns False on a singular pivot."""
    n = parent.shape[0]
    P = np.empty((3, 3))
    PhiU = np.empty((6, 3))
    G = np.empty((3, 6))
    S = np.empty((6, 6))
    T = np.empty((6, 6))
    for a in range(n - 1, -1, -1):
        # Φ̄U (6×3), then B = (Φ̄U)ᵀ + Wᵀ and P = D + Uᵀ Φ̄ U.
        for r in range(6):
            for k in range(3):
                acc = 0.0
                for s in range(6):
                    acc += Phi[a, r, s] * U[a, s, k]
                PhiU[r, k] = acc
        for k in range(3):
            for r in range(6):
                B[a, k, r] = PhiU[r, k] + W[a, r, k]
        for k in range(3):
            for l in range(3):
                acc = 0.0
                for s in range(6):
                    acc += U[a, s, k] * PhiU[s, l] + U[a, s, l] * PhiU[s, k]
                P[k, l] = 0.5 * (D[a, k, l] + D[a, l, k] + acc)
        eig = np.linalg.eigvalsh(P)
        scale = max(abs(eig[0]), abs(eig[2]))
        if scale == 0.0 or min(abs(eig[0]), abs(eig[1]), abs(eig[2])) <= SINGULAR_PIVOT * scale:
            return False
        for e in range(3):
            if eig[e] < 0.0:
                negative[a] += 1
        P_inv[a] = np.linalg.inv(P)
        if a == 0:
            break
        # Φ_a = Φ̄_a − Bᵀ P⁻¹ B, moved to the parent's point and added to its Φ̄.
        for k in range(3):
            for r in range(6):
                G[k, r] = P_inv[a, k, 0] * B[a, 0, r] + P_inv[a, k, 1] * B[a, 1, r] \
                    + P_inv[a, k, 2] * B[a, 2, r]
        for r in range(6):
            for s in range(6):
                S[r, s] = Phi[a, r, s] - (B[a, 0, r] * G[0, s] + B[a, 1, r] * G[1, s]
                                          + B[a, 2, r] * G[2, s])
        # Xᵀ S X, X = [[1, 0], [−o^×, 1]]: Xᵀ moves a force back, [n + o × F; F]; as S is
        # symmetric, row r of S X is Xᵀ applied to column r of S.
        o = offset[a]
        for r in range(6):
            T[r, 0] = S[r, 0] + o[1] * S[r, 5] - o[2] * S[r, 4]
            T[r, 1] = S[r, 1] + o[2] * S[r, 3] - o[0] * S[r, 5]
            T[r, 2] = S[r, 2] + o[0] * S[r, 4] - o[1] * S[r, 3]
            T[r, 3], T[r, 4], T[r, 5] = S[r, 3], S[r, 4], S[r, 5]
        p = parent[a]
        for s in range(6):
            Phi[p, 0, s] += T[0, s] + o[1] * T[5, s] - o[2] * T[4, s]
            Phi[p, 1, s] += T[1, s] + o[2] * T[3, s] - o[0] * T[5, s]
            Phi[p, 2, s] += T[2, s] + o[0] * T[4, s] - o[1] * T[3, s]
            Phi[p, 3, s] += T[3, s]
            Phi[p, 4, s] += T[4, s]
            Phi[p, 5, s] += T[5, s]
    return True


@kernel
def _lowrank_solve(parent, offset, U, P_inv, B, X, phi):
    """In place X ← A⁻¹ X (X (N, 3, m)); phi (N, 6) work: φ̄ inward, then z outward."""
    n = parent.shape[0]
    t = np.empty(3)
    v = np.empty(6)
    for c in range(X.shape[2]):
        for a in range(n):
            for r in range(6):
                phi[a, r] = 0.0
        # Inward: α_a = P⁻¹ (r_a − Uᵀ φ̄_a) (kept in X), φ̄_p += X_paᵀ (φ̄_a + Bᵀ α_a).
        for a in range(n - 1, -1, -1):
            for k in range(3):
                acc = X[a, k, c]
                for r in range(6):
                    acc -= U[a, r, k] * phi[a, r]
                t[k] = acc
            for k in range(3):
                X[a, k, c] = P_inv[a, k, 0] * t[0] + P_inv[a, k, 1] * t[1] + P_inv[a, k, 2] * t[2]
            if a > 0:
                for r in range(6):
                    v[r] = phi[a, r] + (B[a, 0, r] * X[a, 0, c] + B[a, 1, r] * X[a, 1, c]
                                        + B[a, 2, r] * X[a, 2, c])
                _add_shifted_force(v, offset[a], phi, parent[a])
        # Outward, phi now holding z: x_a = α_a − P⁻¹ B z_a, z_child = X (z_a + U_a x_a).
        for r in range(6):
            phi[0, r] = 0.0
        for a in range(n):
            if a > 0:
                p = parent[a]
                for r in range(6):
                    v[r] = phi[p, r] + (U[p, r, 0] * X[p, 0, c] + U[p, r, 1] * X[p, 1, c]
                                        + U[p, r, 2] * X[p, 2, c])
                _shift_motion(v, offset[a], phi, a)
            for k in range(3):
                acc = 0.0
                for r in range(6):
                    acc += B[a, k, r] * phi[a, r]
                t[k] = acc
            for k in range(3):
                X[a, k, c] -= P_inv[a, k, 0] * t[0] + P_inv[a, k, 1] * t[1] + P_inv[a, k, 2] * t[2]
