"""An independent reference for tapered stems: a clamped Euler–Bernoulli cantilever of radius
r(z) = r0((H − z)/H)^q by cubic Hermite finite elements (6-point Gauss per element)."""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg


def cantilever_matrices(H, r0, q, E, rho, elements=300):
    """(K, M, h): stiffness and mass matrices (clamped end removed) and element length."""
    n = 2 * (elements + 1)
    K, M = np.zeros((n, n)), np.zeros((n, n))
    h = H / elements
    points, weights = np.polynomial.legendre.leggauss(6)
    s = 0.5 * (points + 1.0)
    N = np.stack([1 - 3 * s**2 + 2 * s**3, h * (s - 2 * s**2 + s**3), 3 * s**2 - 2 * s**3,
                  h * (s**3 - s**2)])
    B = np.stack([12 * s - 6, h * (6 * s - 4), 6 - 12 * s, h * (6 * s - 2)]) / h**2
    for e in range(elements):
        r = r0 * ((H - (e + s) * h) / H) ** q
        EI, m = E * np.pi * r ** 4 / 4.0, rho * np.pi * r ** 2
        K[2 * e:2 * e + 4, 2 * e:2 * e + 4] += (B * EI * weights) @ B.T * h / 2
        M[2 * e:2 * e + 4, 2 * e:2 * e + 4] += (N * m * weights) @ N.T * h / 2
    return K[2:, 2:], M[2:, 2:], h


def lowest_frequency_hz(H, r0, q, E, rho, elements=300):
    K, M, _ = cantilever_matrices(H, r0, q, E, rho, elements)
    omega2 = scipy.linalg.eigh(K, M, eigvals_only=True, subset_by_index=[0, 0])[0]
    return math.sqrt(omega2) / (2.0 * math.pi)


def static_deflection_m(H, r0, q, E, F, at, elements=300):
    """Deflection (m) at height `at` (a node: at/H·elements an integer) under a force F (N)
    there."""
    K, _, h = cantilever_matrices(H, r0, q, E, 1.0, elements)
    node = int(round(at / h))
    load = np.zeros(K.shape[0])
    load[2 * (node - 1)] = F
    return float(np.linalg.solve(K, load)[2 * (node - 1)])
