"""Hostile input at the command line: every case ends with the right exit status, at most one
line on stderr, no traceback, nothing left behind (no output, no temporary file), within a
stated time and under a memory cap (RLIMIT_AS, set in the child).

One test per cause found by trying the command line as a hostile user would; the rows of the
list they came from are named in each test's first line.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Address space of a child: numba and LLVM reserve ~1.5 GB of it at import; the runs below
# need a few hundred MB more. A command that ignored its memory estimate would fail under it.
MEMORY_CAP = 3 * 2**30  # bytes
# Wall time of a refused command: importing numpy, scipy and numba (~2 s here) and the check.
REFUSE_SECONDS = 60.0
# Ctrl-C and SIGTERM must be answered within this (compiled chunks of ~0.2 s each).
SIGNAL_SECONDS = 1.0

COMPILING = "treedyn: compiling kernels"

EXIT_OK, EXIT_BAD_INPUT, EXIT_DIVERGED, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 2, 3, 130, 143


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def start(args, cwd, stdout=subprocess.PIPE, **kwargs):
    """`treedyn ARGS` in a child with the memory cap, in folder `cwd`."""
    return subprocess.Popen([sys.executable, "-m", "treedyn_core", *map(str, args)], cwd=cwd,
                            stdout=stdout, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_cap_memory, **kwargs)


def check_contract(process, cwd, status, seconds=REFUSE_SECONDS, leave=()):
    """Wait for `process`; assert its status, one line at most on stderr, no traceback, and no
    file in `cwd` but those listed in `leave` (and those there before). Returns stderr."""
    before = process.before
    try:
        _, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"no answer within {seconds} s")
    assert "Traceback" not in err, err
    # The notice of a first run's compilation is progress, not a message about the input.
    err = "\n".join(line for line in err.splitlines() if not line.startswith(COMPILING))
    assert len(err.strip().splitlines()) <= 1, err
    assert process.returncode == status, (process.returncode, err)
    left = set(os.listdir(cwd)) - before - set(leave)
    assert not left, left
    return err.strip()


# The refusals run in one long-lived child under the memory cap, each as `main(args)` in its
# own folder: importing numpy, scipy and numba once instead of ~30 times (~4 s each here).
_SERVER = """
import contextlib, io, json, os, sys, traceback
from treedyn_core.cli import main
for line in sys.stdin:
    request = json.loads(line)
    os.chdir(request["cwd"])
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = main(request["args"])
    except BaseException:
        status = None
        err.write(traceback.format_exc())
    sys.__stdout__.write(json.dumps({"status": status, "err": err.getvalue()}) + "\\n")
    sys.__stdout__.flush()
