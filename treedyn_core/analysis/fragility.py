"""Wind load and stem breakage: the breaking moment, ForestGALES' turning moment and the
fragility curve (docs/studies.md).

- Breaking moment of the stem at breast height, M_break = (π/32)·MOR·DBH³ N·m: the elastic
  bending strength of a solid round section, the form used by ForestGALES (Gardiner et al.
  2000, Forest Ecology and Management 135; Hale et al. 2015, Forestry 88).
- ForestGALES' turning moment M = T_C·u_h² with T_C ≈ 111.7·DBH²·H (DBH, H in m; u_h the
  mean wind speed at the canopy top, m/s; Hale et al. 2012, Environmental Modelling &
  Software 27), for comparison with the simulated peaks.
- The fragility curve P(peak base moment > M_break | mean wind speed U): a lognormal CDF
  P(U) = Φ(ln(U/U50)/β) fitted by maximum likelihood to the runs' exceed / not-exceed outcomes
  (a probit regression on ln U, the usual form of fragility curves, e.g. Baker 2015,
  Earthquake Spectra 31). U50, the critical wind speed, is where P = 0.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

BREAST_HEIGHT = 1.3          # m above the stem's base, where DBH is measured
FORESTGALES_TC = 111.7       # N·m per (m²·m·(m/s)²): T_C = 111.7·DBH²·H, Hale et al. (2012)


def breaking_moment(modulus_of_rupture: float, dbh: float) -> float:
    """M_break = (π/32)·MOR·DBH³, N·m (MOR in Pa, DBH in m)."""
    return math.pi / 32.0 * modulus_of_rupture * dbh ** 3


def turning_moment_coefficient(dbh: float, height: float) -> float:
    """ForestGALES' T_C = 111.7·DBH²·H, N·m/(m/s)² (DBH, H in m)."""
    return FORESTGALES_TC * dbh ** 2 * height


def stem_diameter_at(tree, height_above_base: float = BREAST_HEIGHT) -> float:
    """Diameter, m, of the stem at `height_above_base` m above the root's base in the rest pose:
    twice the radius of the thickest limb whose rest segment spans that height."""
    z0 = tree.rest_base[0, 2]
    z = z0 + height_above_base
    low = np.minimum(tree.rest_base[:, 2], tree.rest_tip[:, 2])
    high = np.maximum(tree.rest_base[:, 2], tree.rest_tip[:, 2])
    spanning = np.flatnonzero((low <= z) & (z <= high))
    if spanning.size == 0:  # a tree shorter than breast height: its root limb
        return float(2.0 * tree.radius[0])
    return float(2.0 * tree.radius[spanning].max())


@dataclass(frozen=True)
class Fragility:
    """A fitted fragility curve P(U) = Φ(ln(U/U50)/β).

    critical_speed : U50, m/s (nan when no run exceeded or every run did: then
    `below`/`above` say which side of the studied speeds it lies);
    beta : lognormal dispersion (0: a step, the outcomes separate perfectly).
    """

    critical_speed: float
    beta: float
    runs: int
    exceeded: int

    def probability(self, speed) -> np.ndarray:
        """P(exceed) at `speed` m/s."""
        speed = np.asarray(speed, dtype=float)
        if self.beta == 0.0:
            return (speed >= self.critical_speed).astype(float)
        return special.ndtr(np.log(speed / self.critical_speed) / self.beta)


def fit_fragility(speed, exceeded) -> Fragility:
    """Maximum-likelihood lognormal fragility of outcomes `exceeded` (bool per run) at mean
    wind speeds `speed` (m/s, > 0).

    Perfectly separated outcomes (every exceeding run faster than every other) have no finite
    maximum: the curve is then a step at the midpoint of the gap, β = 0.
    """
    speed = np.asarray(speed, dtype=float)
    hit = np.asarray(exceeded, dtype=bool)
    keep = speed > 0
    speed, hit = speed[keep], hit[keep]
    runs, count = int(hit.size), int(hit.sum())
    if count == 0 or count == runs:
        return Fragility(float("nan"), float("nan"), runs, count)
    if speed[hit].min() > speed[~hit].max():
        return Fragility(0.5 * (speed[hit].min() + speed[~hit].max()), 0.0, runs, count)
    log_speed = np.log(speed)

    def negative_log_likelihood(theta):
        z = (log_speed - theta[0]) / math.exp(theta[1])
        return -(special.log_ndtr(z)[hit].sum() + special.log_ndtr(-z)[~hit].sum())

    start = np.array([0.5 * (log_speed[hit].mean() + log_speed[~hit].mean()), math.log(0.2)])
    best = optimize.minimize(negative_log_likelihood, start, method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    return Fragility(float(math.exp(best.x[0])), float(math.exp(best.x[1])), runs, count)


def empirical_fraction(speed, exceeded) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(speeds, fraction exceeding, runs) per distinct speed, sorted."""
    speed = np.asarray(speed, dtype=float)
    hit = np.asarray(exceeded, dtype=bool)
    levels = np.unique(speed)
    runs = np.array([(speed == u).sum() for u in levels])
    fraction = np.array([hit[speed == u].mean() for u in levels])
    return levels, fraction, runs
