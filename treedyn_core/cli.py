"""The `treedyn` command (DESIGN §7).

    treedyn [PRESET]                      open the desktop app
    treedyn run PRESET --duration S ...   headless simulation to an NPZ file
    treedyn modes PRESET ...              natural frequencies and mode shapes
    treedyn expand PRESET OUT.yaml        a preset as an explicit limb list
    treedyn bench [performance|accuracy|frames] [--json] [--sizes N,...] [--repeat K]
    treedyn study STUDY.yaml [--out DIR] [--workers N | --scheduler ADDRESS] [--plot]

Bad input gives one line on stderr and exit status 2, never a traceback.
Only the app subcommand imports Qt; everything else stays headless.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .errors import TreedynError
from .schema import GENERATOR

EXIT_BAD_INPUT = 2
COMMANDS = ("run", "modes", "expand", "bench", "study")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `treedyn run: error: ... (see treedyn run --help)`."""

    def error(self, message: str):  # noqa: D102 - argparse API
        raise TreedynError(f"{self.prog}: {message} (see {self.prog} --help)")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got '{text}'")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got '{text}'")
    return value


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected limb counts like 100,1000, got '{text}'") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"limb counts must be ≥ 1, got '{text}'")
    largest = GENERATOR["max_limbs"].default
    if max(sizes) > largest:
        raise argparse.ArgumentTypeError(f"limb counts must be ≤ {largest:,} (the generator's "
                                         f"max_limbs), got '{text}'")
    return sizes


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parsers: dict[str, argparse.ArgumentParser] = {}

    app = _Parser(prog="treedyn", description="A tree blown by the wind, simulated and shown "
                  "live in 3-D. Subcommands: run, modes, expand, bench "
                  "(treedyn SUBCOMMAND --help).")
    app.add_argument("preset", nargs="?", help="preset file or shipped preset name "
                     "(default: young_oak)")
    app.add_argument("--version", action="version", version=f"treedyn {__version__}")
    parsers["app"] = app

    run = _Parser(prog="treedyn run", description="Simulate a preset headless and write the "
                  "trajectory to an NPZ file (limbs in preset order).")
    run.add_argument("preset", help="preset file or shipped preset name")
    run.add_argument("--duration", type=_positive_float, required=True, metavar="S",
                     help="simulated time, s")
    run.add_argument("--dt", type=_positive_float, metavar="H",
                     help="time step, s (default: the preset's simulation.dt)")
    run.add_argument("--integrator", choices=("implicit", "rk4", "dop853"))
    run.add_argument("--model", choices=("articulated", "seed"))
    run.add_argument("--rtol", type=_positive_float, metavar="R",
                     help="dop853 relative tolerance (default 1e-10)")
    run.add_argument("--atol", type=_positive_float, metavar="A",
                     help="dop853 absolute tolerance (default 1e-10)")
    run.add_argument("--every", type=_positive_int, metavar="K",
                     help="save every K-th step (default: about 30 frames per simulated second)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                     help="override a preset key by its path, e.g. --set wind.speed=12")
    run.add_argument("--probe", action="store_true", help="also save the wind at the crown top, "
                     "the total aerodynamic force and the base bending moment per frame")
    run.add_argument("--out", metavar="FILE.npz", help="output file (default: PRESET.npz in the "
                     "current folder)")
    parsers["run"] = run

    modes = _Parser(prog="treedyn modes", description="Natural frequencies and mode shapes of "
                    "the tree linearised about its static equilibrium.")
    modes.add_argument("preset", help="preset file or shipped preset name")
    modes.add_argument("--count", type=_positive_int, default=10, metavar="K")
    modes.add_argument("--json", action="store_true")
    parsers["modes"] = modes

    expand = _Parser(prog="treedyn expand", description="Write a preset as an explicit limb "
                     "list with every physical parameter the simulator uses (prestress baked "
                     "in, prestress: false).")
    expand.add_argument("preset", help="preset file or shipped preset name")
    expand.add_argument("out", metavar="OUT.yaml", help="output preset file")
    parsers["expand"] = expand

    bench = _Parser(prog="treedyn bench", description="Benchmarks: performance, accuracy, "
                    "frames, study (Dask throughput, overhead, scheduler memory).")
    bench.add_argument("which", nargs="?", default="performance",
                       choices=("performance", "accuracy", "frames", "study"))
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--sizes", type=_sizes, metavar="N,N,...", help="performance and frames: "
                       "tree sizes in limbs (defaults 10,100,1000,10000,30000,100000 and "
                       "100,1000,10000,30000)")
    bench.add_argument("--repeat", type=_positive_int, default=1, metavar="K",
                       help="performance: measure every size in K passes and give the medians "
                       "and the range of each time per step over them (default 1)")
    parsers["bench"] = bench

    study = _Parser(prog="treedyn study", description="Run a study (a grid and/or random "
                    "samples of preset keys) on Dask and write one row per run to "
                    "DIR/results.parquet; rerun to resume (docs/studies.md).")
    study.add_argument("study", metavar="STUDY.yaml", help="study file")
    study.add_argument("--out", metavar="DIR", help="output folder (default: the study's name)")
    where = study.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_positive_int, metavar="N",
                       help="local worker processes, one thread each (default: the CPU count)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="an existing Dask scheduler, e.g. tcp://10.0.0.5:8786")
    study.add_argument("--plot", action="store_true", help="write the wind-load and fragility "
                       "figures (PNG) to DIR and print the critical wind speed")
    parsers["study"] = study
    return parsers


