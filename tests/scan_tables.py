"""Test helpers: a tree written as a TreeQSM-style cylinder table, and that table written in
the formats `treedyn_core.model.qsm_read` reads (MATLAB v5 matrix and struct, v7.3/HDF5 struct, text,
CSV)."""

from __future__ import annotations

import re

import numpy as np

COLUMNS = ("radius", "length", "start_x", "start_y", "start_z", "axis_x", "axis_y", "axis_z",
           "parent", "extension", "branch", "branch_order")


def cylinder_table(tree) -> np.ndarray:
    """(N, 12): each limb of a built `tree.Tree` at rest as one cylinder, TreeQSM's columns
    (parent and extension 1-based, 0 none); a generated tree's branch is its name without the
    ``.sK`` suffix (the trunk's limbs one branch)."""
    n = tree.n
    key = ["trunk" if re.fullmatch(r"trunk\d+", name) else re.sub(r"\.s\d+$", "", name)
           for name in tree.names]
    numbers = {k: i + 1 for i, k in enumerate(dict.fromkeys(key))}
    branch = np.array([numbers[k] for k in key])
    extension = np.zeros(n, dtype=int)
    for i in range(1, n):
        p = tree.parent[i]
        if branch[i] == branch[p]:
            extension[p] = i + 1
    order = np.array([0 if k == "trunk" else k.count(".") + 1 for k in key])
    axis = tree.rest_tip - tree.rest_base
    length = np.linalg.norm(axis, axis=1)
    return np.column_stack([tree.radius, length, tree.rest_base - tree.rest_base[0],
                            axis / length[:, None], tree.parent + 1, extension, branch, order])


def tapered_stem_table(height: float, r0: float, q: float, cylinders: int) -> np.ndarray:
    """(N, 9): a straight vertical stem r(z) = r0((H − z)/H)^q as `cylinders` equal cylinders,
    each of the radius at its mid-height."""
    h = height / cylinders
    mid = (np.arange(cylinders) + 0.5) * h
    table = np.zeros((cylinders, 9))
    table[:, 0] = r0 * ((height - mid) / height) ** q
    table[:, 1] = h
    table[:, 4] = np.arange(cylinders) * h
    table[:, 7] = 1.0
    table[:, 8] = np.arange(cylinders)
    return table


def write_mat_matrix(path, table: np.ndarray, name: str = "CylData") -> None:
    import scipy.io

    scipy.io.savemat(str(path), {name: table})


def _struct_fields(table: np.ndarray) -> dict:
    fields = {"radius": table[:, [0]], "length": table[:, [1]], "start": table[:, 2:5],
              "axis": table[:, 5:8], "parent": table[:, [8]]}
    for k, name in enumerate(("extension", "branch", "BranchOrder"), start=9):
        if table.shape[1] > k:
            fields[name] = table[:, [k]]
    return fields


def write_mat_struct(path, table: np.ndarray, name: str = "qsm") -> None:
    """A v5 MAT file with TreeQSM's struct ``qsm.cylinder``."""
    import scipy.io

    scipy.io.savemat(str(path), {name: {"cylinder": _struct_fields(table),
                                        "treedata": {"TotalVolume": 1.0}}})


def write_mat73_struct(path, table: np.ndarray, name: str = "QSM") -> None:
    """A MATLAB v7.3 file (HDF5 behind a 512-byte header) with the struct ``QSM.cylinder``, as
    MATLAB lays it out: groups for structs, each m×n array an n×m dataset."""
    import h5py

    with h5py.File(path, "w", userblock_size=512) as store:
        cylinder = store.create_group(name).create_group("cylinder")
        for field, value in _struct_fields(table).items():
            cylinder.create_dataset(field, data=np.ascontiguousarray(value.T))
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: test HDF5 schema 1.00 ."
    with open(path, "r+b") as stream:
        stream.write(header.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM")


def write_text(path, table: np.ndarray) -> None:
    """TreeQSM's text export: a header line, then tab-separated rows."""
    header = ("radius (m)\tlength (m)\tstart_point\taxis_direction\tparent\textension\tbranch"
              "\tbranch_order")
    rows = ["\t".join(f"{v:.10g}" for v in row) for row in table]
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(header + "\n" + "\n".join(rows) + "\n")


def write_csv(path, table: np.ndarray, columns=COLUMNS) -> None:
    rows = [",".join(f"{v:.10g}" for v in row[:len(columns)]) for row in table]
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(",".join(columns) + "\n" + "\n".join(rows) + "\n")


def write_mat_struct_array(path, tables: list) -> None:
    """A v5 MAT file with a 1×n struct array ``QSM`` of models, each with its ``cylinder``."""
    import scipy.io

    models = np.empty((1, len(tables)), dtype=[("cylinder", object)])
    for k, table in enumerate(tables):
        models[0, k]["cylinder"] = _struct_fields(table)
    scipy.io.savemat(str(path), {"QSM": models})


def write_mat73_struct_array(path, tables: list, name: str = "QSM") -> None:
    """A MATLAB v7.3 file with a 1×n struct array: the field ``cylinder`` a dataset of object
    references to groups in ``#refs#``, as MATLAB writes a struct array's fields."""
    import h5py

    with h5py.File(path, "w", userblock_size=512) as store:
        refs = store.create_group("#refs#")
        references = []
        for k, table in enumerate(tables):
            cylinder = refs.create_group(f"m{k}")
            for field, value in _struct_fields(table).items():
                cylinder.create_dataset(field, data=np.ascontiguousarray(value.T))
            references.append(cylinder.ref)
        group = store.create_group(name)
        group.create_dataset("cylinder", data=np.array([references], dtype=h5py.ref_dtype).T)


def write_mat73_matrix(path, table: np.ndarray, name: str = "cyl") -> None:
    """A MATLAB v7.3 file with one N×M double matrix (stored M×N)."""
    import h5py

    with h5py.File(path, "w", userblock_size=512) as store:
        store.create_dataset(name, data=np.ascontiguousarray(table.T))
