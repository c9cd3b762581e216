"""A study's results: a Parquet dataset folder DIR/results.parquet, one part file per batch of
rows, each written to a hidden temporary file and renamed, so a part is whole or absent.

`pyarrow.parquet.read_table("DIR/results.parquet")` reads every part (it skips names that
begin with "." or "_", the temporary files). Every part has the same schema, built from the
study's axes and the preset schema's kinds, so parts concatenate.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import TreedynError
from ..output_file import remove_stale_temporaries, write_atomically, write_bytes_atomically
from .study_file import Study, field_of
from .study_run import OUTPUTS, TREE_OUTPUTS

RESULTS = "results.parquet"
MANIFEST = "study.json"
LOCK = ".lock"   # held (flock) by the study writing to the folder; names its process
_KIND_TYPES = {"float": pa.float64(), "int": pa.int64(), "bool": pa.bool_(), "str": pa.string(),
               "enum": pa.string()}


def results_schema(study: Study) -> pa.Schema:
    """run, run_key, one column per axis (its key path), the outputs, the tree measures,
    status, error, wall_s, treedyn_version. Axes whose values are not scalars (vectors,
    lists) are stored as JSON text."""
    fields = [pa.field("run", pa.int64()), pa.field("run_key", pa.string())]
    for key in study.axes:
        spec = field_of(key)
        fields.append(pa.field(key, _KIND_TYPES.get(spec.kind if spec else "", pa.string())))
    fields += [pa.field(name, pa.float64()) for name in OUTPUTS + TREE_OUTPUTS]
    fields += [pa.field("status", pa.string()), pa.field("error", pa.string()),
               pa.field("wall_s", pa.float64()), pa.field("treedyn_version", pa.string())]
    return pa.schema(fields)


class ResultsFolder:
    """The output folder of one study: its manifest, its Parquet parts and what they hold."""

    def __init__(self, folder: str | os.PathLike, study: Study):
        self.folder = Path(folder)
        self.dataset = self.folder / RESULTS
        self.study = study
        self.schema = results_schema(study)
        self._parts = 0
        self._lock = None   # the open lock file while this process holds the folder
        self.made = False   # the folder was made by this study's `open`

    def open(self) -> set[str]:
        """Create the folder (or check that it holds this study), hold its lock for as long
        as this process runs (a second study on it is refused, naming the holder), and return
        the run keys already written."""
        manifest = self.folder / MANIFEST
        mine = {"study": self.study.name, "fingerprint": self.study.fingerprint(),
                "axes": self.study.axes}
        if self.folder.exists() and not self.folder.is_dir():
            raise TreedynError(f"--out {self.folder}: is a file, not a folder")
        made = self.made = not self.folder.exists()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._hold_lock()
        except BaseException:
            if made:   # nothing of ours left behind
                (self.folder / LOCK).unlink(missing_ok=True)
                self.folder.rmdir()
            raise
        if manifest.is_file():
            try:
                theirs = json.loads(manifest.read_text())
            except (ValueError, UnicodeDecodeError):
                raise TreedynError(f"{manifest}: not a study's manifest (unreadable JSON); "
                                   f"choose another --out") from None
            if theirs != mine:
                name = theirs.get("study") if isinstance(theirs, dict) else None
                raise TreedynError(f"{self.folder} holds the results of another study "
                                   f"('{name}', other preset, overrides, "
                                   f"duration, dt or axes); choose another --out")
        elif any(entry.name != LOCK for entry in self.folder.iterdir()):
            raise TreedynError(f"--out {self.folder}: the folder exists and holds no study")
        self.dataset.mkdir(parents=True, exist_ok=True)
        if not manifest.is_file():
            write_bytes_atomically(manifest, json.dumps(mine, indent=1).encode())
        remove_stale_temporaries(self.dataset)
        return self.written_keys()

    def _hold_lock(self) -> None:
        """Take the folder's lock (flock, released when this process ends) or raise
        TreedynError naming the study that holds it."""
        path = self.folder / LOCK
        stream = open(path, "a+", encoding="utf-8")
        try:
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            stream.seek(0)
            holder = stream.read(200).strip() or "another process"
            stream.close()
            raise TreedynError(f"--out {self.folder} is in use by another treedyn study "
                               f"({holder}); wait for it to end or choose another --out"
                               ) from None
        stream.seek(0)
        stream.truncate()
        stream.write(f"pid {os.getpid()} on {socket.gethostname()}, since "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S')}")
        stream.flush()
        self._lock = stream

    def discard_if_new(self) -> None:
        """Remove the folder this study made when it holds no row (a failure before any
        row was written, a full disk): nothing of ours is left behind."""
        if self.made and not any(self.dataset.glob("part-*.parquet")):
            shutil.rmtree(self.folder, ignore_errors=True)

    def close(self) -> None:
        """Let go of the folder's lock."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def written_keys(self) -> set[str]:
        """The run keys of every row in the dataset's parts; TreedynError (one line) for a
        part that is not one of this study's."""
        keys: set[str] = set()
        for part in sorted(self.dataset.glob("part-*.parquet")):
            try:
                table = pq.read_table(part, columns=["run_key"])
                keys.update(table.column("run_key").to_pylist())
            except (pa.ArrowException, OSError, KeyError) as error:
                raise TreedynError(f"{part}: not a part of this study's results "
                                   f"({str(error).splitlines()[0][:120]}); move it away or "
                                   f"choose another --out") from None
        return keys

    def write(self, rows: list[dict]) -> None:
        """Write `rows` as one new part, atomically."""
        if not rows:
            return
        columns = {name: [_cell(row.get(name), self.schema.field(name).type) for row in rows]
                   for name in self.schema.names}
        table = pa.table(columns, schema=self.schema)
        self._parts += 1
        name = f"part-{time.time_ns():020d}-{os.getpid()}-{self._parts:05d}.parquet"
        write_atomically(self.dataset / name, lambda temporary: pq.write_table(table, temporary))


def read_results(folder: str | os.PathLike) -> pa.Table:
    """Every row written to a study's output folder."""
    return pq.read_table(Path(folder) / RESULTS)


def _cell(value, kind: pa.DataType):
    """A row's value as its column's type (JSON text for a non-scalar parameter)."""
    if value is None:
        return None
    if kind == pa.string() and not isinstance(value, str):
        return json.dumps(value)
    if kind == pa.float64():
        return float(value)
    return value

