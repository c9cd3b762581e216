"""What `treedyn study` prints at the end, and with --plot its figures (matplotlib, Agg):

- ``DIR/peak_base_moment.png``: peak base moment against the mean wind speed, the median and
  the range over the other axes (the gust seeds), ForestGALES' M = T_C·u_h² and M_break beside;
- ``DIR/fragility.png``: the fraction of runs whose peak exceeds M_break at each speed and the
  fitted lognormal fragility curve, with the critical wind speed U50.

Trees are told apart by the parameter columns other than wind.speed and wind.seed: one curve
and one critical speed per distinct combination.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..analysis.fragility import (Fragility, empirical_fraction, fit_fragility,
                                  turning_moment_coefficient)
from ..output_file import write_atomically
from .results import read_results
from .study_file import Study

SPEED = "wind.speed"
REPLICATE = "wind.seed"


def report(study: Study, out: Path, outcome, plot: bool = False) -> str:
    """The closing lines: rows by status, wall time; with `plot`, the figures' paths and the
    critical wind speed of every tree."""
    table = read_results(out)
    status = table.column("status").to_pylist()
    lines = [f"{table.num_rows} rows in {out / 'results.parquet'}: "
             + ", ".join(f"{status.count(s)} {s}" for s in ("ok", "diverged", "failed"))
             + f"; this invocation ran {outcome.written} runs in {outcome.wall_s:.1f} s wall"
             + (f" on {outcome.workers} workers" if outcome.workers else "")]
    if plot:
        lines += plot_study(study, table.to_pydict(), out)
    return "\n".join(lines)


def groups(columns: dict, axes: list[str]) -> list[tuple[str, np.ndarray]]:
    """(label, row mask) per tree: per distinct value of the axes other than speed and seed."""
    others = [key for key in axes if key not in (SPEED, REPLICATE)]
    n = len(columns["run"])
    if not others:
        return [("", np.ones(n, dtype=bool))]
    labels = [", ".join(f"{key}={columns[key][i]}" for key in others) for i in range(n)]
    return [(label, np.array([x == label for x in labels])) for label in dict.fromkeys(labels)]


def critical_speeds(columns: dict, axes: list[str]) -> list[tuple[str, Fragility, float]]:
    """(tree label, fitted fragility, M_break N·m) per tree, over its runs with status ok."""
    ok = np.array(columns["status"]) == "ok"
    speed = np.array(columns[SPEED], dtype=float)
    peak = np.array(columns["peak_base_moment_Nm"], dtype=float)
    strength = np.array(columns["breaking_moment_Nm"], dtype=float)
    result = []
    for label, mask in groups(columns, axes):
        rows = mask & ok
        if rows.any():
            result.append((label, fit_fragility(speed[rows], peak[rows] > strength[rows]),
                           float(np.median(strength[rows]))))
    return result


def describe(label: str, fragility: Fragility, strength: float, speeds: np.ndarray,
             z_ref: float) -> str:
    """One line: the critical wind speed of a tree (or on which side of the studied speeds)."""
    name = f" ({label})" if label else ""
    if fragility.exceeded == 0:
        where = f"above {speeds.max():g} m/s: no run's peak exceeded M_break"
    elif fragility.exceeded == fragility.runs:
        where = f"below {speeds.min():g} m/s: every run's peak exceeded M_break"
    else:
        spread = "a step" if fragility.beta == 0 else f"β = {fragility.beta:.3f}"
        where = f"{fragility.critical_speed:.2f} m/s ({spread})"
    return (f"critical wind speed{name}, P(peak base moment > M_break = "
            f"{strength / 1e3:.4g} kN·m) = 0.5, mean speed at {z_ref:g} m: {where}; "
            f"{fragility.exceeded} of {fragility.runs} runs exceeded")


def plot_study(study: Study, columns: dict, out: Path) -> list[str]:
    """Write both figures to `out`; return the lines to print."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    wind = study.base_data["wind"]
    z_ref, alpha = float(wind["reference_height"]), float(wind["profile_exponent"])
    ok = np.array(columns["status"]) == "ok"
    speed = np.array(columns[SPEED], dtype=float)
    peak = np.array(columns["peak_base_moment_Nm"], dtype=float)
    fits = {label: (fit, strength) for label, fit, strength in critical_speeds(columns,
                                                                              study.axes)}
    lines = []

    fig_m, ax_m = plt.subplots(figsize=(7, 4.8), dpi=120)
    fig_f, ax_f = plt.subplots(figsize=(7, 4.8), dpi=120)
    for number, (label, mask) in enumerate(groups(columns, study.axes)):
        rows = mask & ok
        if not rows.any():
            continue
        color = f"C{number}"
        levels = np.unique(speed[rows])
        at = [peak[rows & (speed == u)] for u in levels]
        median = np.array([np.median(p) for p in at])
        ax_m.fill_between(levels, [p.min() / 1e3 for p in at], [p.max() / 1e3 for p in at],
                          color=color, alpha=0.2, lw=0)
        ax_m.plot(levels, median / 1e3, "o-", color=color, ms=3,
                  label=f"treedyn: median, range over seeds{' ' + label if label else ''}")
        dbh = float(np.median(np.array(columns["dbh_m"])[rows]))
        height = float(np.median(np.array(columns["height_m"])[rows]))
        fine = np.linspace(levels.min(), levels.max(), 200)
        u_h = fine * (height / z_ref) ** alpha
        ax_m.plot(fine, turning_moment_coefficient(dbh, height) * u_h ** 2 / 1e3, "--",
                  color=color, label=f"ForestGALES T_C·u_h², T_C = 111.7·DBH²·H "
                  f"(DBH {dbh:.2f} m, H {height:.1f} m)")
        fit, strength = fits[label]
        ax_m.axhline(strength / 1e3, color=color, ls=":", label=f"M_break "
                     f"{strength / 1e3:.4g} kN·m")
        levels_f, fraction, runs = empirical_fraction(speed[rows], peak[rows] > strength)
        ax_f.scatter(levels_f, fraction, s=12 + 4 * runs, color=color, alpha=0.7,
                     label=f"fraction of runs exceeding{' ' + label if label else ''}")
        if fit.critical_speed == fit.critical_speed:
            kind = ("a step: the outcomes separate" if fit.beta == 0
                    else f"lognormal fit, β = {fit.beta:.3f}")
            ax_f.plot(fine, fit.probability(fine), color=color,
                      label=f"{kind}: U50 = {fit.critical_speed:.2f} m/s")
            ax_f.axvline(fit.critical_speed, color=color, ls=":", lw=1)
        lines.append(describe(label, fit, strength, speed[rows], z_ref))
    # The loads rise to the right, leaving the upper left free; the fragility curve's free
    # corner depends on where it steps (matplotlib's "best" finds it).
    for ax, corner in ((ax_m, "upper left"), (ax_f, "best")):
        ax.set_xlabel(f"mean wind speed at {z_ref:g} m, m/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc=corner)
    ax_m.set_ylabel("peak base bending moment, kN·m")
    ax_m.set_title(f"{study.name}: wind load ({study.duration:g} s per run)", fontsize=10)
    ax_f.set_ylabel("P(peak base moment > M_break)")
    ax_f.set_ylim(-0.03, 1.03)
    ax_f.set_title(f"{study.name}: fragility (stem breakage at breast height)", fontsize=10)
    for fig, name in ((fig_m, "peak_base_moment.png"), (fig_f, "fragility.png")):
        fig.tight_layout()
        write_atomically(out / name, lambda temporary, fig=fig: fig.savefig(temporary,
                                                                          format="png"))
        plt.close(fig)
        lines.append(f"wrote {out / name}")
    return lines
