"""SIGTERM and Ctrl-C close the app's window as its close button does: the exit status of the
commands (143, 130), no traceback, within seconds."""

import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_closes_the_app_window(tmp_path, signum, status):
    assert os.environ.get("DISPLAY"), "pytest-xvfb provides the display"
    process = subprocess.Popen([sys.executable, "-m", "treedyn_core", "two_limbs"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6.0)  # the window is up (drawn at once; the kernels may still compile)
    assert process.poll() is None, process.communicate()
    process.send_signal(signum)
    sent = time.monotonic()
    out, err = process.communicate(timeout=30)
    assert process.returncode == status, err
    assert time.monotonic() - sent < 5.0
    assert "Traceback" not in err and "Error" not in err, err
