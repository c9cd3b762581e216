"""The scanned trees of Wytham Woods (Jackson et al. 2019, Agric. For. Meteorol. 265) run as
`tree.scan` against their measured pull-and-release sway (docs/scans.md, Validation).

    python scripts/scan_wytham.py QSM_FOLDER PULL_FOLDER

QSM_FOLDER holds ``cyl_data_Tf<k>[_LeafOff]_Validation_1_1.mat`` (the folder QSMs/ of
github.com/TobyDJackson/WindAndTrees_FEM); PULL_FOLDER the strain records
``T<k>_P<n>_<summer|winter>.txt`` at 4 Hz (the folder PullAndRelease/ of
github.com/TobyDJackson/WindAndTrees_NaturalFrequencies). Neither is shipped: those repositories
state no licence. Tree k of the records is taken to be QSM Tf<k>.

Measured: each record from its largest strain in its first third on, a damped cosine
A e^(−ζωt) cos(ω√(1−ζ²) t + φ) + c fitted by least squares (started from the spectrum's
peak over 0.08–1 Hz); a fit whose residual is more than `MAX_RESIDUAL` of the record's scatter is
left out. Model: `treedyn modes` of ``tree: {scan: {file, species}}``, in leaf for summer and
``leafless`` for winter, nothing else set. The species of each tree is read from the wood
density and modulus that Jackson et al. gave it (their Data/Field21_010818.mat in
github.com/TobyDJackson/WindAndTrees_Wytham: 865 kg/m³ and 10.5 GPa the oak, 721 and 8.4 the
sycamores, 801 and 9.5 the ashes, 801 and 8.5 the birches); no number is fitted to a tree.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import scipy.optimize

from treedyn_core.analysis.modes import modes
from treedyn_core.model.preset import validate
from treedyn_core.model.scan import scan_limbs
from treedyn_core.analysis.sway import sway_frequency_hz

SAMPLE_RATE = 4.0   # Hz, the strain records'
MAX_RESIDUAL = 0.2  # rms residual over the record's standard deviation
SPECIES = {1: "quercus_robur"}
SPECIES.update({k: "acer_pseudoplatanus" for k in (2, 3, 4, 5, 6, 7, 15, 16)})
SPECIES.update({k: "fraxinus_excelsior" for k in (8, 9, 10, 11, 12, 13, 14, 17)})
SPECIES.update({k: "betula_pendula" for k in (18, 19, 20, 21)})


def measured(record: Path) -> tuple[float, float] | None:
    """(f Hz, ζ) of one pull-and-release strain record, or None where the fit is poor or the
    record is not one channel (tree 3's summer records hold 12, unlabelled)."""
    y = np.loadtxt(record)
    if y.ndim != 1:
        return None
    t = np.arange(len(y)) / SAMPLE_RATE
    k = int(np.argmax(np.abs(y[:max(len(y) // 3, 2)])))
    y, t = y[k:], t[k:] - t[k]
    n = 8192
    spectrum = np.abs(np.fft.rfft((y - y.mean()) * np.hanning(len(y)), n=n))
    frequency = np.fft.rfftfreq(n, 1.0 / SAMPLE_RATE)
    band = (frequency > 0.08) & (frequency < 1.0)
    f_peak = frequency[band][np.argmax(spectrum[band])]

    def decay(t, A, zeta, f, phase, c):
        w = 2.0 * math.pi * f
        return A * np.exp(-zeta * w * t) * np.cos(w * math.sqrt(max(1.0 - zeta ** 2, 1e-9)) * t
                                                  + phase) + c

    try:
        p, _ = scipy.optimize.curve_fit(decay, t, y, p0=[y[0], 0.05, f_peak, 0.0, 0.0],
                                        maxfev=20000)
    except RuntimeError:
        return None
    residual = np.sqrt(np.mean((decay(t, *p) - y) ** 2)) / np.std(y)
    if residual > MAX_RESIDUAL or not 0.0 < p[1] < 1.0:
        return None
    return float(p[2]), float(p[1])


def model(qsm: Path, name: str, leafless: bool) -> tuple[float, float, float]:
    """(f0 Hz, its damping ratio) of the scan, and f0 (Hz) of the species tree (the
    generator's, forest-grown) of the scan's height and DBH."""
    scan = {"file": str(qsm), "species": name, "leafless": leafless}
    data = validate({"tree": {"scan": scan}}, qsm.name)
    result = modes(data, 12)
    f0 = sway_frequency_hz(result)
    k = list(result.frequencies_hz).index(f0)
    size = scan_limbs(data["tree"]["scan"], data)
    generated = validate({"tree": {"generator": {"species": name, "height": size.height,
                                                 "dbh": size.dbh, "leafless": leafless}}},
                         "species tree")
    f_species = sway_frequency_hz(modes(generated, 12)) or sway_frequency_hz(
        modes(generated, 60))
    return f0, float(result.damping_ratios[k]), f_species


def main(qsm_folder: str, pull_folder: str) -> None:
    records: dict[tuple[int, str], list] = {}
    for record in sorted(Path(pull_folder).glob("T*_P*_*.txt")):
        tree, season = re.fullmatch(r"T(\d+)_P\d+_(summer|winter)\.txt", record.name).groups()
        records.setdefault((int(tree), season), []).append(measured(record))
    print("| tree | species | season | pulls (fitted) | f measured (Hz) | ζ measured | "
          "f scan (Hz) | ζ scan | ln(f scan/f measured) | f species tree (Hz) | "
          "ln(f species tree/f measured) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for (tree, season), fits in sorted(records.items()):
        [qsm] = Path(qsm_folder).glob(f"cyl_data_Tf{tree}_*Validation_1_1.mat")
        good = [fit for fit in fits if fit is not None]
        f_model, zeta_model, f_species = model(qsm, SPECIES[tree], season == "winter")
        if good:
            f_measured = float(np.median([f for f, _ in good]))
            zeta = float(np.median([z for _, z in good]))
            ln = math.log(f_model / f_measured)
            ln_species = math.log(f_species / f_measured)
            ratios.append((season, ln, ln_species))
            shown = (f"{f_measured:.3f} | {zeta:.3f} | {f_model:.3f} | {zeta_model:.3f} | "
                     f"{ln:+.2f} | {f_species:.3f} | {ln_species:+.2f}")
        else:
            shown = f"— | — | {f_model:.3f} | {zeta_model:.3f} | — | {f_species:.3f} | —"
        print(f"| Tf{tree} | {SPECIES[tree]} | {season} | {len(fits)} ({len(good)}) | {shown} |")
    for season in ("summer", "winter"):
        for k, what in ((1, "scan"), (2, "species tree")):
            ln = np.array([r[k] for r in ratios if r[0] == season])
            if len(ln):
                print(f"{season}, {what}: {len(ln)} trees, median |ln| "
                      f"{np.median(np.abs(ln)):.3f}, mean ln {ln.mean():+.3f}, largest |ln| "
                      f"{np.abs(ln).max():.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
