"""Turning moments of conifers in stands of their own height against ForestGALES' measured
law (docs/validation.md, "Turning moments"), and their crowns' drag area against the wind-tunnel
laws: docs/turning_moments.png, docs/crown_drag.png and the points in
docs/turning_moments.json.

    python scripts/turning_moments.py          # 18 runs of 10 minutes, about 10 minutes
    python scripts/turning_moments.py drag     # docs/crown_drag.png alone, seconds

Each tree (species, height H, DBH = H/70) stands in a canopy of its own height at 3 m spacing;
the wind is `wind.speed` = u_h at the canopy top, seed 1. The maximum base moment over 600 s
(after the default mean-wind start) is set beside Hale et al.'s (2012) T_C·u_h², T_C =
113.8·DBH²·H − 9.6 N·m/(m/s)².
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from treedyn_core.model import crown, species
from treedyn_core.model.preset import validate
from treedyn_core.simulation import Simulation
from treedyn_core.studies.study_run import record
from treedyn_core.dynamics.static_model import build_tree

ROOT = Path(__file__).resolve().parents[1]
SPECIES = ("picea_abies", "pinus_sylvestris", "pseudotsuga_menziesii")
HEIGHTS = (15.0, 20.0, 25.0)
SPEEDS = (10.0, 15.0)   # u_h, m/s
SPACING = 3.0           # m
DURATION = 600.0        # s
SLENDERNESS = 70.0      # H/DBH


def hale_coefficient(dbh: float, height: float) -> float:
    """T_C, N·m/(m/s)², of Hale et al. (2012): maximum hourly moment over u_h²."""
    return 113.8 * dbh * dbh * height - 9.6


def stand_tree(name: str, height: float, speed: float, spacing: float = SPACING,
               dbh: float | None = None) -> dict:
    """A validated preset: the species tree (DBH m, default H/70) in a stand of its height,
    u_h = `speed` m/s."""
    dbh = round(height / SLENDERNESS, 3) if dbh is None else dbh
    return validate({"tree": {"generator": {"species": name, "height": height, "dbh": dbh}},
                     "wind": {"speed": speed, "canopy": {"spacing": spacing}}}, "<moments>")


def max_moment(data: dict, duration: float = DURATION) -> tuple[float, float, float]:
    """(maximum base moment N·m, mean base moment N·m, mean crown-top displacement m)."""
    sim = Simulation.from_data(data)
    series = record(sim, duration)
    offset = np.linalg.norm(series["crown"] - series["crown_rest"], axis=1)
    return (float(series["base_moment"].max()), float(series["base_moment"].mean()),
            float(offset.mean()))


def main() -> int:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    if sys.argv[1:] == ["drag"]:
        crown_drag_figure(plt)
        return 0
    points = []
    for name in SPECIES:
        for height in HEIGHTS:
            for speed in SPEEDS:
                data = stand_tree(name, height, speed)
                dbh = data["tree"]["generator"]["dbh"]
                peak, mean, shift = max_moment(data)
                hale = hale_coefficient(dbh, height) * speed ** 2
                points.append({"species": name, "height_m": height, "dbh_m": dbh,
                               "u_h_m_s": speed, "max_moment_Nm": peak, "mean_moment_Nm": mean,
                               "mean_crown_displacement_m": shift, "hale_Nm": hale})
                print(f"{name} H {height:g} u_h {speed:g}: max {peak / 1e3:.1f} kN·m, "
                      f"T_C·u_h² {hale / 1e3:.1f} kN·m, ratio {peak / hale:.2f}", flush=True)
    (ROOT / "docs" / "turning_moments.json").write_text(json.dumps(points, indent=1) + "\n")

    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    for number, name in enumerate(SPECIES):
        rows = [p for p in points if p["species"] == name]
        ax.scatter([p["hale_Nm"] / 1e3 for p in rows], [p["max_moment_Nm"] / 1e3 for p in rows],
                   color=f"C{number}", label=species.entry(name)["common_name"])
    top = max(max(p["max_moment_Nm"], p["hale_Nm"]) for p in points) / 1e3
    line = np.array([0.0, top])
    ax.plot(line, line, "k-", lw=1, label="T_C·u_h² (Hale et al. 2012)")
    ax.fill_between(line, line / 1.5, line * 1.5, color="0.85", label="within a factor 1.5")
    ax.set_xlabel("Hale et al. T_C·u_h², kN·m")
    ax.set_ylabel("treedyn: maximum base moment over 10 min, kN·m")
    ax.set_title("Conifers 15–25 m in stands of their height, u_h 10 and 15 m/s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "turning_moments.png")

    crown_drag_figure(plt)
    return 0


def crown_drag_figure(plt) -> None:
    """docs/crown_drag.png: the 20 m species trees' crown drag area over their width × depth
    against their species' laws over the laws' speeds; conifers forest-grown at H/DBH 70
    (Mayhead 1973), broadleaves open-grown at H/DBH 45 (ForestGALES)."""
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.8), dpi=120, sharey=True)
    groups = ((axes[0], ("picea_abies", "picea_sitchensis", "pinus_sylvestris",
                         "pseudotsuga_menziesii"), "forest", SLENDERNESS, "Mayhead 1973"),
              (axes[1], ("quercus_robur", "quercus_rubra", "betula_pendula", "fagus_sylvatica"),
               "open", 45.0, "ForestGALES"))
    for ax, names, stand, slenderness, source in groups:
        for number, name in enumerate(names):
            data = validate({"tree": {"generator": {
                "species": name, "height": 20.0, "dbh": round(20.0 / slenderness, 3),
                "stand": stand}}}, "<drag>")
            tree = build_tree(data)
            width, depth = crown.dimensions(tree)
            law = species.entry(name)["foliage"]["crown_drag"]
            speeds = np.linspace(5.0, law["max_speed"], 41)
            model = [crown.drag_area(tree, data["wind"], u, crown_only=True) / (width * depth)
                     for u in speeds]
            ax.plot(speeds, model, color=f"C{number}",
                    label=f"{species.entry(name)['common_name']} 20 m, treedyn")
            ax.plot(speeds, law["c"] * speeds ** -law["n"], "--", color=f"C{number}",
                    label=f"C·U^−N = {law['c']}·U^−{law['n']} ({source})")
        ax.set_xlabel("uniform wind speed U, m/s")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("crown drag area / (crown width × depth)")
    axes[0].set_title(f"conifers, forest-grown, H/DBH {SLENDERNESS:g}", fontsize=10)
    axes[1].set_title("broadleaves, open-grown, H/DBH 45", fontsize=10)
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "crown_drag.png")


if __name__ == "__main__":
    sys.exit(main())
