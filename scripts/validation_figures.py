"""Make the figures of docs/validation.md: the sway frequency of the measured trees (Jackson et
al. 2019's compilation, tests/data/field_sway_frequencies.csv) rebuilt at their height and
DBH against their measured f0, generated trees against DBH/H² with the field relations, and
pull-and-release damping ratios in leaf and leafless (the stem's decrement and the whole
tree's energy decay), for the tests' trees and across sizes.

    python scripts/validation_figures.py
    # writes docs/measured_trees.png, docs/sway_frequency.png, docs/damping.png,
    # docs/damping_sizes.png
    python scripts/validation_figures.py damping
    # the two damping figures alone (and the damping points of docs/validation_points.json)

Takes a quarter of an hour (one modal analysis per tree, one release simulation per damping
point).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import sys  # noqa: E402

from treedyn_core.model import species  # noqa: E402
from treedyn_core.analysis.modes import modes  # noqa: E402
from treedyn_core.model.preset import validate  # noqa: E402
from treedyn_core.analysis.pull import energy_damping_ratio, pull  # noqa: E402
from treedyn_core.simulation import Simulation  # noqa: E402
from treedyn_core.analysis.sway import sway_frequency_hz  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
# The tests' own trees.
from field_data import (BROADLEAF_SIZES, CONIFER_SIZES, DAMPING_RANGE, DAMPING_TREES,  # noqa: E402
                        measured_trees)

DOCS = Path(__file__).resolve().parents[1] / "docs"
# The damping across sizes: (species, stand, leafless, H/DBH, heights m), each at the
# slenderness of the tests' trees of that species (DAMPING_TREES).
DAMPING_SIZES = [("picea_abies", "forest", False, 60.0, (8, 9, 10, 11, 12, 14, 16, 18, 22, 26, 30)),
                 ("quercus_rubra", "open", False, 40.0, (8, 9, 10, 11, 12, 13, 14, 16, 18, 20, 22)),
                 ("quercus_rubra", "open", True, 40.0, (8, 9, 10, 11, 12, 13, 14, 16, 18, 20, 22)),
                 ("acer_saccharum", "open", True, 40.0, (8, 9, 10, 11, 12, 13, 14, 16, 18, 20, 22))]
MEASURED = [("picea_abies", "forest"), ("picea_sitchensis", "forest"),
            ("pinus_sylvestris", "forest"), ("pseudotsuga_menziesii", "forest"),
            ("quercus_rubra", "open"), ("acer_saccharum", "open")]


def data(name, stand, height, dbh, **generator):
    gen = {"species": name, "height": height, "dbh": dbh, "stand": stand, **generator}
    return validate({"tree": {"generator": gen}}, "<figure>")


def measured_points():
    out = {}
    for name, stand in MEASURED:
        rows = []
        for height, dbh, measured in measured_trees(name, stand):
            f0 = sway_frequency(data(name, stand, height, dbh))
            rows.append((height, dbh, measured, f0))
            print(f"{name} {height:g} m {dbh:.3f} m: f0 = {f0:.3f} Hz, measured {measured:.3f} Hz",
                  flush=True)
        ln = np.log([r[3] / r[2] for r in rows])
        print(f"{name}: {len(rows)} trees, median |ln| {np.median(np.abs(ln)):.3f}, "
              f"mean ln {ln.mean():+.3f}", flush=True)
        out[name] = rows
    return out


def plot_measured(points):
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    every = np.array([[r[2], r[3]] for rows in points.values() for r in rows])
    span = np.array([every.min() * 0.8, every.max() * 1.25])
    ax.plot(span, span, "k-", lw=1, label="model = measured")
    ax.fill_between(span, span * math.exp(-0.25), span * math.exp(0.25), color="k", alpha=0.07,
                    label="|ln ratio| ≤ 0.25")
    for colour, (name, rows) in zip(colours, points.items()):
        rows = np.array(rows)
        ln = np.log(rows[:, 3] / rows[:, 2])
        ax.plot(rows[:, 2], rows[:, 3], "o", ms=4, color=colour,
                label=f"{species.entry(name)['common_name']}: median |ln| "
                      f"{np.median(np.abs(ln)):.2f}, mean {ln.mean():+.2f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured f0 (Hz)")
    ax.set_ylabel("model f0 (Hz), the tree rebuilt at its H and DBH")
    ax.set_title("Measured trees (Jackson et al. 2019 compilation)", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "measured_trees.png", dpi=110)


def sway_frequency(tree_data):
    """f0 (Hz) of a tree: among its 12 lowest modes, else among 60 (a broadleaf's crown
    sway may lie above many single-limb modes)."""
    return sway_frequency_hz(modes(tree_data, 12)) or sway_frequency_hz(modes(tree_data, 60))


def sway_points():
    out = {}
    groups = [(name, "forest", CONIFER_SIZES) for name in species.names()
              if species.entry(name)["group"] == "conifer"]
    groups += [(name, "open", BROADLEAF_SIZES) for name in ("quercus_rubra", "acer_saccharum")]
    for name, stand, sizes in groups:
        rows = []
        for height, slenderness in sizes:
            dbh = height / slenderness
            f0 = sway_frequency(data(name, stand, height, dbh))
            rows.append((100.0 * dbh / height ** 2, f0))
            print(f"{name} {height:g} m {dbh:.3f} m: f0 = {f0:.3f} Hz", flush=True)
        out[name] = rows
    return out


def release(name, stand, height, dbh, leafless):
    """The rope point's decrement and the whole tree's energy decay ζ_E after the tests' pull
    (the rope at 0.6·H, the default: the root plate tilted 0.25°)."""
    sim = Simulation.from_data(data(name, stand, height, dbh, leafless=leafless))
    result = pull(sim, 0.6 * height, release=True)
    energy = energy_damping_ratio(result.release, result.frequency_hz)
    print(f"{name} {height:g} m {dbh:.3f} m leafless={leafless}: ζ = {result.damping_ratio:.4f}, "
          f"energy ζ_E = {energy:.4f}", flush=True)
    return result.damping_ratio, energy


def damping_points():
    return [(name, height, leafless, *release(name, stand, height, dbh, leafless))
            for name, stand, height, dbh in DAMPING_TREES for leafless in (False, True)]


def damping_size_points():
    return [(name, leafless, height, *release(name, stand, height, height / slenderness,
                                              leafless))
            for name, stand, leafless, slenderness, heights in DAMPING_SIZES
            for height in heights]


def plot_sway(points):
    fig, ax = plt.subplots(figsize=(7, 5))
    x = np.linspace(0.0, max(p[0] for rows in points.values() for p in rows) * 1.1, 50)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, (name, rows) in zip(colours, points.items()):
        spec = species.entry(name)
        k = spec["sway_coefficient"]["value"]
        s = spec["sway_coefficient"]["scatter_ln"]
        rows = np.array(rows)
        ax.plot(rows[:, 0], rows[:, 1], "o", color=colour, label=f"{spec['common_name']} (model)")
        ax.plot(x, k * x, "-", color=colour, lw=1, label=f"f0 = {k:g}·DBH/H²")
        ax.fill_between(x, k * x * math.exp(-s), k * x * math.exp(s), color=colour, alpha=0.08)
    ax.set_xlabel("DBH/H² (cm/m²)")
    ax.set_ylabel("sway frequency f0 (Hz)")
    ax.set_title("Generated trees against the field relations (bands: scatter of ln k)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(DOCS / "sway_frequency.png", dpi=110)


def published_ranges(ax, alpha):
    """The published pull-and-release damping ranges as bands on `ax`."""
    ax.axhspan(*DAMPING_RANGE["in leaf"], color="tab:green", alpha=alpha,
               label="published, in leaf")
    ax.axhspan(*DAMPING_RANGE["leafless"], color="tab:brown", alpha=alpha,
               label="published, leafless")


def plot_damping(points):
    fig, ax = plt.subplots(figsize=(6, 4))
    published_ranges(ax, 0.12)
    for k, (name, height, leafless, zeta, energy) in enumerate(points):
        colour = "tab:brown" if leafless else "tab:green"
        ax.plot(k, zeta, "s" if leafless else "o", color=colour,
                label="decrement of the rope point's sway" if k == 0 else None)
        ax.plot(k, energy, "x", color="k", label="energy decay of the whole tree, ζ_E"
                if k == 0 else None)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([f"{species.entry(n)['common_name']}\n{h:g} m" + (" bare" if b else "")
                        for n, h, b, _, _ in points], fontsize=6)
    ax.set_ylabel("damping ratio (pull and release)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(DOCS / "damping.png", dpi=110)


def plot_damping_sizes(points):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    published_ranges(ax, 0.10)
    colours = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for name, _, leafless, slenderness, _ in DAMPING_SIZES:
        rows = np.array([(h, z, e) for n, b, h, z, e in points if n == name and b == leafless])
        colour = next(colours)
        label = (f"{species.entry(name)['common_name']}, {'leafless' if leafless else 'in leaf'}"
                 f", H/DBH {slenderness:g}")
        ax.plot(rows[:, 0], rows[:, 1], "o-", color=colour, lw=1, label=label + ": decrement")
        ax.plot(rows[:, 0], rows[:, 2], "x--", color=colour, lw=0.8, label=label + ": ζ_E")
    ax.set_xlabel("tree height H (m)")
    ax.set_ylabel("damping ratio (pull and release)")
    ax.set_title("Pull-and-release damping across sizes (rope at 0.6·H, root plate tilted 0.25°)",
                 fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(DOCS / "damping_sizes.png", dpi=110)


def main():
    if sys.argv[1:] == ["damping"]:
        points = json.loads((DOCS / "validation_points.json").read_text())
    else:
        points = {"measured": measured_points(), "sway": sway_points()}
        plot_measured(points["measured"])
        plot_sway(points["sway"])
    points["damping"] = damping_points()
    plot_damping(points["damping"])
    points["damping_sizes"] = damping_size_points()
    plot_damping_sizes(points["damping_sizes"])
    (DOCS / "validation_points.json").write_text(json.dumps(points, indent=1))


if __name__ == "__main__":
    main()
