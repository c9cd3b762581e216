"""The `treedyn` command (docs/design.md §7).

    treedyn [PRESET]                      open the desktop app
    treedyn run PRESET --duration S ...   headless simulation to an NPZ file
    treedyn modes PRESET ...              natural frequencies and mode shapes
    treedyn expand PRESET OUT.yaml        a preset as an explicit limb list
    treedyn export RUN.npz OUT.glb        a run's motion as animated glTF 2.0
    treedyn render PRESET --duration S --out OUT.mp4   the 3-D view as an H.264 film
    treedyn pull PRESET --height H ...    the pulling test (and release)
    treedyn bench [performance|accuracy|frames] [--json] [--sizes N,...] [--repeat K]
    treedyn study STUDY.yaml [--out DIR] [--workers N | --scheduler ADDRESS] [--plot]

Bad input gives one line on stderr and exit status 2, never a traceback; a run that
diverged (its state left the physical bounds of `divergence`), one line and exit status 3;
Ctrl-C 130, SIGTERM 143 (the temporary file of a write in progress removed).
Only the app subcommand imports Qt; everything else stays headless.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import signal
import sys
import threading
import warnings
from pathlib import Path

import numpy as np

from . import __version__
from .errors import SimulationDiverged, TreedynError
from .integrators.registry import INTEGRATORS, STEPPERS
from .model.schema import GENERATOR, MAX_ANGLE_DEG, MAX_WORKERS

EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
MAX_DURATION = 1e9  # s, about 32 years of simulated time
MIN_RTOL = 100 * np.finfo(float).eps  # scipy's dop853 raises smaller tolerances to this
# dop853's absolute tolerance, rad and rad/s: far below the float's resolution of a joint's
# angle (~1e-16 rad); near the subnormal floor (5e-324) its step size collapses to zero.
MIN_ATOL = 1e-30
MAX_FPS = 1000.0   # frames per second of a film or an animation (a high-speed camera's)
MIN_FPS = 1e-3     # one frame per 1000 s of simulated time
MAX_REPEAT = 100   # passes of bench performance
COMMANDS = ("run", "modes", "expand", "bench", "export", "render", "pull", "study")


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


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got '{text}'")
    return value


def _azimuth(text: str) -> float:
    value = _finite_float(text)
    if abs(value) > MAX_ANGLE_DEG:
        raise argparse.ArgumentTypeError(f"must be within ±{MAX_ANGLE_DEG:g} deg, got '{text}'")
    return value


def _frame_rate(text: str) -> float:
    value = _positive_float(text)
    if not MIN_FPS <= value <= MAX_FPS:
        raise argparse.ArgumentTypeError(f"must be {MIN_FPS:g} … {MAX_FPS:g} frames per "
                                         f"second, got '{text}'")
    return value


def _duration(text: str) -> float:
    value = _positive_float(text)
    if value > MAX_DURATION:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_DURATION:g} s, got '{text}'")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got '{text}'")
    return value


def _whole_number_up_to(largest: int):
    """An argparse type: a whole number 1 … `largest`."""
    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > largest:
            raise argparse.ArgumentTypeError(f"must be ≤ {largest}, got '{text}'")
        return value

    return parse


def _tolerance(text: str) -> float:
    value = _positive_float(text)
    if value < MIN_RTOL:
        raise argparse.ArgumentTypeError(f"must be ≥ {MIN_RTOL:g} (100 × the float's "
                                         f"round-off, dop853's floor), got '{text}'")
    return value


def _absolute_tolerance(text: str) -> float:
    value = _positive_float(text)
    if value < MIN_ATOL:
        raise argparse.ArgumentTypeError(f"must be ≥ {MIN_ATOL:g} (rad, rad/s), got '{text}'")
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


def _frame_size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)x(\d+)", text.strip().lower())
    if not match:
        raise argparse.ArgumentTypeError(f"expected WxH in px like 1280x720, got '{text}'")
    return int(match.group(1)), int(match.group(2))


def _command(parsers: dict, name: str, description: str) -> _Parser:
    """A new parser for `treedyn NAME` ("app": `treedyn` itself), kept in parsers[name]."""
    parser = _Parser(prog="treedyn" if name == "app" else f"treedyn {name}",
                     description=description)
    parsers[name] = parser
    return parser


def _preset_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("preset", help="preset file or shipped preset name")


def _overrides_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        dest="overrides", help="override a preset key by its path, e.g. "
                        "--set wind.speed=12")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parsers: dict[str, argparse.ArgumentParser] = {}

    app = _command(parsers, "app", "A tree blown by the wind, simulated and shown live in 3-D. "
                   "Subcommands: run, modes, expand, bench, export, render, pull, study "
                   "(treedyn SUBCOMMAND --help).")
    app.add_argument("preset", nargs="?", help="preset file or shipped preset name "
                     "(default: young_oak)")
    app.add_argument("--version", action="version", version=f"treedyn {__version__}")

    run = _command(parsers, "run", "Simulate a preset headless and write the trajectory to an "
                   "NPZ file (limbs in preset order).")
    _preset_argument(run)
    run.add_argument("--duration", type=_duration, required=True, metavar="S",
                     help="simulated time, s")
    run.add_argument("--dt", type=_positive_float, metavar="H",
                     help="time step, s (default: the preset's simulation.dt)")
    run.add_argument("--integrator", choices=INTEGRATORS,
                     help="the time stepper (default: the preset's): " + "; ".join(
                         f"{stepper.name}, {stepper.summary}" for stepper in STEPPERS.values()))
    run.add_argument("--model", choices=("articulated", "seed"))
    run.add_argument("--rtol", type=_tolerance, metavar="R",
                     help="dop853 relative tolerance (default 1e-10)")
    run.add_argument("--atol", type=_absolute_tolerance, metavar="A",
                     help="dop853 absolute tolerance (default 1e-10)")
    run.add_argument("--every", type=_positive_int, metavar="K",
                     help="save every K-th step (default: about 30 frames per simulated second)")
    _overrides_argument(run)
    run.add_argument("--probe", action="store_true", help="also save the wind at the crown top, "
                     "the total aerodynamic force and the base bending moment per frame")
    run.add_argument("--out", metavar="FILE.npz", help="output file, NPZ or with .nc NetCDF-4 "
                     "(default: PRESET.npz in the current folder; with --gltf, none unless "
                     "given)")
    run.add_argument("--gltf", metavar="OUT.glb", help="also write the motion as animated "
                     "binary glTF 2.0 (one node per limb, +Y up, metres)")

    export = _command(parsers, "export", "Write the motion of a `treedyn run` NPZ file as "
                      "animated binary glTF 2.0 (one node per limb, its rotation animated; +Y "
                      "up, metres).")
    export.add_argument("run", metavar="RUN.npz", help="an NPZ file written by treedyn run")
    export.add_argument("out", metavar="OUT.glb", help="output file")
    export.add_argument("--fps", type=_frame_rate, metavar="F", help="resample the "
                        f"animation at F frames per second, at most {MAX_FPS:g} (default: the "
                        "run's own frames)")

    render = _command(parsers, "render", "Render the app's 3-D view of a simulation frame by "
                      "frame at simulated time to an H.264 MP4 film (needs a display: a "
                      "desktop, or xvfb-run).")
    _preset_argument(render)
    render.add_argument("--duration", type=_positive_float, required=True, metavar="S",
                        help="simulated time, s")
    render.add_argument("--out", required=True, metavar="OUT.mp4", help="output file")
    render.add_argument("--size", type=_frame_size, default=(1280, 720), metavar="WxH",
                        help="frame size in px, even numbers (default 1280x720)")
    render.add_argument("--fps", type=_frame_rate, default=30.0, metavar="F",
                        help=f"frames per second of simulated time (default 30, at most "
                        f"{MAX_FPS:g})")
    _overrides_argument(render)

    modes = _command(parsers, "modes", "Natural frequencies and mode shapes of the tree "
                     "linearised about its static equilibrium.")
    _preset_argument(modes)
    modes.add_argument("--count", type=_positive_int, default=10, metavar="K")
    modes.add_argument("--json", action="store_true")
    _overrides_argument(modes)

    pull = _command(parsers, "pull", "The pulling test: a horizontal rope on the stem; static "
                    "deflection, stem-base inclination and base moment, and with --release the "
                    "free sway's frequency and damping ratio (docs/validation.md).")
    _preset_argument(pull)
    pull.add_argument("--height", type=_positive_float, required=True, metavar="H",
                      help="rope height above the stem base, m")
    how = pull.add_mutually_exclusive_group()
    how.add_argument("--force", type=_positive_float, metavar="F", help="rope force, N")
    how.add_argument("--inclination", type=_positive_float, metavar="DEG",
                     help="pull until the stem base tilts by DEG degrees (default 0.25)")
    pull.add_argument("--direction", type=_azimuth, default=0.0, metavar="DEG",
                      help="azimuth of the pull, deg (0 = +x, 90 = +y)")
    pull.add_argument("--release", action="store_true", help="cut the rope and fit the sway")
    pull.add_argument("--json", action="store_true")
    _overrides_argument(pull)

    expand = _command(parsers, "expand", "Write a preset as an explicit limb list with every "
                      "physical parameter the simulator uses (prestress baked in, prestress: "
                      "false).")
    _preset_argument(expand)
    expand.add_argument("out", metavar="OUT.yaml", help="output preset file")
    _overrides_argument(expand)

    bench = _command(parsers, "bench", "Benchmarks: performance, accuracy, frames, study (Dask "
                     "throughput, overhead, scheduler memory).")
    bench.add_argument("which", nargs="?", default="performance",
                       choices=("performance", "accuracy", "frames", "study"))
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--sizes", type=_sizes, metavar="N,N,...", help="performance and frames: "
                       "tree sizes in limbs (defaults 10,100,1000,10000,30000,100000 and "
                       "100,1000,10000,30000)")
    bench.add_argument("--repeat", type=_whole_number_up_to(MAX_REPEAT), default=1, metavar="K",
                       help="performance: measure every size in K passes and give the medians "
                       "and the range of each time per step over them (default 1)")

    study = _command(parsers, "study", "Run a study (a grid and/or random samples of preset "
                     "keys) on Dask and write one row per run to DIR/results.parquet; rerun to "
                     "resume (docs/studies.md).")
    study.add_argument("study", metavar="STUDY.yaml", help="study file")
    study.add_argument("--out", metavar="DIR", help="output folder (default: the study's name)")
    where = study.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_whole_number_up_to(MAX_WORKERS), metavar="N",
                       help="local worker processes, one thread each (default: the CPU count)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="an existing Dask scheduler, e.g. tcp://10.0.0.5:8786")
    study.add_argument("--plot", action="store_true", help="write the wind-load and fragility "
                       "figures (PNG) to DIR and print the critical wind speed")
    return parsers


def _load(source: str, overrides: list[str] | None = None):
    from .api import load_preset  # the API's: a path or a shipped name, then the --set list

    return load_preset(source, overrides)


def _cmd_run(args) -> int:
    from . import warm_up
    from .io.run import npz_writer, simulate
    from .model.preset import apply_overrides
    from .output_file import check_writable, write_together
    from .simulation import Simulation

    preset = _load(args.preset, args.overrides)
    if args.dt is not None:  # the preset's simulation.dt, given on the command line
        preset.data = apply_overrides(preset.data, [f"simulation.dt={args.dt!r}"], "--dt")
    out = Path(args.out) if args.out is not None else Path(f"{Path(args.preset).stem}.npz")
    if out.suffix not in (".npz", ".nc") or not out.stem:
        raise TreedynError(f"--out must name a .npz or .nc (NetCDF) file, got '{args.out}'")
    gltf = None
    if args.gltf:
        from .output_file import check_output

        gltf = check_output(args.gltf, (".glb",), "--gltf")
        if args.out is None:
            out = None
    if out is not None:
        check_writable(out)
    model = args.model or preset.data["simulation"]["model"]
    integrator = args.integrator or preset.data["simulation"]["integrator"]
    warm_up.start_helper(model, integrator)   # a first run: the step compiled from both ends
    sim = Simulation(preset, integrator=integrator, model=model, rtol=args.rtol, atol=args.atol)
    result = simulate(sim, args.duration, args.every, progress=True, probe=args.probe)
    warm_up.note_steps_warm(model, integrator)
    if sim.start_notice:   # after the run: an error the run ends with stays the one line
        print(f"treedyn: {sim.start_notice}", file=sys.stderr)
    files, wrote = [], []
    if out is not None:
        if out.suffix == ".nc":
            from .io.netcdf import netcdf_writer

            files.append((out, netcdf_writer(result.arrays, {"preset": preset.name})))
        else:
            files.append((out, npz_writer(result.arrays)))
        wrote.append(str(out))
    if gltf is not None:
        from .io.gltf_export import Motion, build_glb

        glb = build_glb(Motion.from_arrays(result.arrays))
        files.append((gltf, lambda name: Path(name).write_bytes(glb)))
        wrote.append(f"{gltf} ({len(glb) / 1e6:.1f} MB)")
    write_together(files)   # both files or neither
    _say(f"{result.summary()}; wrote {' and '.join(wrote)}", deliverable=False)
    return 0


def _cmd_export(args) -> int:
    import time

    from .api import export_gltf

    start = time.perf_counter()
    size = export_gltf(args.run, args.out, args.fps)
    print(f"wrote {args.out}: {size / 1e6:.1f} MB of animated glTF"
          + (f" at {args.fps:g} frames per second" if args.fps else "")
          + f", in {time.perf_counter() - start:.1f} s")
    return 0


def _cmd_render(args) -> int:
    from .api import render

    print(render(_load(args.preset, args.overrides), args.duration, args.out, size=args.size,
                 fps=args.fps))
    return 0


def _cmd_expand(args) -> int:
    from .api import expand

    data = expand(_load(args.preset, args.overrides), args.out)
    _say(f"wrote {args.out}: {len(data['tree']['limbs'])} explicit limbs", deliverable=False)
    return 0


def _cmd_modes(args) -> int:
    from .analysis.modes import modes_command_output

    _say(modes_command_output(_load(args.preset, args.overrides), args.count, args.json),
         deliverable=True)
    return 0


def _cmd_pull(args) -> int:
    import json

    from .analysis.pull import format_json, format_text, pull
    from .simulation import Simulation

    result = pull(Simulation(_load(args.preset, args.overrides)), args.height, args.force,
                  args.inclination, args.direction, args.release)
    _say(json.dumps(format_json(result), allow_nan=False) if args.json
         else format_text(result), deliverable=True)
    return 0


def _cmd_bench(args) -> int:
    if args.which == "performance":
        from .bench.performance import SIZES, run

        run(args.sizes or SIZES, as_json=args.json, repeat=args.repeat)
        return 0
    if args.repeat != 1:
        raise TreedynError(f"bench {args.which}: --repeat applies to bench performance only")
    if args.which == "accuracy":
        from .bench.accuracy import main as accuracy

        print(accuracy(as_json=args.json))
    elif args.which == "study":
        from .bench.study import main as study_bench

        print(study_bench(as_json=args.json))
    else:
        from .api import app_commands

        app_commands().bench_frames(args.sizes, args.json)  # the app's canvas, this display
    return 0


def _cmd_study(args) -> int:
    from .studies.study_file import load_study

    study = load_study(args.study)  # every problem before any folder or worker exists
    if args.plot and "wind.speed" not in study.axes:
        raise TreedynError(f"{args.study}: --plot needs wind.speed among the axes")
    from .studies.report import report
    from .studies.study import run_study

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
    from .api import app_commands

    return app_commands().open_window(args.preset)



# A word of a message longer than this (a name, a path, a value echoed) is shown clipped.
MAX_WORD = 120


def clipped(message: str) -> str:
    """`message` on one line with every word longer than `MAX_WORD` characters clipped to its
    start and end and its length (a 100,000-character name is not echoed whole)."""
    def clip(match: re.Match) -> str:
        word = match.group(0)
        return f"{word[:60]}…{word[-20:]} ({len(word):,} characters)"

    return re.sub(r"[^\s'\":,]{%d,}" % (MAX_WORD + 1), clip, " ".join(message.splitlines()))


class _OutputLost(Exception):
    """Standard output could not be written (a full device, an I/O error)."""


def _say(text: str, deliverable: bool) -> None:
    """Print `text` on stdout. A reader that closed the pipe (`| head`) ends the command
    quietly; a stdout that cannot be written (full, closed) is one line on stderr, and a
    failure (exit 2, as for an output file that cannot be written) only when the text was
    the command's result (`deliverable`), not the summary of a file already written."""
    try:
        if sys.stdout is None:   # started with standard output closed (`>&-`)
            raise OSError(errno.EBADF, "standard output is closed")
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except OSError as error:
        _silence_stdout()
        if deliverable:
            raise _OutputLost(error.strerror or str(error)) from None
        print(f"treedyn: warning: cannot write to standard output: "
              f"{error.strerror or error}", file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    if sys.stdout is None:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that writes in progress clean up."""


_stopped_by: list[int] = []  # the exit status of a signal received, once one was
_ending: list[bool] = []  # set while `main` returns: a signal sent again is ignored
_resend: list[threading.Timer] = []  # the signal sent again after its exception was lost
RESEND_SECONDS = 0.05


def _on_sigterm(signum, frame):
    _stopped_by.append(EXIT_TERMINATED)
    if not _ending:
        raise _Terminated()


def _on_sigint(signum, frame):
    _stopped_by.append(EXIT_INTERRUPTED)
    if not _ending:
        raise KeyboardInterrupt


def _quiet_after_signal(unraisable) -> None:
    """sys.unraisablehook: a signal's exception raised inside a callback from C (numba's
    compiler) is lost there, and the command would run on (docs/hardening.md): the signal is
    sent again shortly, until its exception reaches the command. Anything else is reported as
    usual."""
    if not _stopped_by:
        sys.__unraisablehook__(unraisable)
        return
    if issubclass(unraisable.exc_type, (KeyboardInterrupt, _Terminated)) and not _ending:
        signum = signal.SIGTERM if _stopped_by[-1] == EXIT_TERMINATED else signal.SIGINT
        timer = threading.Timer(RESEND_SECONDS, os.kill, (os.getpid(), signum))
        timer.daemon = True
        _resend[:] = [timer]
        timer.start()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `treedyn` console command; returns the exit status."""
    main_thread = threading.current_thread() is threading.main_thread()
    _ending.clear()
    if main_thread:
        previous = (signal.signal(signal.SIGTERM, _on_sigterm),
                    signal.signal(signal.SIGINT, _on_sigint), sys.unraisablehook)
        sys.unraisablehook = _quiet_after_signal
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            # Overflow in a derived quantity is refused by the schema or the divergence check,
            # in words; numpy's own warnings would only add lines to the terminal.
            warnings.simplefilter("ignore", RuntimeWarning)
            status = _main(argv)
    finally:
        _ending.append(True)
        for timer in _resend:
            timer.cancel()
            timer.join()
        _resend.clear()
        if _stopped_by and main_thread:   # whatever the signal interrupted leaves no file
            from .output_file import remove_own_temporaries

            remove_own_temporaries()
        if main_thread and argv is None:
            # The console command has finished: the interpreter's teardown (~1.2 s with numba
            # loaded) ignores SIGTERM and Ctrl-C and the process ends with the command's own
            # status. Python gives its own handlers back to the defaults during teardown (a
            # SIGTERM then was a silent −15), but leaves an ignored signal ignored.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        elif main_thread:
            signal.signal(signal.SIGTERM, previous[0])
            signal.signal(signal.SIGINT, previous[1])
            sys.unraisablehook = previous[2]
    if argv is None and status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        # Asked to stop: the interpreter's teardown with numba and scipy loaded takes ~1.2 s
        # (measured); nothing is left to clean up (temporary files are already removed).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parsers = _parsers()
    command = argv[0] if argv and argv[0] in COMMANDS else "app"
    rest = argv[1:] if command != "app" else argv
    handlers = {"run": _cmd_run, "modes": _cmd_modes, "expand": _cmd_expand,
                "bench": _cmd_bench, "export": _cmd_export, "render": _cmd_render, "pull": _cmd_pull, "study": _cmd_study,
                "app": _cmd_app}
    try:
        args = parsers[command].parse_args(rest)
        return handlers[command](args)
    except SimulationDiverged as error:
        print(f"treedyn: error: {clipped(str(error))}", file=sys.stderr)
        return EXIT_DIVERGED
    except TreedynError as error:
        print(f"treedyn: error: {clipped(str(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except _OutputLost as error:   # like an --out that cannot be written
        print(f"treedyn: error: cannot write to standard output: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("treedyn: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Terminated:
        print("treedyn: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except MemoryError:
        print("treedyn: error: out of memory", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:   # a name too long, a read-only or full disk, a closed pipe
        from .output_file import os_error_text

        print(f"treedyn: error: {clipped(os_error_text(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception:
        if not _stopped_by:
            raise
        # A signal's exception raised inside numba's compiler surfaces as another error.
        print("treedyn: " + ("terminated" if _stopped_by[0] == EXIT_TERMINATED
                             else "interrupted"), file=sys.stderr)
        return _stopped_by[0]


if __name__ == "__main__":
    sys.exit(main())
