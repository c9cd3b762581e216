"""A study's results: a Parquet dataset folder DIR/results.parquet, one part file per batch of
rows, each written to a hidden temporary file and renamed, so a part is whole or absent.

`pyarrow.parquet.read_table("DIR/results.parquet")` reads every part (it skips names that
begin with "." or "_", the temporary files). Every part has the same schema, built from the
study's axes and the preset schema's kinds, so parts concatenate.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import TreedynError
from .study_file import Study, field_of
from .study_run import OUTPUTS, TREE_OUTPUTS

RESULTS = "results.parquet"
MANIFEST = "study.json"
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

    def open(self) -> set[str]:
        """Create the folder (or check that it holds this study) and return the run keys
        already written."""
        manifest = self.folder / MANIFEST
        mine = {"study": self.study.name, "fingerprint": self.study.fingerprint(),
                "axes": self.study.axes}
        if self.folder.exists() and not self.folder.is_dir():
            raise TreedynError(f"--out {self.folder}: is a file, not a folder")
        if manifest.is_file():
            theirs = json.loads(manifest.read_text())
            if theirs != mine:
                raise TreedynError(f"{self.folder} holds the results of another study "
                                   f"('{theirs.get('study')}', other preset, overrides, "
                                   f"duration, dt or axes); choose another --out")
        elif self.folder.is_dir() and any(self.folder.iterdir()):
            raise TreedynError(f"--out {self.folder}: the folder exists and holds no study")
        self.dataset.mkdir(parents=True, exist_ok=True)
        if not manifest.is_file():
            _write_atomic(manifest, json.dumps(mine, indent=1).encode())
        return self.written_keys()

    def written_keys(self) -> set[str]:
        """The run keys of every row in the dataset's parts."""
        if not any(self.dataset.glob("part-*.parquet")):
            return set()
        table = pq.read_table(self.dataset, columns=["run_key"])
        return set(table.column("run_key").to_pylist())

    def write(self, rows: list[dict]) -> None:
        """Write `rows` as one new part, atomically."""
        if not rows:
            return
        columns = {name: [_cell(row.get(name), self.schema.field(name).type) for row in rows]
                   for name in self.schema.names}
        table = pa.table(columns, schema=self.schema)
        self._parts += 1
        name = f"part-{time.time_ns():020d}-{os.getpid()}-{self._parts:05d}.parquet"
        handle, temporary = tempfile.mkstemp(dir=self.dataset, prefix=f".{name}.", suffix=".tmp")
        os.close(handle)
        try:
            pq.write_table(table, temporary)
            with open(temporary, "rb+") as stream:
                os.fsync(stream.fileno())
            os.replace(temporary, self.dataset / name)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


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


def _write_atomic(path: Path, blob: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "wb") as stream:
        stream.write(blob)
    os.replace(temporary, path)