"""


class _Server:
    """The child that runs `treedyn` commands in-process, restarted if it dies."""

    def __init__(self):
        self.process = None

    def run(self, args, cwd, seconds):
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=cwd,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            text=True, preexec_fn=_cap_memory)
        self.process.stdin.write(json.dumps({"args": list(map(str, args)),
                                             "cwd": str(cwd)}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], seconds + 30.0)
        if not ready:
            self.close()
            pytest.fail(f"no answer within {seconds} s")
        line = self.process.stdout.readline()
        if not line:
            self.process = None
            pytest.fail("the command killed the process")
        return json.loads(line)

    def close(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None


@pytest.fixture(scope="module")
def server():
    child = _Server()
    yield child
    child.close()


@pytest.fixture
def treedyn(server, tmp_path):
    """`treedyn(args, status, seconds, leave)`: run a command in `tmp_path` and check the
    contract; returns its stderr (one line at most)."""

    def run(args, status=EXIT_BAD_INPUT, seconds=REFUSE_SECONDS, leave=()):
        before = set(os.listdir(tmp_path))
        start_time = time.monotonic()
        reply = server.run(args, tmp_path, seconds)
        assert time.monotonic() - start_time < seconds
        err = reply["err"]
        assert "Traceback" not in err, err
        lines = [line for line in err.splitlines() if not line.startswith(COMPILING)]
        assert len(lines) <= 1, err
        assert reply["status"] == status, (reply["status"], err)
        left = set(os.listdir(tmp_path)) - before - set(leave)
        assert not left, left
        return "\n".join(lines).strip()

    return run


# -- 1. no run returns nonsense: see test_storm.py (every preset at the schema's limits) ----------

def test_diverging_run_stops_with_one_line_and_status_3(treedyn):
    """Row 1: an unstable step stops at the first frame out of bounds, nothing written
    (generalized-α without numerical damping, ρ∞ = 1, runs away in the storm at the schema's
    limits: at 1.7 s with this wind's seed; the runaway's onset is chaotic, seeds 0–15 take
    1.7–51 s)."""
    err = treedyn(["run", "two_limbs", "--duration", "60", "--integrator", "galpha",
                   "--set", "wind.speed=60", "--set", "wind.turbulence_intensity=1.0",
                   "--set", "simulation.dt=0.1", "--set", "simulation.rho_inf=1",
                   "--set", "wind.seed=5"], EXIT_DIVERGED)
    assert "diverged at t = " in err and "limb" in err and "likely cause" in err


def test_wind_speed_above_the_schema_maximum_is_refused(treedyn):
    """Row 1: 100 m/s was the old maximum; it is now 60 m/s, with its reason in the schema."""
    err = treedyn(["run", "young_oak", "--duration", "1", "--set", "wind.speed=100"])
    assert "wind.speed" in err and "60 m/s" in err


# -- 2. durations and steps that overflow ---------------------------------------------------------

@pytest.mark.parametrize("args", [["--duration", "1e308"],
                                  ["--duration", "1e-318", "--dt", "1e-320"],
                                  ["--duration", "1e9", "--dt", "1e-9"]])
def test_overflowing_duration_or_step_is_refused(treedyn, args):
    """Row 2."""
    treedyn(["run", "two_limbs", *args])


# -- 3. deep nesting in --set ---------------------------------------------------------------------

def test_deeply_nested_set_value_is_refused(treedyn):
    """Row 3."""
    err = treedyn(["run", "two_limbs", "--duration", "0.1",
                   "--set", "name=" + "[" * 500 + "]" * 500])
    assert "nested" in err and len(err) < 400


# -- 4. an output that cannot be written ----------------------------------------------------------

@pytest.mark.parametrize("out", ["/proc/treedyn-test.npz", "a" * 300 + ".npz"])
def test_unwritable_output_is_refused_before_the_run(treedyn, out):
    """Row 4: a folder no one may write in, a name too long for the file system."""
    err = treedyn(["run", "two_limbs", "--duration", "1", "--out", out])
    assert err.startswith("treedyn: error: cannot write")


# -- 5. sizes whose derived quantities overflow ---------------------------------------------------

@pytest.mark.parametrize("setting", ["tree.generator.trunk.radius=1e100",
                                     "tree.generator.length_ratio=1e-300",
                                     "tree.generator.levels=2000"])
def test_overflowing_generator_sizes_are_refused(treedyn, setting):
    """Row 5."""
    err = treedyn(["run", "young_oak", "--duration", "0.1", "--set", setting])
    assert setting.split("=")[0] in err


def test_overflowing_explicit_limb_is_refused(treedyn):
    """Row 5: an explicit limb with radius 1e100."""
    err = treedyn(["run", "two_limbs", "--duration", "0.1", "--set",
                   "tree.limbs[0].radius=1e100"])
    assert "tree.limbs[0].radius" in err


# -- 6–9. memory ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_modes_of_a_long_chain_fit_in_memory(tmp_path):
    """Row 6: a legal 20,000-segment trunk. Its matrices are kept in O(N) (docs/design.md §7):
    the modes are computed under the memory cap (~0.3 GB resident) instead of refused."""
    (tmp_path / "chain.yaml").write_text(
        "name: chain\ntree:\n  generator:\n    trunk: {length: 20.0, radius: 0.3, "
        "segments: 20000}\n    levels: 0\n")
    with open(tmp_path / "modes.json", "w") as out:
        process = start(["modes", "chain.yaml", "--json"], tmp_path, stdout=out)
        process.before = set(os.listdir(tmp_path))
        check_contract(process, tmp_path, EXIT_OK, seconds=120)
    data = json.loads((tmp_path / "modes.json").read_text())
    frequencies = [mode["frequency_hz"] for mode in data["modes"]]
    assert len(frequencies) == 10 and len(data["limb_names"]) == 20000
    assert 0.0 < frequencies[0] and frequencies == sorted(frequencies)
    assert data["modes"][0]["description"].startswith("trunk sway")


@pytest.mark.parametrize("preset, duration", [("giant", "1000"), ("young_oak", "3000")])
def test_output_that_would_not_fit_is_refused_even_with_every(treedyn, preset,
                                                                 duration):
    """Rows 7 and 8: --every no longer switches the memory check off."""
    err = treedyn(["run", preset, "--duration", duration, "--every", "1"],
                  seconds=120)
    assert "GiB" in err and "--every" in err


def test_max_limbs_has_an_upper_bound(treedyn):
    """Row 9."""
    err = treedyn(["run", "young_oak", "--duration", "1", "--set",
                   "tree.generator.max_limbs=1000000000", "--set", "tree.generator.levels=13"])
    assert "max_limbs" in err


# -- 10–12. preset files --------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/full"])
def test_device_as_preset_is_refused(treedyn, device):
    """Row 10."""
    assert "not a regular file" in treedyn(["run", device, "--duration", "1"],
                                           seconds=30)


def test_fifo_as_preset_is_refused_without_blocking(treedyn, tmp_path):
    """Row 11."""
    os.mkfifo(tmp_path / "pipe.yaml")
    assert "not a regular file" in treedyn(["run", "pipe.yaml", "--duration", "1"],
                                           seconds=30)


def _chain_preset(limbs: int) -> str:
    """A legal preset: a chain of `limbs` explicit limbs, each on its own line."""
    lines = ["version: 1", "name: chain", "tree:", "  limbs:",
             "    - {name: L0, length: 0.5, radius: 0.05, direction: [0, 0, 1]}"]
    lines += [f"    - {{name: L{i}, parent: L{i - 1}, length: 0.5, radius: 0.05}}"
              for i in range(1, limbs)]
    return "\n".join(lines) + "\n"


def test_a_read_past_the_time_limit_is_refused(tmp_path, monkeypatch):
    """Row 10, time: `read_preset_text` looks at the clock between chunks, so a source slower
    than the limit (here: the limit lowered, and the clock run past it before the read) is
    refused with one line; the same file and limit without the wait is read."""
    from treedyn_core.model import preset
    from treedyn_core.errors import PresetError

    monkeypatch.setattr(preset, "MAX_PRESET_SECONDS", 0.5)
    path = tmp_path / "chain.yaml"
    path.write_text(_chain_preset(10))
    assert preset.read_preset_text(path, preset.ReadDeadline(path.name)).startswith("version")
    deadline = preset.ReadDeadline(path.name)
    time.sleep(0.6)
    with pytest.raises(PresetError, match=r"^chain\.yaml: reading and parsing took more than "
                                          r"0\.5 s, the limit for a file"):
        preset.read_preset_text(path, deadline)


# Limbs of the chain preset below: about 0.9 s of CPU to parse here (2.4 s of wall time for
# half as many with five processes sharing two cores).
SLOW_CHAIN_LIMBS = 8000
# The time limit lowered for it, s; the refusal must come within this plus 0.5 s of the
# process's CPU time (its wall time adds whatever else holds the cores: once 1.26 s in the
# suite) and before half the whole file's parse.
SLOW_LIMIT = 0.1  # s
_LOWERED_LIMIT = """
import sys
from treedyn_core.model import preset
from treedyn_core.cli import main
preset.MAX_PRESET_SECONDS = float(sys.argv[1])
sys.exit(main(sys.argv[2:]))
"""


def test_a_parse_past_the_time_limit_stops_within_the_limit(tmp_path, monkeypatch):
    """Row 10, time: a legal preset that takes longer to parse than the (lowered) limit is
    refused during the parse (within the limit plus 0.5 s, not after the whole file) and, at
    the command line, with one line and exit 2; with the limit as shipped it is read in full."""
    from treedyn_core.model import preset
    from treedyn_core.errors import PresetError

    path = tmp_path / "chain.yaml"
    path.write_text(_chain_preset(SLOW_CHAIN_LIMBS))
    began, cpu = time.monotonic(), time.process_time()
    assert len(preset.load_preset(path).data["tree"]["limbs"]) == SLOW_CHAIN_LIMBS
    parse_seconds, parse_cpu = time.monotonic() - began, time.process_time() - cpu
    assert 2 * SLOW_LIMIT < parse_seconds < preset.MAX_PRESET_SECONDS
    monkeypatch.setattr(preset, "MAX_PRESET_SECONDS", SLOW_LIMIT)
    cpu = time.process_time()
    with pytest.raises(PresetError, match="reading and parsing took more than"):
        preset.load_preset(path)
    refused_cpu = time.process_time() - cpu
    assert refused_cpu < SLOW_LIMIT + 0.5
    assert refused_cpu < 0.5 * parse_cpu   # stopped during the parse, not after it

    before = set(os.listdir(tmp_path))
    done = subprocess.run([sys.executable, "-c", _LOWERED_LIMIT, str(SLOW_LIMIT), "run",
                           "chain.yaml", "--duration", "1"], cwd=tmp_path, capture_output=True,
                          text=True, preexec_fn=_cap_memory, timeout=REFUSE_SECONDS)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert done.stderr == (f"treedyn: error: chain.yaml: reading and parsing took more than "
                           f"{SLOW_LIMIT:g} s, the limit for a file (a slow or stalled "
                           f"source?)\n")
    assert set(os.listdir(tmp_path)) == before


LAUGHS = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x]"] + [
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]) + "\n"


def test_billion_laughs_file_is_refused(treedyn, tmp_path):
    """Row 12: nine levels of nine aliases."""
    (tmp_path / "laughs.yaml").write_text(LAUGHS)
    assert "aliases" in treedyn(["run", "laughs.yaml", "--duration", "1"],
                                seconds=30)


def test_billion_laughs_in_set_is_refused(treedyn):
    """Row 12, in --set."""
    levels = ["&a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"] + [
        f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    value = "[" + ", ".join(levels) + "]"
    assert "aliases" in treedyn(["run", "two_limbs", "--duration", "1", "--set",
                                 f"name={value}"], seconds=30)


# -- 13–14. signals -------------------------------------------------------------------------------

def _wait_until_running(process, seconds):
    """Give the child `seconds` to import and compile, then check that it still runs."""
    time.sleep(seconds)
    assert process.poll() is None, process.communicate()


def test_ctrl_c_stops_a_tiny_step_run_within_a_second(tmp_path):
    """Row 13: --dt 1e-9 makes one frame 4 M steps; the run answers between compiled chunks."""
    before = set(os.listdir(tmp_path))
    process = start(["run", "two_limbs", "--duration", "1", "--dt", "1e-9"], tmp_path)
    process.before = before
    _wait_until_running(process, 8.0)
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    err = check_contract(process, tmp_path, EXIT_INTERRUPTED, seconds=10)
    assert time.monotonic() - sent < SIGNAL_SECONDS, err
    assert err == "treedyn: interrupted"


@pytest.mark.slow
def test_ctrl_c_stops_a_first_run_while_it_compiles(tmp_path):
    """Row 13: with an empty kernel cache the first seconds are numba compiling."""
    work = tmp_path / "work"
    work.mkdir()
    process = start(["run", "two_limbs", "--duration", "1"], work,
                    env=dict(os.environ, TREEDYN_CACHE_DIR=str(tmp_path / "cache")))
    process.before = set()
    _wait_until_running(process, 6.0)
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    assert check_contract(process, work, EXIT_INTERRUPTED, seconds=10) == "treedyn: interrupted"
    assert time.monotonic() - sent < SIGNAL_SECONDS


@pytest.mark.parametrize("command", [
    ["run", "young_oak", "--duration", "300", "--every", "4", "--out", "g.npz"],
    ["expand", "giant", "g.yaml"]])
def test_sigterm_leaves_no_temporary_file(tmp_path, command):
    """Row 14: the temporary file of a write in progress is removed (the target never made)."""
    before = set(os.listdir(tmp_path))
    process = start(command, tmp_path)
    process.before = before
    # SIGTERM while the output's temporary file is being written (expand: seconds after the
    # start on a quiet machine), or after 6 s of a run that writes only at its end.
    deadline = time.monotonic() + 6.0
    while time.monotonic() < deadline and not any(
            name.startswith(".") and ".tmp" in name for name in os.listdir(tmp_path)):
        assert process.poll() is None, process.communicate()
        time.sleep(0.005)
    process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    check_contract(process, tmp_path, EXIT_TERMINATED, seconds=10)
    assert time.monotonic() - sent < SIGNAL_SECONDS


def test_a_signal_during_the_output_check_leaves_no_probe_file(tmp_path, monkeypatch):
    """Row 14: SIGTERM right after the output check's probe file is made (before a run): the
    probe is removed all the same. (Python runs a signal's handler in the main thread at the
    next bytecode, whichever thread the signal reached.)"""
    run = importlib.import_module("treedyn_core.io.run")   # the module, not the API's function

    class Stop(BaseException):
        pass

    def stop(signum, frame):
        raise Stop()

    made = os.open

    def made_then_signalled(*args, **kwargs):
        handle = made(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return handle

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(run.os, "open", made_then_signalled)
            with pytest.raises(Stop):
                run.check_writable(tmp_path / "g.npz")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert os.listdir(tmp_path) == []


def test_a_signal_inside_a_clean_up_leaves_no_file(tmp_path, monkeypatch):
    """Row 14: SIGTERM whose exception lands inside the clean-up of the output check (the probe
    made, its unlink not yet run: a poll that saw the probe and signalled at once did so under
    load): the command still ends 143 and its folder holds no temporary file."""
    from treedyn_core import cli
    from treedyn_core import output_file

    unlink = Path.unlink

    def signalled_first(self, *args, **kwargs):
        if ".tmp" in self.name:
            os.kill(os.getpid(), signal.SIGTERM)   # raised here, before the file goes
        return unlink(self, *args, **kwargs)

    monkeypatch.setattr(output_file.Path, "unlink", signalled_first)
    monkeypatch.chdir(tmp_path)
    status = cli.main(["run", "two_limbs", "--duration", "0.1", "--out", "g.npz"])
    assert status == EXIT_TERMINATED
    assert os.listdir(tmp_path) == []


# -- 15. closed pipes and full devices ------------------------------------------------------------

def test_closed_pipe_ends_quietly(tmp_path):
    """Row 15: `treedyn modes young_oak --json | head -c 10`."""
    process = start(["modes", "young_oak", "--json"], tmp_path)
    process.before = set(os.listdir(tmp_path))
    process.stdout.read(10)
    process.stdout.close()
    process.stdout = None
    check_contract(process, tmp_path, EXIT_OK)


def test_result_to_a_full_device_fails_in_one_line(tmp_path):
    """Row 15: modes' table is its result; it was lost."""
    with open("/dev/full", "w") as full:
        process = start(["modes", "two_limbs"], tmp_path, stdout=full)
        process.before = set(os.listdir(tmp_path))
        err = check_contract(process, tmp_path, EXIT_BAD_INPUT)
    assert "cannot write to standard output" in err