def _load(source: str, overrides: list[str] | None = None):
    from .preset import apply_overrides, load_preset

    preset = load_preset(source)
    if overrides:
        preset.data = apply_overrides(preset.data, overrides)
    return preset


def _cmd_run(args) -> int:
    from .run import simulate, write_npz
    from .simulation import Simulation

    preset = _load(args.preset, args.overrides)
    out = Path(args.out) if args.out else Path(f"{Path(args.preset).stem}.npz")
    if out.suffix != ".npz":
        raise TreedynError(f"--out must name a .npz file, got '{out}'")
    sim = Simulation(preset, integrator=args.integrator, model=args.model, dt=args.dt,
                     rtol=args.rtol, atol=args.atol)
    result = simulate(sim, args.duration, args.every, progress=True, probe=args.probe)
    write_npz(result.arrays, out)
    print(f"{result.summary()}; wrote {out}")
    return 0


def _cmd_expand(args) -> int:
    from .expand import expand_preset
    from .preset import save_preset

    preset = _load(args.preset)
    out = Path(args.out)
    if out.suffix not in (".yaml", ".yml"):
        raise TreedynError(f"expand: the output must be a .yaml file, got '{out}'")
    data = expand_preset(preset)
    save_preset(data, out)
    print(f"wrote {out}: {len(data['tree']['limbs'])} explicit limbs")
    return 0


def _cmd_modes(args) -> int:
    from .modes import modes_command_output

    print(modes_command_output(_load(args.preset), args.count, args.json))
    return 0


def _cmd_bench(args) -> int:
    if args.which == "performance":
        from .bench_performance import SIZES, run

        run(args.sizes or SIZES, as_json=args.json, repeat=args.repeat)
        return 0
    if args.repeat != 1:
        raise TreedynError(f"bench {args.which}: --repeat applies to bench performance only")
    if args.which == "accuracy":
        from .bench_accuracy import main as accuracy

        print(accuracy(as_json=args.json))
    elif args.which == "study":
        from .bench_study import main as study_bench

        print(study_bench(as_json=args.json))
    else:
        from app.bench_frames import SIZES, run  # the app's own canvas, on the current display

        run(args.sizes or SIZES, as_json=args.json)
    return 0


def _cmd_study(args) -> int:
    from .study_file import load_study

    study = load_study(args.study)  # every problem before any folder or worker exists
    if args.plot and "wind.speed" not in study.axes:
        raise TreedynError(f"{args.study}: --plot needs wind.speed among the axes")
    from .study import run_study
    from .study_report import report

    out = Path(args.out) if args.out else Path(study.name)
    try:
        outcome = run_study(study, out, workers=args.workers, scheduler=args.scheduler)
    except KeyboardInterrupt:
        print(f"treedyn study: interrupted; the rows finished are in {out}/results.parquet, "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    print(report(study, out, outcome, plot=args.plot))
    return 0


def _cmd_app(args) -> int:
    from app.main import run as run_app

    return run_app(args.preset)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `treedyn` console command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parsers = _parsers()
    command = argv[0] if argv and argv[0] in COMMANDS else "app"
    rest = argv[1:] if command != "app" else argv
    handlers = {"run": _cmd_run, "modes": _cmd_modes, "expand": _cmd_expand,
                "bench": _cmd_bench, "study": _cmd_study, "app": _cmd_app}
    try:
        args = parsers[command].parse_args(rest)
        return handlers[command](args)
    except TreedynError as error:
        print(f"treedyn: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("treedyn: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
