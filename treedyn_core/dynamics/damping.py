"""Structural damping whose ratio is the lowest sway mode's (``material.damping_model:
stiffness_proportional``).

The per-joint rule (``joint``: c_i = 2ζ·sqrt(k_i·J_ii), J_ii the subtree's inertia about the
joint) gives every joint, taken alone with its subtree rigid, the ratio ζ; a whole tree's
sway modes bend many joints at once and get much less (about a third of ζ for a generated
spruce). Field studies report the damping ratio of the lowest sway mode (pull-and-release
tests, e.g. Moore & Maguire 2004, Trees 18; Jonsson et al. 2007, Trees 21). Here
the damping is stiffness-proportional, as in the internal friction of wood, whose loss
factor barely depends on frequency (Niklas 1992, Plant Biomechanics):

    C = β·K_spring,   β = 2ζ·ω₁ / (φ₁ᵀ K_spring φ₁),

with ω₁ and φ₁ (mass-normalised) the lowest undamped mode of the tree at its rest pose under
gravity, K = K_spring + K_gravity. Then φ₁ᵀCφ₁ = 2ζω₁: the lowest mode has exactly ζ in
still air with the drag off (to the coupling of modes through C, which vanishes without
gravity), and a higher mode k has about ζ·ω_k/ω₁, as wood's higher modes damp more.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from .linearise import Configuration, gravity_stiffness, mass_matrix

# Dense eigen-solver up to this many degrees of freedom, ARPACK beyond.
DENSE_DOF_LIMIT = 600


def lowest_mode(tree, gravity: np.ndarray, k_scale: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(ω₁² rad²/s², φ₁ (3N,) mass-normalised, K_spring blocks (N, 3, 3) N m/rad) of the tree
    at its rest pose under `gravity` (m/s²) with stiffnesses × `k_scale`. Without gravity if
    gravity makes the lowest eigenvalue non-positive (an unstable tree, reported by `modes`)."""
    config = Configuration(SimpleNamespace(tree=tree, gravity=gravity), tree.rest_C_rel)
    M = mass_matrix(config).to_sparse()
    K_spring = k_scale * 0.5 * (tree.stiffness + np.transpose(tree.stiffness, (0, 2, 1)))
    K_s = scipy.sparse.block_diag(list(K_spring), format="csc")
    for K in (gravity_stiffness(config).to_sparse() + K_s, K_s):
        omega2, phi = _lowest(K, M)
        if omega2 > 0.0:
            break
    phi = phi / np.sqrt(phi @ (M @ phi))
    return float(omega2), phi, K_spring


def _lowest(K, M) -> tuple[float, np.ndarray]:
    n = K.shape[0]
    if n <= DENSE_DOF_LIMIT:
        w, v = scipy.linalg.eigh(K.toarray(), M.toarray(), subset_by_index=[0, 0])
        return float(w[0]), v[:, 0]
    scale = float(np.max(np.abs(K.diagonal()) / M.diagonal()))
    w, v = scipy.sparse.linalg.eigsh(K, k=1, M=M, sigma=-1e-9 * scale, which="LM",
                                     v0=np.cos(np.arange(n) * 0.7) + 1.5)
    return float(w[0]), v[:, 0]


def stiffness_proportional(tree, ratio: float, gravity: np.ndarray, k_scale: float) -> np.ndarray:
    """Damping C = β·k_scale·K (N, 3, 3) N m s/rad, child axes, giving the tree's lowest mode
    the damping ratio `ratio` (module docstring)."""
    omega2, phi, K_spring = lowest_mode(tree, gravity, k_scale)
    Phi = phi.reshape(-1, 3)
    strain = float(np.einsum("ni,nij,nj->", Phi, K_spring, Phi))
    beta = 2.0 * ratio * np.sqrt(omega2) / strain
    return beta * K_spring
