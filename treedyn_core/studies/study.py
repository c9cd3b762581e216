"""`treedyn study`: a study's runs on Dask distributed, their rows in Parquet (docs/studies.md).

The client (this process) validates the study, compiles the kernels once (numba's file cache,
which the workers then load), and keeps a bounded window of runs in flight on the workers: a
`LocalCluster` of single-threaded worker processes, or an existing scheduler. Each run is one
task returning its row (`study_run.run_row`); the client writes the rows in batches
(`studies.results`), so an interrupted study keeps every row finished before the interruption
and a rerun of the same command runs only the rest.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from ..errors import TreedynError
from ..model.schema import MAX_WORKERS
from ..resources import check_memory
from .results import ResultsFolder
from .study_file import Study, run_key
from .study_run import OUTPUTS, TREE_OUTPUTS, RunSpec, run_row

BATCH_ROWS = 64          # rows per Parquet part at most
FLUSH_SECONDS = 20.0     # a part at least this often while rows arrive, s
IN_FLIGHT_PER_WORKER = 4  # tasks queued per worker: keeps workers busy, scheduler memory flat
WORKER_BYTES = 400e6     # a worker process with numba, scipy and a run loaded (~300 MB here)


@dataclass
class Outcome:
    """What one invocation did: rows written now, rows found from before, counts by status."""

    total: int
    skipped: int
    written: int
    by_status: dict[str, int]
    wall_s: float
    workers: int


def specs_to_run(study: Study, done: set[str], series_dir: Path | None) -> list[RunSpec]:
    """The runs of `study` whose key is not among `done`, in study order."""
    fixed = json.dumps(study.fixed, sort_keys=True)
    specs = []
    for index, params in enumerate(study.runs):
        key = run_key(params)
        if key not in done:
            specs.append(RunSpec(index, key, str(study.preset_path), fixed, params,
                                 study.duration, study.dt,
                                 str(series_dir) if series_dir else None))
    return specs


def warm_kernels(spec: RunSpec) -> None:
    """Compile every kernel a run uses in this process (a run of two steps), so numba's file
    cache holds them before any worker starts: workers load, never compile."""
    run_row(dataclasses.replace(spec, duration=2 * (spec.dt or 1e-3), series_dir=None))


def run_study(study: Study, out: str | os.PathLike, *, workers: int | None = None,
              scheduler: str | None = None, client=None, stream: TextIO = sys.stderr,
              on_row: Callable[[dict], None] | None = None) -> Outcome:
    """Run every run of `study` not yet in `out`, writing rows as they finish.

    Exactly one of: `client` (a `distributed.Client` the caller owns), `scheduler` (an
    address), or a new LocalCluster of `workers` processes (default: the CPU count).
    `on_row(row)` is called for every row received (the progress bar's hook). A
    KeyboardInterrupt writes the rows received so far, cancels the rest, and propagates.
    """
    start = time.perf_counter()
    _check_workers(workers)
    folder = ResultsFolder(out, study)
    done = folder.open()
    try:
        return _run(study, folder, done, out, workers, scheduler, client, stream, on_row, start)
    except (TreedynError, OSError):
        folder.discard_if_new()
        raise
    finally:
        folder.close()


def _check_workers(workers: int | None) -> None:
    """Refuse, before any folder or process exists, more local workers than `MAX_WORKERS`
    or than the memory available holds (`WORKER_BYTES` each)."""
    if workers is None:
        return
    if not 1 <= workers <= MAX_WORKERS:
        raise TreedynError(f"--workers must be 1 … {MAX_WORKERS}, got {workers}")
    check_memory(workers * WORKER_BYTES, f"{workers} worker processes",
                 "give fewer --workers", other_processes=True)


def _run(study, folder, done, out, workers, scheduler, client, stream, on_row, start):
    """`run_study` once its folder is held."""
    series_dir = Path(out) / "series" if study.series else None
    if series_dir:
        series_dir.mkdir(exist_ok=True)
    specs = specs_to_run(study, done, series_dir)
    skipped = len(study.runs) - len(specs)
    counts = {"ok": 0, "diverged": 0, "failed": 0}
    if not specs:
        print(f"study {study.name}: all {len(study.runs)} runs already in {folder.dataset}",
              file=stream)
        return Outcome(len(study.runs), skipped, 0, counts, time.perf_counter() - start, 0)

    warm_kernels(specs[0])
    owned = []
    try:
        if client is None:
            client, owned = _connect(workers, scheduler)
        n_workers = max(1, len(client.nthreads()))
        print(f"study {study.name}: {len(specs)} runs to do ({skipped} already written) on "
              f"{n_workers} workers; {_dashboard(client)}", file=stream)
        bar = Progress(len(specs), stream)
        tornado_log.addFilter(INTERRUPTED_SYNC)
        written = _drive(client, specs, folder, n_workers, counts, bar, on_row)
        bar.close()
    except KeyboardInterrupt:
        _quiet_shutdown_logs()
        raise
    finally:
        tornado_log.removeFilter(INTERRUPTED_SYNC)
        for thing in reversed(owned):
            thing.close()
    return Outcome(len(study.runs), skipped, written, counts, time.perf_counter() - start,
                   n_workers)


def _interrupted_sync(record: logging.LogRecord) -> bool:
    """False for the one record distributed's `sync` makes when Ctrl-C interrupts its wait
    before its future exists: the loop's callback `sync.<locals>.cancel` then fails with a
    NameError, which tornado logs with its traceback before the interrupt reaches the study
    (seen once in a full suite's Ctrl-C test). The study reports the interrupt in one line."""
    error = record.exc_info[1] if record.exc_info else None
    return not (isinstance(error, NameError) and "sync.<locals>.cancel" in record.getMessage())


INTERRUPTED_SYNC = _interrupted_sync
tornado_log = logging.getLogger("tornado.application")


def _quiet_shutdown_logs() -> None:
    """After Ctrl-C, the event loop's callbacks cut short by the interrupt log their tracebacks
    while the cluster closes (distributed's and tornado's loggers): the study has already said
    it was interrupted, so they are silenced."""
    for name in ("tornado.application", "tornado.general", "distributed", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _connect(workers: int | None, scheduler: str | None):
    """A client of `scheduler`, or of a new LocalCluster; and the objects to close after."""
    from distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler)
        return client, [client]
    # Worker processes started while SIGINT is ignored keep ignoring it (and Python installs
    # no KeyboardInterrupt handler in them): a terminal's Ctrl-C reaches only this process,
    # which then writes its rows and closes the cluster.
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    client = Client(cluster)
    return client, [cluster, client]


def _dashboard(client) -> str:
    try:
        import bokeh  # noqa: F401 - the dashboard needs it
    except ImportError:
        return "no dashboard (pip install bokeh for one)"
    return f"dashboard {client.dashboard_link}"


def _drive(client, specs: list[RunSpec], folder: ResultsFolder, n_workers: int,
           counts: dict[str, int], bar: "Progress", on_row) -> int:
    """Submit `specs` keeping IN_FLIGHT_PER_WORKER per worker queued; write rows in batches.
    Returns the number of rows written."""
    from distributed import as_completed

    pending = iter(specs)
    window = n_workers * IN_FLIGHT_PER_WORKER
    by_key: dict[str, RunSpec] = {}

    def submit(spec: RunSpec):
        # A fresh task key per submission: a resumed run never meets its cancelled namesake.
        key = f"treedyn-run-{spec.key}-{uuid.uuid4().hex[:8]}"
        by_key[key] = spec
        return client.submit(run_row, spec, key=key, pure=False)

    first = [submit(spec) for _, spec in zip(range(window), pending)]
    stream = as_completed(first)
    buffer: list[dict] = []
    seen: set[str] = set()
    written, last_flush = 0, time.monotonic()
    try:
        for future in stream:
            spec = by_key.pop(future.key)
            try:
                row = future.result()
            except Exception as exc:  # noqa: BLE001 - lost workers, cancelled tasks: a row
                row = failed_row(spec, exc)
            future.release()
            nxt = next(pending, None)
            if nxt is not None:
                stream.add(submit(nxt))
            if row["run_key"] in seen:
                continue
            seen.add(row["run_key"])
            buffer.append(row)
            counts[row["status"]] += 1
            bar.update(counts)
            if on_row:
                on_row(row)
            if len(buffer) >= BATCH_ROWS or time.monotonic() - last_flush > FLUSH_SECONDS:
                folder.write(buffer)
                written += len(buffer)
                buffer, last_flush = [], time.monotonic()
    finally:
        folder.write(buffer)  # also on Ctrl-C: every row received is kept
        written += len(buffer)
        if stream.futures:
            client.cancel(list(stream.futures))
    return written


def failed_row(spec: RunSpec, exc: BaseException) -> dict:
    """The row of a run whose task failed outside the run (e.g. its worker kept dying)."""
    from .. import __version__

    row = {"run": spec.index, "run_key": spec.key, **spec.params}
    row.update({name: float("nan") for name in OUTPUTS + TREE_OUTPUTS})
    row.update(status="failed", error=f"{type(exc).__name__}: {exc}", wall_s=float("nan"),
               treedyn_version=__version__)
    return row


class Progress:
    """Runs done of `total`, failures, elapsed time and ETA on one line of `stream`: redrawn
    on a terminal, else a line at every tenth of the study."""

    def __init__(self, total: int, stream: TextIO):
        self.total, self.stream = total, stream
        self.terminal = stream.isatty()
        self.start = time.monotonic()
        self.last, self.done, self.bad = 0.0, 0, 0
        self.next_tenth = 1

    def update(self, counts: dict[str, int]) -> None:
        self.done = sum(counts.values())
        self.bad = counts["diverged"] + counts["failed"]
        now = time.monotonic()
        if self.terminal and (now - self.last > 0.2 or self.done == self.total):
            self.last = now
            self.stream.write("\r" + self.line())
            self.stream.flush()
        elif not self.terminal and self.done * 10 >= self.next_tenth * self.total:
            self.next_tenth = self.done * 10 // self.total + 1
            print(self.line(), file=self.stream, flush=True)

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        width = 24
        filled = int(width * self.done / self.total)
        return (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} runs, "
                f"{self.bad} diverged/failed, {_clock(elapsed)} elapsed, ETA {_clock(eta)}")

    def close(self) -> None:
        if self.terminal:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    """h:mm:ss (or --:-- when unknown)."""
    if seconds != seconds:
        return "--:--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
