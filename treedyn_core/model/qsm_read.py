"""Reading quantitative structure models (QSMs) of scanned trees: the cylinder table.

A QSM (TreeQSM: Raumonen et al. 2013, Remote Sensing 5: 491–520; docs/scans.md) describes a
tree as N cylinders, each with a radius (m), a length (m), a start point (m), a unit axis and
a parent cylinder. The formats read (`read_cylinders`):

- MATLAB ``.mat``, v5/v7 (`scipy.io.loadmat`) or v7.3 (HDF5, `h5py`):
  a struct ``qsm``/``QSM`` (or a struct array of models: the first, or ``model``) whose field
  ``cylinder`` holds ``radius``, ``length``, ``start`` (N×3), ``axis`` (N×3), ``parent``
  (1-based, 0 = none) and optionally ``extension``, ``branch``, ``BranchOrder``; or exactly
  one numeric N×M matrix, M ≥ 9, under any name: TreeQSM's older cylinder matrix, columns
  radius, length, start x y z, axis x y z, parent (1-based), then optionally extension,
  branch, branch order (as in the Wytham Woods QSMs of Jackson et al. 2019).
- Text (``.txt``) as TreeQSM writes its cylinder table: whitespace- or comma-separated numbers
  in the matrix's column order, after an optional header line (``radius (m)  length (m)
  start_point  axis_direction  parent  extension  branch  branch_order …``; a
  ``start_point``/``axis_direction`` name stands for three columns).
- CSV (``.csv``) with named columns ``radius, length, start_x, start_y, start_z, axis_x,
  axis_y, axis_z, parent`` and optionally ``extension, branch, branch_order``, in any order.

Parents are 1-based with 0 for none in every format (TreeQSM's convention); `Cylinders` holds
them 0-based with −1 for none. Every problem with the file is a `PresetError` whose one-line
message names the file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import PresetError

# File kinds a scan may be given as (by suffix, lower case).
SCAN_SUFFIXES = (".mat", ".txt", ".csv")
# Columns of TreeQSM's cylinder matrix that treedyn reads; the first 9 are required.
MATRIX_COLUMNS = ("radius", "length", "start_x", "start_y", "start_z", "axis_x", "axis_y",
                  "axis_z", "parent", "extension", "branch", "branch_order")
REQUIRED_COLUMNS = MATRIX_COLUMNS[:9]
# Unit sanity (metres): a tree taller than this, or with no cylinder thicker than
# MIN_THICKEST_RADIUS, is refused as a probable unit error.
MAX_TREE_HEIGHT = 200.0      # m
MIN_THICKEST_RADIUS = 0.001  # m
# Largest scan file read, bytes (a 100,000-cylinder text table is ~20 MB).
MAX_SCAN_BYTES = 512 * 2**20


@dataclass(frozen=True)
class Cylinders:
    """A QSM's cylinder table as read (no repairs), in the file's order.

    Attributes
    ----------
    radius : (N,) m
    length : (N,) m
    start : (N, 3) m, inertial (z up)
    axis : (N, 3) direction from the start point (unit in a good file)
    parent : (N,) int64, 0-based index of the parent cylinder, −1 for none
    extension : (N,) int64 or None, the cylinder that continues this one's branch, −1 none
    branch : (N,) int64 or None, branch number (TreeQSM's, 1-based)
    branch_order : (N,) int64 or None, 0 for the stem
    source : str, the file's name, for messages
    """

    radius: np.ndarray
    length: np.ndarray
    start: np.ndarray
    axis: np.ndarray
    parent: np.ndarray
    extension: np.ndarray | None
    branch: np.ndarray | None
    branch_order: np.ndarray | None
    source: str

    @property
    def n(self) -> int:
        return len(self.radius)


def _fail(name: str, message: str) -> PresetError:
    return PresetError(f"{name}: {message}")


def read_cylinders(path: str | Path, model: int = 0) -> Cylinders:
    """The cylinder table of the QSM file `path` (.mat, .txt or .csv, module docstring),
    checked (`check_cylinders`); `model` picks one model of a struct array (0-based)."""
    path = Path(path)
    name = path.name
    suffix = path.suffix.lower()
    if suffix not in SCAN_SUFFIXES:
        raise _fail(name, f"not a scan file: the suffix must be one of "
                          f"{', '.join(SCAN_SUFFIXES)}")
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise _fail(name, "not a regular file")
        if size > MAX_SCAN_BYTES:
            raise _fail(name, f"the file is {size / 2**20:.0f} MiB, more than a scan may be "
                              f"({MAX_SCAN_BYTES // 2**20} MiB)")
        if suffix == ".mat":
            columns = _read_mat(path, model)
        else:
            text = path.read_bytes().decode("utf-8-sig")
            columns = _read_csv(text, name) if suffix == ".csv" else _read_text(text, name)
    except OSError as exc:
        raise _fail(name, f"cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise _fail(name, f"not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at "
                          f"offset {exc.start})") from None
    return check_cylinders(_from_columns(columns, name))


# --------------------------------------------------------------------------- MATLAB files

def _is_hdf5(path: Path) -> bool:
    """A MATLAB v7.3 file: HDF5 with a 512-byte user block (the signature at 0 or 512)."""
    with open(path, "rb") as stream:
        head = stream.read(520)
    signature = b"\x89HDF\r\n\x1a\n"
    return head[:8] == signature or head[512:520] == signature


def _read_mat(path: Path, model: int) -> dict:
    if _is_hdf5(path):
        return _read_mat73(path, model)
    import scipy.io

    try:
        contents = scipy.io.loadmat(str(path), squeeze_me=False, struct_as_record=True)
    except Exception as exc:  # scipy raises ValueError, TypeError, … for damaged files
        raise _fail(path.name, f"not a readable MATLAB file (corrupt or truncated?): "
                               f"{_short(exc)}") from None
    variables = {key: value for key, value in contents.items() if not key.startswith("__")}
    for key, value in variables.items():
        if key.lower() == "qsm" and isinstance(value, np.ndarray) and value.dtype.names:
            return _struct_columns(value, model, path.name, key)
    return _only_matrix(variables, path.name)


def _struct_columns(qsm: np.ndarray, model: int, name: str, key: str) -> dict:
    """The cylinder fields of model `model` of a v5/v7 struct (array) `qsm`."""
    models = qsm.reshape(-1, order="F")
    if not 0 <= model < len(models):
        raise _fail(name, f"{key} holds {len(models)} model(s); model {model} does not exist")
    if "cylinder" not in qsm.dtype.names:
        raise _fail(name, f"{key} has no field 'cylinder' (fields: "
                          f"{', '.join(qsm.dtype.names)})")
    cylinder = models[model]["cylinder"]
    while isinstance(cylinder, np.ndarray) and cylinder.dtype == object and cylinder.size == 1:
        cylinder = cylinder.reshape(-1)[0]
    if not (isinstance(cylinder, np.ndarray) and cylinder.dtype.names):
        raise _fail(name, f"{key}.cylinder is not a struct")
    fields = {field: np.asarray(cylinder[field].reshape(-1)[0]) for field in cylinder.dtype.names}
    return _struct_fields(fields, name, f"{key}.cylinder")


def _struct_fields(fields: dict, name: str, where: str) -> dict:
    """Column arrays from a cylinder struct's fields (radius, length, start, axis, parent, …)."""
    lower = {key.lower(): value for key, value in fields.items()}
    out = {}
    for field in ("radius", "length", "parent", "extension", "branch", "branchorder"):
        if field in lower:
            out["branch_order" if field == "branchorder" else field] = \
                np.asarray(lower[field], dtype=float).reshape(-1)
    for field in ("start", "axis"):
        if field in lower:
            value = np.asarray(lower[field], dtype=float)
            if value.ndim != 2 or 3 not in value.shape:
                raise _fail(name, f"{where}.{field} must be an N×3 array, got shape "
                                  f"{value.shape}")
            value = value if value.shape[1] == 3 else value.T
            for k, axis in enumerate("xyz"):
                out[f"{field}_{axis}"] = value[:, k]
    return out


def _only_matrix(variables: dict, name: str) -> dict:
    """The columns of the one numeric N×M matrix (M ≥ 9) among `variables`."""
    matrices = {key: value for key, value in variables.items()
                if isinstance(value, np.ndarray) and value.ndim == 2 and value.dtype.kind in "fiu"
                and min(value.shape) > 0}
    if not matrices:
        raise _fail(name, "holds neither a qsm/QSM struct nor a cylinder matrix (variables: "
                          f"{', '.join(variables) or 'none'})")
    if len(matrices) > 1:
        raise _fail(name, f"holds {len(matrices)} matrices ({', '.join(matrices)}); a cylinder "
                          f"table must be the only one, or a qsm struct")
    [(key, matrix)] = matrices.items()
    return _matrix_columns(np.asarray(matrix, dtype=float), name, f"matrix '{key}'")


def _matrix_columns(matrix: np.ndarray, name: str, what: str) -> dict:
    if matrix.shape[1] < len(REQUIRED_COLUMNS):
        raise _fail(name, f"the {what} has {matrix.shape[1]} columns; a cylinder table needs "
                          f"at least {len(REQUIRED_COLUMNS)} (radius, length, start x y z, "
                          f"axis x y z, parent)")
    return {column: matrix[:, k] for k, column in enumerate(MATRIX_COLUMNS)
            if k < matrix.shape[1]}


def _read_mat73(path: Path, model: int) -> dict:
    """A MATLAB v7.3 (HDF5) file: MATLAB stores an m×n array as an n×m dataset, a struct as a
    group, a struct array's fields as datasets of object references."""
    import h5py

    name = path.name
    try:
        with h5py.File(path, "r") as store:
            keys = [key for key in store.keys() if not key.startswith("#")]
            for key in keys:
                if key.lower() == "qsm" and isinstance(store[key], h5py.Group):
                    return _h5_struct(store, store[key], model, name, key)
            variables = {}
            for key in keys:
                item = store[key]
                if isinstance(item, h5py.Dataset) and item.dtype.kind in "fiu" \
                        and item.ndim == 2:
                    variables[key] = np.asarray(item[()], dtype=float).T
            return _only_matrix(variables, name)
    except PresetError:
        raise
    except Exception as exc:  # h5py raises OSError, KeyError, … for damaged files
        raise _fail(name, f"not a readable MATLAB v7.3 (HDF5) file (corrupt or truncated?): "
                          f"{_short(exc)}") from None


def _h5_struct(store, group, model: int, name: str, key: str) -> dict:
    import h5py

    if "cylinder" not in group:
        raise _fail(name, f"{key} has no field 'cylinder' (fields: {', '.join(group.keys())})")
    cylinder = group["cylinder"]
    if isinstance(cylinder, h5py.Dataset) and cylinder.dtype == h5py.ref_dtype:
        references = cylinder[()].reshape(-1)
        if not 0 <= model < len(references):
            raise _fail(name, f"{key} holds {len(references)} model(s); model {model} does "
                              f"not exist")
        cylinder = store[references[model]]
    elif model != 0:
        raise _fail(name, f"{key} holds 1 model; model {model} does not exist")
    if not isinstance(cylinder, h5py.Group):
        raise _fail(name, f"{key}.cylinder is not a struct")
    fields = {field: np.asarray(cylinder[field][()], dtype=float).T
              for field in cylinder.keys() if isinstance(cylinder[field], h5py.Dataset)
              and cylinder[field].dtype.kind in "fiu"}
    return _struct_fields(fields, name, f"{key}.cylinder")


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


# --------------------------------------------------------------------------- text files

def _numbers(row: list[str], name: str, line: int) -> list[float]:
    try:
        return [float(x) for x in row]
    except ValueError:
        bad = next(x for x in row if not _is_float(x))
        raise _fail(name, f"line {line}: {bad!r} is not a number") from None


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _split(line: str) -> list[str]:
    return [part for part in line.replace(",", " ").replace(";", " ").split() if part]


def _read_text(text: str, name: str) -> dict:
    """TreeQSM's text export (module docstring): numbers in the matrix's column order after
    an optional header line."""
    lines = [(k + 1, line) for k, line in enumerate(text.splitlines())
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise _fail(name, "empty file (no cylinder table)")
    first = _split(lines[0][1])
    if not all(_is_float(x) for x in first):
        lines = lines[1:]
    if not lines:
        raise _fail(name, "a header line but no cylinders")
    rows = [_numbers(_split(line), name, k) for k, line in lines]
    width = len(rows[0])
    for (k, _), row in zip(lines, rows):
        if len(row) != width:
            raise _fail(name, f"line {k}: {len(row)} numbers where the first row has {width} "
                              f"(truncated?)")
    return _matrix_columns(np.array(rows, dtype=float), name, "table")


def _read_csv(text: str, name: str) -> dict:
    """CSV with named columns (module docstring), in any order."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise _fail(name, "empty file (no header line)") from None
    columns = [column.strip().lower() for column in header]
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise _fail(name, f"missing column(s) {', '.join(missing)} (a scan CSV names "
                          f"{', '.join(REQUIRED_COLUMNS)} in its header)")
    rows = []
    for k, row in enumerate(reader, start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(columns):
            raise _fail(name, f"line {k}: {len(row)} fields where the header has "
                              f"{len(columns)} (truncated?)")
        rows.append(_numbers([x.strip() for x in row], name, k))
    if not rows:
        raise _fail(name, "a header line but no cylinders")
    table = np.array(rows, dtype=float)
    return {column: table[:, columns.index(column)] for column in MATRIX_COLUMNS
            if column in columns}


# --------------------------------------------------------------------------- checks

def _from_columns(columns: dict, name: str) -> Cylinders:
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise _fail(name, f"the cylinder table lacks {', '.join(missing)}")
    n = len(columns["radius"])
    if any(len(values) != n for values in columns.values()):
        raise _fail(name, "the cylinder table's columns differ in length (truncated?)")
    if n == 0:
        raise _fail(name, "the cylinder table is empty")

    def index(column: str) -> np.ndarray | None:
        """A 1-based index column as 0-based int64 (−1: none), refusing non-integers."""
        if column not in columns:
            return None
        values = columns[column]
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            row = int(np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))[0])
            raise _fail(name, f"cylinder {row + 1}: {column} {values[row]!r} is not a whole "
                              f"number")
        return values.astype(np.int64) - 1

    parent = index("parent")
    extension = index("extension")
    branch = index("branch")
    order = index("branch_order")
    return Cylinders(
        radius=np.asarray(columns["radius"], dtype=float),
        length=np.asarray(columns["length"], dtype=float),
        start=np.stack([columns[f"start_{a}"] for a in "xyz"], axis=1).astype(float),
        axis=np.stack([columns[f"axis_{a}"] for a in "xyz"], axis=1).astype(float),
        parent=parent, extension=extension,
        branch=None if branch is None else branch + 1,
        branch_order=None if order is None else order + 1,
        source=name)


def check_cylinders(cylinders: Cylinders) -> Cylinders:
    """Refuse what no repair rule of `scan` mends (a PresetError naming the file and the
    first bad cylinder, 1-based as in the file): a radius that is negative, zero or not a
    number, a parent index outside the table, a parent cycle, and lengths that are not in
    metres (a tree taller than `MAX_TREE_HEIGHT`, or no cylinder as thick as
    `MIN_THICKEST_RADIUS`)."""
    name, n = cylinders.source, cylinders.n
    r = cylinders.radius
    bad = np.flatnonzero(~(r > 0.0) | ~np.isfinite(r))
    if len(bad):
        i = int(bad[0])
        raise _fail(name, f"cylinder {i + 1}: radius {r[i]:g} m (must be a positive number; "
                          f"{len(bad)} such cylinder(s))")
    parent = cylinders.parent
    bad = np.flatnonzero((parent < -1) | (parent >= n) | (parent == np.arange(n)))
    if len(bad):
        i = int(bad[0])
        raise _fail(name, f"cylinder {i + 1}: parent {parent[i] + 1} is outside the table "
                          f"(1…{n}, 0 for none)" if parent[i] != i else
                          f"cylinder {i + 1}: is its own parent")
    cycle = _find_cycle(parent)
    if cycle is not None:
        raise _fail(name, f"cylinders {' -> '.join(str(i + 1) for i in cycle)} form a parent "
                          f"cycle (no root among them)")
    good = np.isfinite(cylinders.length) & np.all(np.isfinite(cylinders.start), axis=1) \
        & np.all(np.isfinite(cylinders.axis), axis=1)
    if not np.any(good):
        raise _fail(name, "no cylinder has a finite length, start and axis")
    axis = cylinders.axis[good]
    norm = np.linalg.norm(axis, axis=1, keepdims=True)
    tip = cylinders.start[good] + cylinders.length[good, None] * axis / np.where(
        norm > 0, norm, 1.0)
    z = np.concatenate([cylinders.start[good, 2], tip[:, 2]])
    height = float(z.max() - z.min())
    if height > MAX_TREE_HEIGHT:
        unit = ("centimetres" if height / 100.0 <= MAX_TREE_HEIGHT else "millimetres")
        raise _fail(name, f"the tree would be {height:.4g} m tall: the lengths look like "
                          f"{unit}, and a scan must be in metres")
    if r.max() < MIN_THICKEST_RADIUS:
        raise _fail(name, f"the thickest cylinder has a radius of {r.max():.3g} m: the "
                          f"lengths look like kilometres (or another unit), and a scan must "
                          f"be in metres")
    return cylinders


def _find_cycle(parent: np.ndarray) -> list[int] | None:
    """The cylinders of one parent cycle, lowest first, or None (O(N))."""
    state = np.zeros(len(parent), dtype=np.int8)  # 0 unseen, 1 on the walk, 2 reaches a root
    for start in range(len(parent)):
        walk = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            walk.append(i)
            i = int(parent[i])
        if i >= 0 and state[i] == 1:
            cycle = walk[walk.index(i):]
            first = cycle.index(min(cycle))
            return cycle[first:] + cycle[:first]
        state[walk] = 2
    return None