def test_summary_to_a_full_device_warns_and_keeps_the_file(tmp_path):
    """Row 15: run's file is its result; only the summary line was lost."""
    with open("/dev/full", "w") as full:
        process = start(["run", "two_limbs", "--duration", "0.5", "--out", "t.npz"], tmp_path,
                        stdout=full)
        process.before = set(os.listdir(tmp_path))
        err = check_contract(process, tmp_path, EXIT_OK, leave={"t.npz"})
    assert "warning: cannot write to standard output" in err


# -- 16–17. numbers checked where they enter ------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--set", "simulation.gravity=[0,0,1e308]"],
    ["--set", "material.density=1e300"],
    ["--set", "root_position=[1e308,0,0]"],
    ["--set", "tree.limbs[1].direction=[1e200,1e200,0]"],
    ["--set", "tree.limbs[1].direction=[1e-200,1e-200,0]"]])
def test_values_whose_derived_quantities_overflow_are_refused(treedyn, args):
    """Rows 16 and 17: one line from the schema, no numpy warning."""
    err = treedyn(["run", "two_limbs", "--duration", "0.1", *args])
    assert args[1].split("=")[0] in err


def test_dop853_tolerance_below_round_off_is_refused(treedyn):
    """Row 16: --rtol 1e-300 (scipy warned and raised it to 100 ε)."""
    assert "--rtol" in treedyn(["run", "two_limbs", "--duration", "0.05", "--integrator",
                                "dop853", "--rtol", "1e-300"])


