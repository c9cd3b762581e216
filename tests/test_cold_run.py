"""A command's first run compiles the articulated step from both ends: `treedyn run` starts a
child (`warm_up.start_helper`) that compiles the step's own kernels while the command compiles
the step from the top and loads them from the cache. The child must compile exactly the
overloads the step uses (else the command compiles them again and nothing is gained), run
only while the step's kernels are not yet cached, and end with the command."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from treedyn_core import warm_up
from treedyn_core.cli import main

ROOT = Path(__file__).resolve().parents[1]

# A process that builds a two-limb simulation, steps it and prints the package's kernels it
# compiled (numba's compile event; a kernel loaded from the cache raises none).
STEP_AND_LIST_COMPILES = """
from numba.core import event
compiled = []
class Record(event.Listener):
    def on_start(self, e):
        pass
    def on_end(self, e):
        f = e.data["dispatcher"].py_func
        compiled.append(f"{f.__module__}.{f.__qualname__}")
event.register("numba:compile", Record())
from treedyn_core.model.preset import load_preset
from treedyn_core.simulation import Simulation
data = load_preset("two_limbs").data
data["wind"]["speed"] = 5.0
Simulation.from_data(data).step(1)
print("\\n".join(compiled))
"""

LEAVES = ("dynamics.articulated.articulated_outward", "dynamics.articulated.articulated_inward",
          "dynamics.articulated.implicit_joint_blocks", "dynamics.articulated.subtree_sums",
          "dynamics.articulated.limb_inertias", "dynamics.aero.drag_loads",
          "dynamics.wind.wind_at_points", "dynamics.wind.wind_modes", "dynamics.aero.midpoints")


@pytest.mark.slow
def test_the_helper_compiles_the_overloads_the_step_uses(tmp_path):
    """After the helper has filled an empty cache, a process that steps loads every one of the
    step's own kernels from it: their argument types are the step's."""
    env = dict(os.environ, TREEDYN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "treedyn_core.warm_up", "articulated", "implicit",
                    "leaves"], env=env, cwd=ROOT, check=True, capture_output=True,
                   timeout=600)
    compiled = subprocess.run([sys.executable, "-c", STEP_AND_LIST_COMPILES], env=env,
                              cwd=tmp_path, check=True, capture_output=True, text=True,
                              timeout=600).stdout.split()
    assert "treedyn_core.integrators.steppers.theta_steps" in compiled   # the step itself was not cached
    names = {name.removeprefix("treedyn_core.") for name in compiled}
    assert "integrators.steppers.theta_steps" in names   # the names are spelled as LEAVES's
    assert not names & set(LEAVES)


def test_run_starts_the_helper_only_while_the_step_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEDYN_CACHE_DIR", str(tmp_path / "cache"))
    started = []
    monkeypatch.setattr(warm_up, "subprocess", type("Recorder", (), {
        "DEVNULL": subprocess.DEVNULL,
        "Popen": staticmethod(lambda command, **options: started.append(command))}))
    monkeypatch.setattr(warm_up, "_helpers", [])
    arguments = ["run", "two_limbs", "--duration", "0.05", "--out", str(tmp_path / "o.npz")]
    assert main(arguments) == 0
    assert started == [[sys.executable, "-m", "treedyn_core.warm_up", "articulated",
                        "implicit", "leaves"]]
    assert warm_up.steps_are_warm("articulated", "implicit")
    assert main(arguments) == 0   # the step's kernels are cached now: no helper
    assert main(arguments + ["--model", "seed"]) == 0   # no step kernels of its own
    assert len(started) == 1
