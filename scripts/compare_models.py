"""The two models on the same presets, for the README: writes docs/compare_models.png.

    python scripts/compare_models.py [--out docs/compare_models.png]

(a) `two_limbs` as shipped (prestressed, limb B released 20° about y, damping on,
    still air): the displacement of B's tip from rest, articulated vs seed.
(b) `sapling` in a steady 8 m/s wind (turbulence off), released at rest: the
    along-wind displacement of its highest tip, articulated vs seed.

Both models start from the same pose with their own prestress, implicit at the
preset's dt. Needs matplotlib, which treedyn itself does not (pip install matplotlib).
Prints the numbers the README quotes.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import numpy as np

from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation

MODELS = ("articulated", "seed")
TWO_LIMBS_SECONDS = 6.0
SAPLING_SECONDS = 4.0
SAPLING_WIND = {"speed": 8.0, "turbulence_intensity": 0.0}
SEED_MAGNIFIED = 20         # the seed's sapling response is drawn again, magnified


def trajectory(data: dict, model: str, seconds: float, limb: int) -> tuple[np.ndarray, np.ndarray]:
    """(t, tip displacement from t = 0 (S, 3) m) of one limb, sampled every step."""
    sim = Simulation.from_data(data, model=model)
    steps = int(round(seconds / sim.dt))
    start = sim.tip[limb].copy()
    out = np.empty((steps + 1, 3))
    out[0] = 0.0
    for k in range(1, steps + 1):
        sim.step(1)
        out[k] = sim.tip[limb] - start
    return sim.dt * np.arange(steps + 1), out


def dominant_frequency(t: np.ndarray, x: np.ndarray) -> float:
    """Frequency (Hz) of the largest peak of x's spectrum (mean removed, Hann window)."""
    x = (x - x.mean()) * np.hanning(len(x))
    spectrum = np.abs(np.fft.rfft(x, 8 * len(x)))
    return float(np.fft.rfftfreq(8 * len(x), t[1] - t[0])[np.argmax(spectrum[1:]) + 1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs"
                                             / "compare_models.png"))
    args = parser.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare_models: needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 2

    two = load_preset("two_limbs").data
    sapling = copy.deepcopy(load_preset("sapling").data)
    sapling["wind"].update(SAPLING_WIND)
    sapling["initial_state"] = []
    sapling["simulation"]["start"] = "rest"   # released at rest (a default start is balanced)
    top = Simulation.from_data(sapling)
    highest = int(np.argmax(top.tip[:, 2]))

    runs = {}
    for model in MODELS:
        runs["two", model] = trajectory(two, model, TWO_LIMBS_SECONDS, 1)
        runs["sapling", model] = trajectory(sapling, model, SAPLING_SECONDS, highest)

    fig, axes = plt.subplots(2, 1, figsize=(8, 7), constrained_layout=True)
    styles = {"articulated": dict(color="tab:blue", lw=1.4),
              "seed": dict(color="tab:orange", lw=1.2, ls="--")}
    ax = axes[0]
    for model in MODELS:
        t, d = runs["two", model]
        ax.plot(t, 100 * d[:, 0], label=f"{model}: x", **styles[model])
        ax.plot(t, 100 * d[:, 1], alpha=0.55, label=f"{model}: y", **styles[model])
    ax.set(xlabel="t [s]", ylabel="B's tip from its start [cm]",
           title="(a) two_limbs: B released 20° about y (prestressed, damped, still air)")
    ax.legend(ncol=2, fontsize=8)
    ax = axes[1]
    for model in MODELS:
        t, d = runs["sapling", model]
        ax.plot(t, 100 * d[:, 0], label=model, **styles[model])
    t, d = runs["sapling", "seed"]
    ax.plot(t, 100 * SEED_MAGNIFIED * d[:, 0], color="tab:orange", lw=1.0, ls=":",
            label=f"seed ×{SEED_MAGNIFIED}")
    ax.set(xlabel="t [s]", ylabel="highest tip, along-wind [cm]",
           title="(b) sapling in a steady 8 m/s wind, released at rest")
    ax.legend(fontsize=8)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")

    for model in MODELS:
        t, d = runs["two", model]
        t_s, d_s = runs["sapling", model]
        settled = d_s[t_s > SAPLING_SECONDS / 2, 0]
        print(f"{model:>11}: two_limbs B tip {dominant_frequency(t, d[:, 0]):.2f} Hz (x), "
              f"peak |Δ| {100 * np.linalg.norm(d, axis=1).max():.1f} cm, final x "
              f"{100 * d[-1, 0]:.1f} cm; sapling top peak {100 * d_s[:, 0].max():.2f} cm, "
              f"steady {100 * settled.mean():.2f} cm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
