"""Studies on a real 2-worker LocalCluster: the same rows as without Dask, a killed worker,
an interruption and a resume, Ctrl-C on the command; no process left behind."""

import os
import pickle
import signal
import subprocess
import sys
import time

import cloudpickle
import psutil
import pyarrow.parquet as pq
import pytest

from treedyn_core.studies.study import run_study, specs_to_run
from treedyn_core.studies.study_file import load_study
from treedyn_core.studies.results import read_results
from treedyn_core.studies.study_run import OUTPUTS

distributed = pytest.importorskip("distributed")

STUDY = """\
study: {name}
preset: sapling
duration: {duration}
grid:
  wind.speed: [4, 8, 12, 16, 20, 24]
  wind.seed: [1, 2, 3, 4]
"""


def _study(tmp_path, name="s24", duration=0.25):
    path = tmp_path / f"{name}.yaml"
    path.write_text(STUDY.format(name=name, duration=duration))
    return load_study(path)


def _children():
    """Live child processes, less multiprocessing's resource tracker (one per parent process,
    started on the first spawn; it ends with its parent)."""
    return [p for p in psutil.Process().children(recursive=True) if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE
            and "resource_tracker" not in " ".join(p.cmdline())]


@pytest.fixture(scope="module")
def client():
    before = {p.pid for p in _children()}
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
    deadline = time.monotonic() + 20
    while {p.pid for p in _children()} - before and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p.cmdline() for p in _children() if p.pid not in before]
    assert not left, f"processes left behind: {left}"


def _rows_by_key(folder):
    table = read_results(folder).to_pylist()
    keys = [row["run_key"] for row in table]
    assert len(keys) == len(set(keys)), "a row written twice"
    return {row["run_key"]: row for row in table}


def test_rows_on_dask_equal_the_runs_done_one_by_one(tmp_path, client):
    study = _study(tmp_path)
    outcome = run_study(study, tmp_path / "out", client=client, stream=sys.stdout)
    assert outcome.written == 24 and outcome.by_status == {"ok": 24, "diverged": 0, "failed": 0}
    rows = _rows_by_key(tmp_path / "out")
    assert len(rows) == 24
    for spec, alone in zip(specs_to_run(study, set(), None), _rows_one_by_one(tmp_path / "s24.yaml")):
        on_dask = rows[spec.key]
        assert [on_dask[k] for k in OUTPUTS] == [alone[k] for k in OUTPUTS]  # bit for bit
        assert on_dask["wind.speed"] == spec.params["wind.speed"]
        assert on_dask["status"] == "ok" and on_dask["treedyn_version"] == alone["treedyn_version"]
    # pyarrow reads the dataset folder whole.
    assert pq.read_table(tmp_path / "out" / "results.parquet").num_rows == 24
    # The kernels were compiled once, in this process: the workers only loaded them.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    per_worker = client.run(_kernel_cache_stats)
    assert all(hits > 0 and misses == 0 for hits, misses in per_worker.values()), per_worker


def _rows_one_by_one(study_path):
    """The study's rows run one after the other without Dask, in a new process that loads the
    kernels from the cache as the workers do. (A process that compiled the kernels itself can
    differ from one that loaded them in the last bit of a float.)"""
    script = ("import pickle, sys\n"
              "from treedyn_core.studies.study import specs_to_run\n"
              "from treedyn_core.studies.study_file import load_study\n"
              "from treedyn_core.studies.study_run import run_row\n"
              "study = load_study(sys.argv[1])\n"
              "rows = [run_row(spec) for spec in specs_to_run(study, set(), None)]\n"
              "sys.stdout.buffer.write(pickle.dumps(rows))\n")
    done = subprocess.run([sys.executable, "-c", script, str(study_path)], capture_output=True,
                          check=True, timeout=600)
    return pickle.loads(done.stdout)


def _kernel_cache_stats():
    """(cache hits, cache misses) of every numba kernel of treedyn_core in this process."""
    from numba.core.registry import CPUDispatcher

    hits = misses = 0
    for name, module in list(sys.modules.items()):
        if name.startswith("treedyn_core"):
            for thing in vars(module).values():
                if isinstance(thing, CPUDispatcher) and thing._cache is not None:
                    hits += sum(thing.stats.cache_hits.values())
                    misses += sum(thing.stats.cache_misses.values())
    return hits, misses


def test_a_killed_worker_loses_no_row_and_doubles_none(tmp_path, client):
    study = _study(tmp_path, "killed", duration=0.5)
    killed = []

    def kill_one(row):
        if not killed:
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    run_study(study, tmp_path / "out", client=client, stream=sys.stdout, on_row=kill_one)
    assert killed
    rows = _rows_by_key(tmp_path / "out")
    assert set(rows) == {spec.key for spec in specs_to_run(study, set(), None)}
    assert {row["status"] for row in rows.values()} == {"ok"}
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it for the next test


def test_interrupted_then_resumed_runs_each_run_once(tmp_path, client):
    study = _study(tmp_path, "resumed")
    first: list[str] = []

    def interrupt_after_five(row):
        first.append(row["run_key"])
        if len(first) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_study(study, tmp_path / "out", client=client, stream=sys.stdout,
                  on_row=interrupt_after_five)
    assert set(_rows_by_key(tmp_path / "out")) == set(first)  # every row received was kept
    second: list[str] = []
    outcome = run_study(study, tmp_path / "out", client=client, stream=sys.stdout,
                        on_row=lambda row: second.append(row["run_key"]))
    assert not set(first) & set(second), "a run written before the interruption ran again"
    assert outcome.skipped == 5 and len(second) == 19
    assert set(_rows_by_key(tmp_path / "out")) == {s.key for s in specs_to_run(study, set(), None)}


@pytest.mark.slow
def test_ctrl_c_stops_the_command_cleanly_keeping_its_rows(tmp_path):
    study = tmp_path / "ctrlc.yaml"
    study.write_text(STUDY.format(name="ctrlc", duration=5.0))  # seconds of runs left to stop
    out = tmp_path / "out"
    command = [sys.executable, "-m", "treedyn_core", "study", str(study), "--out", str(out),
               "--workers", "2"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    for line in process.stderr:  # wait until runs are finishing
        if "/24 runs" in line:
            break
    workers = psutil.Process(process.pid).children(recursive=True)
    assert len(workers) >= 2
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    rest = process.stderr.read()
    assert process.wait(timeout=60) == 130
    assert "interrupted" in rest and "Traceback" not in rest, rest
    gone, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive, "worker processes left behind"
    assert len(_rows_by_key(out)) >= 3  # the rows received before Ctrl-C were written


def test_the_interrupted_wait_of_distributed_leaves_no_traceback():
    """distributed's `sync` callback that fails when Ctrl-C comes before its future exists is
    dropped from tornado's log while a study runs; every other record is kept."""
    import logging

    from treedyn_core.studies.study import INTERRUPTED_SYNC

    def record(message, error):
        exc_info = (type(error), error, None) if error else None
        return logging.LogRecord("tornado.application", logging.ERROR, __file__, 1, message,
                                 None, exc_info)

    cancel = "Exception in callback functools.partial(<function sync.<locals>.cancel at 0x1>)"
    assert not INTERRUPTED_SYNC(record(cancel, NameError("cannot access free variable")))
    assert INTERRUPTED_SYNC(record(cancel, ValueError("something else")))
    assert INTERRUPTED_SYNC(record("Exception in callback other", NameError("x")))
    assert INTERRUPTED_SYNC(record("a warning", None))