# -- 18. the smaller points -----------------------------------------------------------------------

def test_dt_goes_through_the_schema(treedyn):
    """Row 18: --dt above simulation.dt's 0.1 s maximum."""
    assert "simulation.dt" in treedyn(["run", "two_limbs", "--duration", "1", "--dt", "0.5"])


def test_empty_out_is_refused(treedyn):
    """Row 18: --out '' used to write PRESET.npz."""
    assert "--out" in treedyn(["run", "two_limbs", "--duration", "1", "--out", ""])


def test_npz_is_written_with_the_umask_permissions(treedyn, tmp_path):
    """Row 18: not mkstemp's 0600."""
    treedyn(["run", "two_limbs", "--duration", "0.1", "--out", "t.npz"], EXIT_OK,
            leave={"t.npz"})
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "t.npz").stat().st_mode) == 0o666 & ~mask


def test_symlink_loop_is_named(treedyn, tmp_path):
    """Row 18: reported as "no such file" before."""
    os.symlink("b.yaml", tmp_path / "a.yaml")
    os.symlink("a.yaml", tmp_path / "b.yaml")
    assert "loop of symbolic links" in treedyn(["run", "a.yaml", "--duration", "1"])


def test_expand_names_the_preset_for_an_initial_state_error(treedyn, tmp_path):
    """Row 18: the message named the output file."""
    (tmp_path / "bad.yaml").write_text(
        "name: b\ntree:\n  generator: {levels: 1}\ninitial_state:\n"
        "  - {limb: nosuch, rotation_deg: [5, 0, 0]}\n")
    err = treedyn(["expand", "bad.yaml", "out.yaml"])
    assert err.startswith("treedyn: error: bad.yaml:5: initial_state[0].limb")


def test_missing_file_still_says_so(treedyn):
    """Row 18's symlink fix must not change the message for a missing file."""
    assert "no such file" in treedyn(["run", Path("nope.yaml"), "--duration", "1"])


class _Interrupting:
    """An array whose conversion raises, as a signal would in the middle of a write."""

    def __array__(self, *args, **kwargs):
        raise KeyboardInterrupt


def test_write_interrupted_midway_leaves_no_temporary_file(tmp_path):
    """Row 14, deterministically: the temporary file of a write in progress is removed on a
    signal's exception, and no target is made."""
    import numpy as np

    from treedyn_core.io.run import write_npz

    with pytest.raises(KeyboardInterrupt):
        write_npz({"t": np.zeros(1000), "later": _Interrupting()}, tmp_path / "x.npz")
    assert os.listdir(tmp_path) == []
