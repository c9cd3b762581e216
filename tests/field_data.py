"""The measured trees of `data/field_sway_frequencies.csv` (Jackson et al. 2019's compilation;
the file's header names its source) and the trees of the pull-and-release damping check, shared
by the tests and the validation figures (scripts/validation_figures.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from treedyn_core.model import species

FIELD_DATA = Path(__file__).parent / "data" / "field_sway_frequencies.csv"
TREES_PER_SPECIES = 12  # evenly over the species' trees sorted by height (keeps the tests fast)

# The trees of the pull-and-release damping check (species, stand, H m, DBH m), and the published
# ranges of pull-and-release damping ratios (docs/validation.md: Moore & Maguire 2004; Jonsson
# et al. 2007; Kane & James 2011).
DAMPING_TREES = [("picea_abies", "forest", 10.0, 0.17), ("picea_abies", "forest", 18.0, 0.3),
                 ("quercus_rubra", "open", 8.0, 0.19), ("quercus_rubra", "open", 12.0, 0.3)]
DAMPING_RANGE = {"in leaf": (0.05, 0.20), "leafless": (0.02, 0.08)}

# The grid of sizes (H m, H/DBH) of the sway-frequency check against the field relations and of
# its figure: conifers forest-grown, broadleaves open-grown.
CONIFER_SIZES = [(10.0, 60.0), (15.0, 50.0), (18.0, 70.0), (22.0, 60.0), (25.0, 80.0),
                 (30.0, 90.0)]
BROADLEAF_SIZES = [(8.0, 42.0), (12.0, 40.0), (16.0, 45.0), (22.0, 45.0)]


def measured_trees(name: str, stand: str) -> list[tuple[float, float, float]]:
    """(H m, DBH m, f0 Hz) of the measured trees of `name` grown in `stand`, within the
    allometry, at most TREES_PER_SPECIES of them evenly over their heights."""
    low, high = species.table()["limits"]["height_m"]
    thin, thick = species.table()["limits"]["slenderness"]
    with FIELD_DATA.open(encoding="utf-8") as stream:
        rows = [row for row in csv.DictReader(line for line in stream if not line.startswith("#"))
                if row["species"] == name and row["stand"] == stand]
    trees = sorted((float(r["height_m"]), float(r["dbh_m"]), float(r["f0_hz"])) for r in rows)
    trees = [t for t in trees if low <= t[0] <= high and thin <= t[0] / t[1] <= thick]
    pick = np.unique(np.linspace(0, len(trees) - 1, min(TREES_PER_SPECIES, len(trees))).round())
    return [trees[int(i)] for i in pick]


def sway_coefficients(stand: str, group_names) -> np.ndarray:
    """k = f0·H²/DBH (Hz·m²/cm) of every measured tree of the species ``group_names`` grown in
    ``stand`` (all of them, not only those within the allometry)."""
    with FIELD_DATA.open(encoding="utf-8") as stream:
        rows = [row for row in csv.DictReader(line for line in stream if not line.startswith("#"))
                if row["species"] in group_names and row["stand"] == stand]
    return np.array([float(r["f0_hz"]) * float(r["height_m"]) ** 2 / (100.0 * float(r["dbh_m"]))
                     for r in rows])
