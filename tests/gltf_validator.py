"""The Khronos glTF validator (npm package `gltf-validator`), run with node from the tests.

The `gltf_validator` fixture installs the package once per machine into a cache folder
(TREEDYN_TEST_CACHE, default ~/.cache/treedyn-tests) with npm, and gives a function that
validates .glb files and returns each one's report. No node or npm, or no network on the
first run: the fixture fails with what is missing (the tests never skip; `.ci/run`
installs node and npm on a fresh Debian machine). The install holds a lock file beside the
package: the suite's pytest-xdist workers would otherwise run two npm installs into one folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

VALIDATOR = "gltf-validator@2.0.0-dev.3.10"
INSTALL_TIMEOUT_S = 300

_SCRIPT = r"""
const fs = require('fs');
const validator = require(process.argv[1]);
(async () => {
  const reports = [];
  for (const path of process.argv.slice(2)) {
    const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(path)),
                                                 {maxIssues: 0});
    reports.push(report.issues);
  }
  console.log(JSON.stringify(reports));
})().catch(error => { console.error(String(error)); process.exit(1); });
"""


def _cache() -> Path:
    return Path(os.environ.get("TREEDYN_TEST_CACHE", Path.home() / ".cache" / "treedyn-tests"))


def install_validator() -> Path:
    """The installed package's folder, installing it first if needed."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: the glTF tests run the Khronos validator "
                        f"with node (apt-get install nodejs npm)")
    prefix = _cache() / "gltf-validator"
    package = prefix / "node_modules" / "gltf-validator"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # released when the file closes
        if not (package / "package.json").is_file():
            done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit",
                                   "--no-fund", "--loglevel=error", VALIDATOR],
                                  capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            if done.returncode != 0:
                pytest.fail(f"npm install {VALIDATOR} failed: {done.stderr.strip()[-500:]}")
    return package


@pytest.fixture(scope="session")
def gltf_validator():
    """validate(*paths) → one report per file: numErrors, numWarnings, messages, …"""
    package = install_validator()

    def validate(*paths) -> list[dict]:
        done = subprocess.run(["node", "-e", _SCRIPT, str(package), *map(str, paths)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return validate


def problems(report: dict) -> list[str]:
    """The report's errors and warnings (severity 0 and 1), one line each."""
    return [f"{m['code']} at {m.get('pointer', '?')}: {m['message']}"
            for m in report["messages"] if m["severity"] <= 1]
