"""A run's motion as binary glTF 2.0 (.glb): one node per limb, its rotation animated.

The glTF 2.0 specification (Khronos, https://registry.khronos.org/glTF/specs/2.0/) fixes the
conventions: metres, +Y up, right-handed, so treedyn's inertial (x, y, z) is glTF's
(x, z, −y) (the rotation AXES below); rotations are unit quaternions (x, y, z, w) as float
VEC4; LINEAR rotation channels are interpolated by slerp.

Each limb's node sits in its parent's node (the root's in the scene) and holds the limb's
own axes: its translation is the limb's base in its parent's axes (static: the base rides on
the parent, `Tree.base_offset`), its rotation the joint's, limb → parent axes
(C_IF_parentᵀ C_IF; the root's AXES · C_IF). Its mesh, in limb axes, is the tapered tube and
foliage of `limb_mesh`, as the app draws them. Nothing here imports Qt or vispy.
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

import numpy as np

from .. import __version__
from ..errors import TreedynError
from ..numerics.so3 import quats_from_matrices
from ..output_file import write_atomically
from .frame_clock import advance_to_frames, frame_count
from .limb_mesh import (FORMS, TUBE_SIDES, FoliageForm, bark_color, foliage_clumps, foliage_form,
                        tip_radius, tube_faces, tube_vertices, twig_weight)

# treedyn inertial (x, y, z) → glTF (x, z, −y): a proper rotation (det +1).
AXES = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
# The bark-to-twig gradient in this many materials (one per limb would cost a material each).
BARK_MATERIALS = 16
FLOAT, UNSIGNED_SHORT = 5126, 5123
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
REQUIRED_ARRAYS = ("t", "names", "parent", "C_IF", "base", "tip", "radius", "leaf_area",
                   "foliage_form")


def _form(arrays) -> FoliageForm:
    """The foliage form a run's arrays name, in the run's colours (an NPZ of an earlier
    treedyn has none: the form's own)."""
    form = FORMS.get(str(arrays["foliage_form"]), FORMS["broadleaf"])
    colours = {key: tuple(float(c) for c in arrays[name]) for key, name in
               (("colour", "foliage_colour"), ("bark", "bark_colour")) if name in arrays}
    return replace(form, **colours)


@dataclass
class Motion:
    """A run's frames and its limbs' looks, limbs in preset order.

    Attributes
    ----------
    t : (S,) s, increasing
    names : (N,) str;  parent : (N,) int, −1 for a root
    C_IF : (S, N, 3, 3) limb → inertial
    base, tip : (S, N, 3) m, inertial
    radius : (N,) m;  leaf_area : (N,) m²
    form : the species form of the foliage
    """

    t: np.ndarray
    names: np.ndarray
    parent: np.ndarray
    C_IF: np.ndarray
    base: np.ndarray
    tip: np.ndarray
    radius: np.ndarray
    leaf_area: np.ndarray
    form: FoliageForm

    @classmethod
    def from_arrays(cls, arrays) -> "Motion":
        """From `treedyn run`'s arrays (a dict or an open NPZ file)."""
        return cls(t=np.asarray(arrays["t"], dtype=float), names=np.asarray(arrays["names"]),
                   parent=np.asarray(arrays["parent"], dtype=np.int64),
                   C_IF=np.asarray(arrays["C_IF"], dtype=float),
                   base=np.asarray(arrays["base"], dtype=float),
                   tip=np.asarray(arrays["tip"], dtype=float),
                   radius=np.asarray(arrays["radius"], dtype=float),
                   leaf_area=np.asarray(arrays["leaf_area"], dtype=float),
                   form=_form(arrays))


class MotionRecorder:
    """Records a simulation's frames at `fps` for `duration` s (`frame_clock`) into a
    Motion: iterate it (each item: frames recorded so far), then call `motion()`."""

    def __init__(self, sim, duration: float, fps: float):
        self.sim, self.duration, self.fps = sim, duration, fps
        self.frames = frame_count(duration, fps)
        n = sim.tree.n
        self._t = np.empty(self.frames)
        self._C_IF = np.empty((self.frames, n, 3, 3))
        self._base = np.empty((self.frames, n, 3))
        self._tip = np.empty((self.frames, n, 3))

    def __iter__(self) -> Iterator[int]:
        sim = self.sim
        for k in advance_to_frames(sim, self.duration, self.fps):
            self._t[k] = sim.time
            self._C_IF[k], self._base[k], self._tip[k] = sim.C_IF, sim.base, sim.tip
            yield k + 1

    def motion(self) -> Motion:
        """The recorded frames, limbs in preset order."""
        tree = self.sim.tree
        order = tree.to_preset_order
        parent = np.where(tree.parent >= 0, tree.preset_index[np.maximum(tree.parent, 0)], -1)
        return Motion(t=self._t.copy(), names=np.array(order(np.array(tree.names, dtype=object)),
                                                       dtype=str),
                      parent=order(parent), C_IF=order(self._C_IF, axis=1),
                      base=order(self._base, axis=1), tip=order(self._tip, axis=1),
                      radius=order(tree.radius), leaf_area=order(tree.leaf_area),
                      form=foliage_form(self.sim.data))


def local_quaternions(motion: Motion) -> np.ndarray:
    """(S, N, 4) unit quaternions [w, x, y, z] of each node's rotation, limb → parent limb
    axes (a root: limb → glTF axes): q_parent* ⊗ q (AXES' quaternion ⊗ q for a root).

    By quaternions rather than matrix products: a 10,000-limb run of 301 frames is 3 million
    rotations, and gathering the parents' matrices took 6.5 s of an 11.5 s export. The
    product goes component by component on contiguous (S, N) arrays: on (S, N, 4) views
    (np.cross, strided components) it took 2–3.6 s, here about 0.2 s."""
    s, n = motion.C_IF.shape[:2]
    q = quats_from_matrices(np.ascontiguousarray(motion.C_IF.reshape(-1, 3, 3)))
    q = np.ascontiguousarray(q.reshape(s, n, 4).transpose(2, 0, 1))  # (4, S, N)
    parent = motion.parent
    left = np.take(q, np.maximum(parent, 0), axis=2)
    left[1:] *= -1.0  # conjugate: the parent's inverse rotation
    left[:, :, parent < 0] = quats_from_matrices(AXES[None])[0][:, None, None]
    (aw, ax, ay, az), (bw, bx, by, bz) = left, q
    out = np.empty((s, n, 4))
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def local_translations(motion: Motion) -> np.ndarray:
    """(N, 3) m: each limb's base in its parent's axes (a root's: in glTF axes), frame 0."""
    parent = motion.parent
    base, C_IF = motion.base[0], motion.C_IF[0]
    child = parent >= 0
    out = np.empty_like(base)
    out[child] = np.einsum("nji,nj->ni", C_IF[parent[child]], base[child] - base[parent[child]])
    out[~child] = base[~child] @ AXES.T
    # Round-off of the run's frame 0 (1e-16 m where a base sits on its parent's axis) is noise.
    out[np.abs(out) < 1e-12] = 0.0
    return out


def gltf_quaternions(wxyz: np.ndarray) -> np.ndarray:
    """(S, N, 4) glTF quaternions (x, y, z, w) of quaternions (S, N, 4) [w, x, y, z], unit
    length, each limb's successive samples in the same hemisphere (so that no slerp turns the
    long way round)."""
    q = np.roll(wxyz, -1, axis=2)
    q /= np.linalg.norm(q, axis=2, keepdims=True)
    for k in range(1, len(q)):
        flip = np.einsum("ni,ni->n", q[k], q[k - 1]) < 0
        q[k, flip] *= -1.0
    return q


def slerp(q0: np.ndarray, q1: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Spherical linear interpolation (..., 4) from unit q0 to q1 at fractions f (...,),
    the shorter way."""
    dot = np.einsum("...i,...i->...", q0, q1)
    q1 = np.where(dot[..., None] < 0, -q1, q1)
    dot = np.clip(np.abs(dot), -1.0, 1.0)
    angle = np.arccos(dot)
    small = angle < 1e-6
    sin = np.where(small, 1.0, np.sin(angle))
    w0 = np.where(small, 1.0 - f, np.sin((1.0 - f) * angle) / sin)
    w1 = np.where(small, f, np.sin(f * angle) / sin)
    out = w0[..., None] * q0 + w1[..., None] * q1
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def resample(t: np.ndarray, q: np.ndarray, fps: float) -> tuple[np.ndarray, np.ndarray]:
    """Times (S',) s at `fps` frames per second from t[0] to t[−1], and the quaternions
    (S', N, 4) slerped there from samples q (S, N, 4) at times t."""
    count = frame_count(t[-1] - t[0], fps)
    times = t[0] + np.arange(count) / fps
    if len(t) == 1:
        return times, np.repeat(q, count, axis=0)
    k = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 2)
    f = np.clip((times - t[k]) / (t[k + 1] - t[k]), 0.0, 1.0)
    return times, slerp(q[k], q[k + 1], np.broadcast_to(f[:, None], (count, q.shape[1])))


def _short(values) -> list[float]:
    """float32 values as JSON numbers that read back to the same float32 (9 digits)."""
    return [float(f"{v:.9g}") for v in np.asarray(values, dtype=np.float32).ravel()]


def _linear(rgb: np.ndarray) -> list[float]:
    """sRGB 0..1 (the app's colours) → linear RGB, which glTF's baseColorFactor holds."""
    rgb = np.asarray(rgb, dtype=float)
    return [round(float(c), 5) for c in
            np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)]


class _Buffers:
    """The GLB's binary chunk, built from 4-byte aligned pieces, with its bufferViews and
    accessors."""

    def __init__(self):
        self.pieces: list[bytes] = []
        self.length = 0
        self.views: list[dict] = []
        self.accessors: list[dict] = []

    def view(self, data: np.ndarray, target: int | None = None, stride: int | None = None) -> int:
        """Append `data` as a bufferView; returns its index."""
        raw = np.ascontiguousarray(data).tobytes()
        view = {"buffer": 0, "byteOffset": self.length, "byteLength": len(raw)}
        if target is not None:
            view["target"] = target
        if stride is not None:
            view["byteStride"] = stride
        self.pieces.append(raw)
        self.length += len(raw)
        pad = -self.length % 4
        if pad:
            self.pieces.append(b"\0" * pad)
            self.length += pad
        self.views.append(view)
        return len(self.views) - 1

    def accessor(self, view: int, offset: int, count: int, kind: str, component: int = FLOAT,
                 **extra) -> int:
        """An accessor of `count` elements of `kind` from byte `offset` of bufferView `view`;
        returns its index."""
        self.accessors.append({"bufferView": view, "byteOffset": offset,
                               "componentType": component, "count": count, "type": kind,
                               **extra})
        return len(self.accessors) - 1


def _tube_primitives(buffers: _Buffers, motion: Motion, axis: np.ndarray) -> list[dict]:
    """Each limb's bark tube, limb axes (axis (N, 3) m: base → tip): a vertex block per limb,
    one index accessor for all."""
    n = len(motion.names)
    per_tube = 2 * TUBE_SIDES
    vertices, normals = tube_vertices(np.zeros((n, 3)), axis, motion.radius,
                                      tip_radius(motion.parent, motion.radius))
    vertices = vertices.astype(np.float32)
    positions = buffers.view(vertices, ARRAY_BUFFER, 12)
    normal_view = buffers.view(normals.astype(np.float32), ARRAY_BUFFER, 12)
    indices = buffers.accessor(buffers.view(tube_faces(TUBE_SIDES).astype(np.uint16).ravel(),
                                            ELEMENT_ARRAY_BUFFER), 0, 6 * TUBE_SIDES,
                               "SCALAR", UNSIGNED_SHORT)
    low, high = vertices.min(axis=1), vertices.max(axis=1)
    block = per_tube * 12  # bytes
    return [{"attributes": {
        "POSITION": buffers.accessor(positions, i * block, per_tube, "VEC3",
                                     min=_short(low[i]), max=_short(high[i])),
        "NORMAL": buffers.accessor(normal_view, i * block, per_tube, "VEC3")},
        "indices": indices} for i in range(n)]


def _foliage_primitives(buffers: _Buffers, motion: Motion, axis: np.ndarray) -> dict[int, dict]:
    """The foliage of each leafy limb (by index): its clumps' triangles in the limb's axes,
    turned with it from frame 0 (the clumps are laid out in inertial axes at rest)."""
    clumps = foliage_clumps(motion.leaf_area, motion.form)
    if not len(clumps.limb):
        return {}
    C0 = motion.C_IF[0]
    order = np.argsort(clumps.limb, kind="stable")
    limb_of = clumps.limb[order]
    corners = np.einsum("tji,tkj->tki", C0[limb_of], clumps.corners[order])
    corners += (clumps.along[order, None] * axis[limb_of])[:, None, :]
    normal = np.einsum("tji,tj->ti", C0[limb_of], clumps.normal[order])
    vertices = corners.reshape(-1, 3).astype(np.float32)
    positions = buffers.view(vertices, ARRAY_BUFFER, 12)
    normals = buffers.view(np.repeat(normal, 3, axis=0).astype(np.float32), ARRAY_BUFFER, 12)
    starts = np.flatnonzero(np.r_[True, limb_of[1:] != limb_of[:-1]])
    stops = np.r_[starts[1:], len(limb_of)]
    out = {}
    for a, b in zip(starts.tolist(), stops.tolist()):
        chunk = vertices[3 * a:3 * b]
        out[int(limb_of[a])] = {"attributes": {
            "POSITION": buffers.accessor(positions, 36 * a, 3 * (b - a), "VEC3",
                                         min=_short(chunk.min(axis=0)),
                                         max=_short(chunk.max(axis=0))),
            "NORMAL": buffers.accessor(normals, 36 * a, 3 * (b - a), "VEC3")}}
    return out


def _materials(motion: Motion, foliage: bool) -> tuple[list[dict], np.ndarray]:
    """The bark-to-twig gradient in BARK_MATERIALS steps, only those in use (the validator
    reports unused objects), then the foliage's when there is foliage; and each limb's bark
    material (N,)."""
    step = np.rint(twig_weight(motion.radius) * (BARK_MATERIALS - 1)).astype(int)
    used, shade = np.unique(step, return_inverse=True)
    materials = [{"name": f"bark {k}", "pbrMetallicRoughness": {
        "baseColorFactor": _linear(bark_color(k / (BARK_MATERIALS - 1),
                                              motion.form.bark)[:3]) + [1.0],
        "metallicFactor": 0.0, "roughnessFactor": 0.9}} for k in used]
    if foliage:
        materials.append({"name": f"foliage ({motion.form.name})", "doubleSided": True,
                          "pbrMetallicRoughness": {
                              "baseColorFactor": _linear(motion.form.colour) + [1.0],
                              "metallicFactor": 0.0, "roughnessFactor": 0.8}})
    return materials, shade


def _animation(buffers: _Buffers, times: np.ndarray, q: np.ndarray) -> dict:
    """One LINEAR rotation channel per node: times (S,) s, quaternions q (S, N, 4) x, y, z, w;
    one time accessor shared by all."""
    samples, n = q.shape[:2]
    time_accessor = buffers.accessor(buffers.view(times.astype(np.float32)), 0, samples,
                                     "SCALAR", min=_short([times[0]]), max=_short([times[-1]]))
    rotations = buffers.view(np.ascontiguousarray(q.transpose(1, 0, 2)).astype(np.float32))
    samplers = [{"input": time_accessor, "interpolation": "LINEAR",
                 "output": buffers.accessor(rotations, 16 * samples * i, samples, "VEC4")}
                for i in range(n)]
    channels = [{"sampler": i, "target": {"node": i, "path": "rotation"}} for i in range(n)]
    return {"name": "wind", "channels": channels, "samplers": samplers}


def build_glb(motion: Motion, fps: float | None = None) -> bytes:
    """The binary glTF of `motion`; `fps`: resample the animation at this rate (frames per
    second) instead of the run's own frames."""
    q = gltf_quaternions(local_quaternions(motion))
    times = motion.t - motion.t[0]
    if fps is not None:
        times, q = resample(times, q, fps)
    translation = local_translations(motion)
    axis = np.einsum("nji,nj->ni", motion.C_IF[0], motion.tip[0] - motion.base[0])  # limb axes
    buffers = _Buffers()
    tubes = _tube_primitives(buffers, motion, axis)
    foliage = _foliage_primitives(buffers, motion, axis)
    materials, shade = _materials(motion, bool(foliage))
    animation = _animation(buffers, times, q)

    children: list[list[int]] = [[] for _ in range(len(motion.names))]
    for i, p in enumerate(motion.parent.tolist()):
        if p >= 0:
            children[p].append(i)
    nodes, meshes = [], []
    for i, tube in enumerate(tubes):
        primitives = [{**tube, "material": int(shade[i])}]
        if i in foliage:
            primitives.append({**foliage[i], "material": len(materials) - 1})
        meshes.append({"primitives": primitives})
        node = {"name": str(motion.names[i]), "mesh": i, "translation": _short(translation[i]),
                "rotation": _short(q[0, i])}
        if children[i]:
            node["children"] = children[i]
        nodes.append(node)
    document = {
        "asset": {"version": "2.0", "generator": f"treedyn {__version__}"},
        "scene": 0,
        "scenes": [{"name": "tree", "nodes": np.flatnonzero(motion.parent < 0).tolist()}],
        "nodes": nodes, "meshes": meshes, "materials": materials, "animations": [animation],
        "accessors": buffers.accessors, "bufferViews": buffers.views,
        "buffers": [{"byteLength": buffers.length}],
    }
    return _glb(json.dumps(document, separators=(",", ":")).encode(), b"".join(buffers.pieces))


def _glb(json_chunk: bytes, bin_chunk: bytes) -> bytes:
    """The GLB container: 12-byte header, a JSON chunk (space-padded), a BIN chunk."""
    json_chunk += b" " * (-len(json_chunk) % 4)
    bin_chunk += b"\0" * (-len(bin_chunk) % 4)
    total = 12 + 8 + len(json_chunk) + 8 + len(bin_chunk)
    return b"".join([struct.pack("<4sII", b"glTF", 2, total),
                     struct.pack("<I4s", len(json_chunk), b"JSON"), json_chunk,
                     struct.pack("<I4s", len(bin_chunk), b"BIN\0"), bin_chunk])


def raw_size(motion: Motion, fps: float | None = None) -> int:
    """Bytes of the animation samples (float32 times, float32 quaternions) plus the meshes
    (float32 positions and normals, uint16 tube indices) alone: what a file cannot do
    without, against which its overhead (JSON, padding) is measured."""
    n = len(motion.names)
    samples = len(motion.t) if fps is None else frame_count(motion.t[-1] - motion.t[0], fps)
    triangles = len(foliage_clumps(motion.leaf_area, motion.form).limb)
    return (4 * samples + 16 * samples * n + n * 2 * TUBE_SIDES * 24 + 6 * TUBE_SIDES * 2
            + triangles * 3 * 24)


def write_glb(motion: Motion, path, fps: float | None = None) -> int:
    """Write `motion` as a .glb file at `path` atomically; returns its size in bytes."""
    glb = build_glb(motion, fps)

    def write(name: str) -> None:
        with open(name, "wb") as stream:
            stream.write(glb)
            stream.flush()
            os.fsync(stream.fileno())

    write_atomically(Path(path), write)
    return len(glb)


def load_motion(path) -> Motion:
    """The Motion of a `treedyn run` NPZ file; TreedynError (one line) when it is not one
    (`check_motion`)."""
    path = Path(path)
    try:
        if not path.is_file():
            raise TreedynError(f"cannot read {path}: no such file")
        with np.load(path, allow_pickle=False) as arrays:
            missing = [key for key in REQUIRED_ARRAYS if key not in arrays.files]
            if missing:
                raise TreedynError(f"{path} lacks {', '.join(missing)}: not a run of this "
                                   f"treedyn (write it again with treedyn run)")
            motion = Motion.from_arrays(arrays)
    except TreedynError:
        raise
    except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile,
            zlib.error) as error:
        reason = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        raise TreedynError(f"cannot read {path}: not a whole NPZ file of treedyn run "
                           f"({reason})") from None
    problem = motion_problem(motion)
    if problem:
        raise TreedynError(f"{path}: {problem}: not a run of treedyn (write it again with "
                           f"treedyn run)")
    return motion


# A limb's rotation matrix is orthonormal to this (a run's are to ~1e-15).
ROTATION_TOLERANCE = 1e-6


def motion_problem(motion: Motion) -> str | None:
    """What makes `motion` unfit to export, in words (None: nothing): shapes that disagree,
    values that are not finite, time that does not increase, a parent that is not a tree's,
    a C_IF that is not a rotation, a radius ≤ 0, a colour outside 0…1."""
    t, names, parent = motion.t, motion.names, motion.parent
    if t.ndim != 1 or t.shape[0] < 2:
        return f"t holds {t.size} times, an animation needs at least 2"
    frames, limbs = t.shape[0], names.shape[0] if names.ndim == 1 else 0
    if limbs < 1:
        return "names is not a list of limbs"
    shapes = {"parent": (parent, (limbs,)), "C_IF": (motion.C_IF, (frames, limbs, 3, 3)),
              "base": (motion.base, (frames, limbs, 3)), "tip": (motion.tip, (frames, limbs, 3)),
              "radius": (motion.radius, (limbs,)), "leaf_area": (motion.leaf_area, (limbs,))}
    for key, (array, shape) in shapes.items():
        if array.shape != shape:
            return f"{key} has shape {array.shape}, expected {shape} ({frames} frames × {limbs} limbs)"
        if not np.isfinite(array).all():
            return f"{key} holds values that are not finite"
    if not np.isfinite(t).all() or not (np.diff(t) > 0).all():
        return "t is not finite and strictly increasing"
    if (motion.radius <= 0).any() or (motion.leaf_area < 0).any():
        return "a radius ≤ 0 m or a leaf area < 0 m²"
    problem = _parent_problem(parent)
    if problem:
        return problem
    C = motion.C_IF
    error = np.abs(np.einsum("snji,snjk->snik", C, C) - np.eye(3)).max()
    if not error <= ROTATION_TOLERANCE or not (np.linalg.det(C) > 0).all():
        return "C_IF holds matrices that are not rotations"
    for name, what in (("colour", "foliage_colour"), ("bark", "bark_colour")):
        colour = np.asarray(getattr(motion.form, name), dtype=float)
        if colour.shape != (3,) or not (np.isfinite(colour).all() and (colour >= 0).all()
                                        and (colour <= 1).all()):
            return f"{what} is not three numbers 0…1"
    return None


def _parent_problem(parent: np.ndarray) -> str | None:
    """Whether `parent` ((N,) ints, −1 for a root) is a tree: one root, every index in
    range, no limb its own ancestor."""
    n = parent.shape[0]
    if ((parent < -1) | (parent >= n)).any():
        return "parent holds an index out of range"
    if (parent == np.arange(n)).any():
        return "a limb is its own parent"
    if int((parent < 0).sum()) != 1:
        return f"parent names {int((parent < 0).sum())} roots, a tree has 1"
    depth = np.full(n, -1)
    for i in range(n):   # walk up from each limb, memoised: O(N) in all
        path = []
        j = i
        while j >= 0 and depth[j] < 0:
            if len(path) > n:
                return "parent holds a cycle"
            path.append(j)
            j = parent[j]
        known = depth[j] if j >= 0 else -1
        for k in reversed(path):
            known += 1
            depth[k] = known
    return None
