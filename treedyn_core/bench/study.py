"""`treedyn bench study`: what Dask costs a study (docs/studies.md).

- throughput: the same THROUGHPUT_RUNS runs on a LocalCluster of 1 worker, then of 2, side by
  side in one session; the ratio of runs per second (target ≥ 1.7 on 2 cores);
- scheduling overhead per run: OVERHEAD_RUNS runs of one time step on 1 worker, the study's
  wall time less the runs' own wall time (`wall_s`), per run (target ≤ 50 ms);
- scheduler memory: a MEMORY_RUNS-run study of one-step runs on 2 workers of a scheduler in a
  process of its own (`dask scheduler`, `dask worker`: the client's rows and bookkeeping are
  not in it), the scheduler process's resident memory and task count sampled as rows arrive
  (target: no growth beyond the rows themselves, which the client writes in batches and
  forgets).

Workers are started and warmed (imports, kernels loaded) before any clock starts.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from ..studies.study import run_study
from ..studies.study_file import load_study

THROUGHPUT_RUNS = 16      # sapling, THROUGHPUT_SECONDS simulated each
THROUGHPUT_SECONDS = 200.0  # s: runs long against the fixed cost of a study (about 1 s)
OVERHEAD_RUNS = 200       # two_limbs, one step each
MEMORY_RUNS = 10_000      # two_limbs, one step each
_STUDY = "study: {name}\npreset: {preset}\nduration: {duration}\ngrid:\n  wind.seed: {seeds}\n"


def _study(folder: Path, name: str, preset: str, duration: float, runs: int):
    path = folder / f"{name}.yaml"
    path.write_text(_STUDY.format(name=name, preset=preset, duration=duration,
                                  seeds=list(range(runs))))
    return load_study(path)


def _cluster(workers: int):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    client.run(_warm)
    return cluster, client


def _warm() -> None:
    """Import the run code and load its kernels in a worker."""
    from ..studies.study_run import record  # noqa: F401 - imports numba kernels from the cache


def _timed(study, folder: Path, client, on_row=None) -> tuple[float, float]:
    """(wall s of the study, sum of its runs' own wall s)."""
    rows: list[float] = []

    def keep(row):
        rows.append(row["wall_s"])
        if on_row:
            on_row(row)

    start = time.perf_counter()
    run_study(study, folder, client=client, stream=io.StringIO(), on_row=keep)
    return time.perf_counter() - start, sum(rows)


def _scheduler_state(dask_scheduler) -> tuple[int, int]:
    import psutil

    return psutil.Process().memory_info().rss, len(dask_scheduler.tasks)


def measure() -> dict:
    """Run the three measurements; return their figures (units in the names)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        result: dict = {}
        walls = {}
        for workers in (1, 2):
            cluster, client = _cluster(workers)
            try:
                study = _study(folder, f"t{workers}", "sapling", THROUGHPUT_SECONDS,
                               THROUGHPUT_RUNS)
                walls[workers], _ = _timed(study, folder / f"t{workers}", client)
                if workers == 1:
                    study = _study(folder, "overhead", "two_limbs", 1 / 120, OVERHEAD_RUNS)
                    wall, inside = _timed(study, folder / "overhead", client)
                    result["overhead_ms_per_run"] = 1e3 * (wall - inside) / OVERHEAD_RUNS
            finally:
                client.close()
                cluster.close()
        result.update(_memory(folder))
        result["throughput_runs_per_s_1_worker"] = THROUGHPUT_RUNS / walls[1]
        result["throughput_runs_per_s_2_workers"] = THROUGHPUT_RUNS / walls[2]
        result["throughput_ratio_2_vs_1"] = walls[1] / walls[2]
    return result


@contextmanager
def _separate_scheduler(folder: Path, workers: int):
    """A client of a scheduler running in a process of its own, with `workers` worker
    processes of one thread (the way a study on a cluster is run: `--scheduler ADDRESS`)."""
    from distributed import Client

    address_file = folder / "scheduler.json"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    processes = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                   "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(address_file)], **quiet)]
    try:
        while not address_file.exists():
            time.sleep(0.1)
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
             str(address_file), "--nworkers", str(workers), "--nthreads", "1",
             "--no-dashboard"], **quiet))
        with Client(scheduler_file=str(address_file)) as client:
            client.wait_for_workers(workers)
            client.run(_warm)
            yield client
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait()


def _memory(folder: Path) -> dict:
    """The scheduler's resident memory over a MEMORY_RUNS-run study on 2 workers."""
    study = _study(folder, "memory", "two_limbs", 1 / 120, MEMORY_RUNS)
    samples: list[tuple[int, int, int]] = []
    count = [0]
    with _separate_scheduler(folder, 2) as client:
        def sample(row):
            count[0] += 1
            if count[0] % 500 == 0:
                rss, tasks = client.run_on_scheduler(_scheduler_state)
                samples.append((count[0], rss, tasks))

        wall, _ = _timed(study, folder / "memory", client, sample)

    def growth(since: int) -> float:
        first = next(s for s in samples if s[0] >= since)
        return (samples[-1][1] - first[1]) / 1e3 / max(1, (samples[-1][0] - first[0]) / 1000)

    early = next(s for s in samples if s[0] >= 1000)
    return {"memory_runs": MEMORY_RUNS, "memory_study_wall_s": wall,
            "scheduler_rss_MB_at_1000_runs": early[1] / 1e6,
            "scheduler_rss_MB_at_end": samples[-1][1] / 1e6,
            "scheduler_rss_growth_kB_per_1000_runs": growth(1000),
            "scheduler_rss_growth_kB_per_1000_runs_second_half": growth(MEMORY_RUNS // 2),
            "scheduler_tasks_max": max(s[2] for s in samples)}


def main(as_json: bool = False) -> str:
    """The benchmark's report: a table, or JSON."""
    figures = measure()
    if as_json:
        return json.dumps(figures, indent=1)
    return "\n".join([
        f"throughput, {THROUGHPUT_RUNS} runs of sapling × {THROUGHPUT_SECONDS:g} s: "
        f"{figures['throughput_runs_per_s_1_worker']:.3f} runs/s on 1 worker, "
        f"{figures['throughput_runs_per_s_2_workers']:.3f} on 2: "
        f"{figures['throughput_ratio_2_vs_1']:.2f}× (target ≥ 1.7×)",
        f"scheduling overhead, {OVERHEAD_RUNS} one-step runs on 1 worker: "
        f"{figures['overhead_ms_per_run']:.1f} ms per run (target ≤ 50 ms)",
        f"scheduler memory (its own process), {MEMORY_RUNS:,} one-step runs on 2 workers "
        f"({figures['memory_study_wall_s']:.0f} s): "
        f"{figures['scheduler_rss_MB_at_1000_runs']:.1f} MB after 1,000 runs, "
        f"{figures['scheduler_rss_MB_at_end']:.1f} MB at the end "
        f"({figures['scheduler_rss_growth_kB_per_1000_runs']:+.0f} kB per 1,000 runs; "
        f"{figures['scheduler_rss_growth_kB_per_1000_runs_second_half']:+.0f} over the second "
        f"half), at most {figures['scheduler_tasks_max']} tasks held"])
