"""The animated glTF export: valid files (the Khronos validator), and motion that reproduces
the run (read back with pygltflib, evaluated with scipy's rotations: code of its own)."""

from __future__ import annotations

import numpy as np
import pygltflib
import pytest
from scipy.spatial.transform import Rotation, Slerp

from treedyn_core.bench.performance import tree_of_size
from treedyn_core.cli import main
from treedyn_core.io.gltf_export import AXES, Motion, build_glb, raw_size
from treedyn_core.model.preset import load_preset
from treedyn_core.io.run import simulate
from treedyn_core.simulation import Simulation

from gltf_validator import gltf_validator, problems  # noqa: F401 - the fixture

# float32 quaternions carry ~6e-8 rad of round-off per joint; along a chain of k joints
# to a tip r metres away that is ~k·r·6e-8 m: 2e-6 m for young_oak's 20 levels and 12 m.
TIP_TOLERANCE = 1e-5  # m


def _run(preset, duration, every=None, **kwargs):
    sim = Simulation.from_data(preset, **kwargs) if isinstance(preset, dict) \
        else Simulation(load_preset(preset), **kwargs)
    return simulate(sim, duration, every).arrays


def _write(tmp_path, name, arrays, fps=None):
    path = tmp_path / f"{name}.glb"
    path.write_bytes(build_glb(Motion.from_arrays(arrays), fps))
    return path


class GltfMotion:
    """A .glb file's node tree and rotation channels, evaluated independently of the
    exporter: pygltflib reads it, scipy's Slerp interpolates the rotations."""

    def __init__(self, path):
        gltf = pygltflib.GLTF2().load(str(path))
        blob = gltf.binary_blob()
        self.nodes = gltf.nodes
        self.parent = np.full(len(gltf.nodes), -1)
        for i, node in enumerate(gltf.nodes):
            for child in node.children or []:
                self.parent[child] = i
        self.translation = np.array([node.translation for node in gltf.nodes], dtype=float)

        def read(index, width):
            accessor = gltf.accessors[index]
            view = gltf.bufferViews[accessor.bufferView]
            start = (view.byteOffset or 0) + (accessor.byteOffset or 0)
            data = np.frombuffer(blob, dtype=np.float32, count=accessor.count * width,
                                 offset=start)
            return data.reshape(accessor.count, width).astype(float)

        (animation,) = gltf.animations
        self.rotation = [None] * len(gltf.nodes)
        for channel in animation.channels:
            sampler = animation.samplers[channel.sampler]
            assert channel.target.path == "rotation" and sampler.interpolation == "LINEAR"
            self.times = read(sampler.input, 1)[:, 0]
            self.rotation[channel.target.node] = Slerp(self.times,
                                                       Rotation.from_quat(read(sampler.output, 4)))
        # Breadth-first, so that parents come before children.
        order, frontier = [], [i for i in range(len(self.nodes)) if self.parent[i] < 0]
        while frontier:
            order += frontier
            frontier = [c for i in frontier for c in (self.nodes[i].children or [])]
        self.order = order

    def local(self, t):
        """(len(t), N, 3, 3) each node's animated rotation at times t (s, within the
        samples' float32 times: t rounded there is clipped to them)."""
        t = np.clip(t, self.times[0], self.times[-1])
        return np.stack([self.rotation[i](t).as_matrix() for i in range(len(self.nodes))], 1)

    def world(self, t):
        """Each node's world rotation (len(t), N, 3, 3) and origin (len(t), N, 3), glTF axes."""
        local = self.local(t)
        rotation, origin = np.empty_like(local), np.empty(local.shape[:3])
        for i in self.order:
            p = self.parent[i]
            if p < 0:
                rotation[:, i], origin[:, i] = local[:, i], self.translation[i]
            else:
                rotation[:, i] = rotation[:, p] @ local[:, i]
                origin[:, i] = origin[:, p] + np.einsum("sij,j->si", rotation[:, p],
                                                        self.translation[i])
        return rotation, origin


def _tips_from_gltf(path, arrays, times):
    """The limb tips, treedyn axes, from the .glb's nodes at `times` and each limb's tip in
    its own axes (frame 0 of the run)."""
    motion = GltfMotion(path)
    names = [node.name for node in motion.nodes]
    assert names == list(arrays["names"])
    local_tip = np.einsum("nji,nj->ni", arrays["C_IF"][0], arrays["tip"][0] - arrays["base"][0])
    rotation, origin = motion.world(times)
    tip = origin + np.einsum("snij,nj->sni", rotation, local_tip)
    return tip @ AXES  # glTF (x, z, −y) → treedyn (x, y, z): AXESᵀ·v, row-wise


# -- the validator ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_exports_pass_the_khronos_validator(tmp_path, gltf_validator):
    paths = [_write(tmp_path, "two_limbs", _run("two_limbs", 1.0)),
             _write(tmp_path, "sapling", _run("sapling", 1.0)),
             _write(tmp_path, "conifer", _run("conifer", 0.2)),
             _write(tmp_path, "thousand", _run(tree_of_size(1000), 1.0))]
    paths.append(_write(tmp_path, "resampled", _run("sapling", 1.0), fps=24))
    reports = gltf_validator(*paths)
    for path, report in zip(paths, reports):
        assert report["numErrors"] == 0 and report["numWarnings"] == 0, (path.name,
                                                                         problems(report))
    assert GltfMotion(paths[3]).translation.shape == (1026, 3)  # one node per limb


# -- the motion ------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["two_limbs", "young_oak"])
def test_read_back_tips_match_the_run(tmp_path, preset):
    arrays = _run(preset, 2.0, **({"dt": 1 / 240} if preset == "two_limbs" else {}))
    path = _write(tmp_path, preset, arrays)
    tips = _tips_from_gltf(path, arrays, arrays["t"])
    error = np.abs(tips - arrays["tip"]).max()
    assert error < TIP_TOLERANCE, f"{error:.2e} m"
    # The tree moves far more than that, so the test can fail.
    assert np.abs(arrays["tip"] - arrays["tip"][:1]).max() > 1000 * TIP_TOLERANCE


def _joint_angles_between(arrays, fine_t, path):
    """Angle (rad) between each joint's rotation slerped from the .glb and the fine run's,
    (S, N); and the fine run's joint rotations (S, N, 3, 3) limb → parent (root: → inertial)."""
    C_IF = arrays["C_IF"]
    parent = arrays["parent"]
    truth = np.empty_like(C_IF)
    child = parent >= 0
    truth[:, child] = np.einsum("snji,snjk->snik", C_IF[:, parent[child]], C_IF[:, child])
    truth[:, ~child] = np.einsum("ij,snjk->snik", AXES, C_IF[:, ~child])
    local = GltfMotion(path).local(fine_t)
    relative = np.einsum("snji,snjk->snik", local, truth)
    cos = np.clip((np.trace(relative, axis1=2, axis2=3) - 1) / 2, -1, 1)
    return np.arccos(cos), truth


def test_slerp_between_samples_matches_a_finer_run(tmp_path):
    """Every step of a sapling run in wind against its 30 and 15 frames per second exports:
    between samples each joint is off by the slerp's interpolation error, at most
    h²/8·max|θ̈| (θ the joint's rotation vector, h the sample interval), and near it.

    (Not checked: the error's order in h. The wind's gusts and the twigs' fast modes make
    the motion rough on these intervals: halving h from 1/15 s cuts the errors by 1.5–4.)"""
    fine = _run("sapling", 2.0, every=1, dt=1 / 120)
    fine["t"] = fine["t"] - fine["t"][0]
    worst = {}
    for every in (4, 8):  # 30 and 15 frames per second
        coarse = {key: value[::every] if getattr(value, "ndim", 0) and len(value) == len(
            fine["t"]) else value for key, value in fine.items()}
        path = _write(tmp_path, f"every{every}", coarse)
        times = fine["t"][: (len(fine["t"]) - 1) // every * every + 1]
        error, truth = _joint_angles_between({**fine, "C_IF": fine["C_IF"][:len(times)]},
                                             times, path)
        h = every / 120
        theta = Rotation.from_matrix(truth.reshape(-1, 3, 3)).as_rotvec().reshape(
            truth.shape[:2] + (3,))
        second = np.linalg.norm(np.diff(theta, 2, axis=0), axis=2) / (1 / 120) ** 2
        bound = h ** 2 / 8 * second.max(axis=0)  # (N,) rad
        # Measured: 0.39–0.76 of the bound at 30 frames per second, 0.13–0.70 at 15.
        ratio = error.max(axis=0) / bound
        assert (ratio <= 1.0).all(), ratio
        # The bound is near: the export is no smoother than the slerp of the samples.
        assert ratio.max() > 0.3, ratio
        worst[every] = error.max()
    assert worst[8] > worst[4] > 1e-4, worst  # rad; float32 round-off is 1e-7


def test_file_size_is_close_to_its_samples_and_meshes(tmp_path):
    """At most 1.2× the float32 animation samples and meshes for 10 s at 30 frames per second
    (the JSON's per-limb share is fixed: shorter runs have relatively more of it)."""
    arrays = _run(tree_of_size(1000), 10.0)
    assert len(arrays["t"]) == 301
    path = _write(tmp_path, "thousand", arrays)
    ratio = path.stat().st_size / raw_size(Motion.from_arrays(arrays))
    assert 1.0 < ratio <= 1.2, ratio


# -- the command line ------------------------------------------------------------------------------

def test_run_gltf_writes_only_the_glb(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "sapling", "--duration", "0.5", "--gltf", "tree.glb"]) == 0
    assert "wrote tree.glb" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree.glb"]
    assert pygltflib.GLTF2().load("tree.glb").animations[0].channels


def test_export_resamples(tmp_path, capsys):
    npz = tmp_path / "run.npz"
    assert main(["run", "two_limbs", "--duration", "1", "--out", str(npz)]) == 0
    out = tmp_path / "run.glb"
    assert main(["export", str(npz), str(out), "--fps", "10"]) == 0
    assert "10 frames per second" in capsys.readouterr().out
    assert np.allclose(GltfMotion(out).times, np.arange(11) / 10)


def _read_only_folder(tmp_path):
    """A folder this process cannot write to (root ignores permission bits: /proc)."""
    import os

    if os.geteuid() == 0:
        return "/proc"
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    return str(folder)


@pytest.mark.parametrize("args, fragment", [
    (["export", "{npz}", "{tmp}/missing/out.glb"], "does not exist"),
    (["export", "{npz}", "{ro}/out.glb"], "not writable"),
    (["export", "{npz}", "{tmp}/out.gltf"], ".glb"),
    (["export", "{npz}", "{tmp}/out.glb", "--fps", "0"], "--fps"),
    (["export", "{npz}", "{tmp}/out.glb", "--fps", "-3"], "--fps"),
    (["export", "{tmp}/absent.npz", "{tmp}/out.glb"], "no such file"),
    (["export", "{tmp}/notes.npz", "{tmp}/out.glb"], "cannot read"),
    (["run", "two_limbs", "--duration", "1", "--gltf", "{tmp}/out.obj"], ".glb"),
    (["run", "two_limbs", "--duration", "1", "--gltf", "{tmp}/missing/out.glb"], "does not exist"),
])
def test_bad_input_is_one_line_exit_2_and_no_file(args, fragment, tmp_path, capsys):
    npz = tmp_path / "run.npz"
    assert main(["run", "two_limbs", "--duration", "0.2", "--out", str(npz)]) == 0
    (tmp_path / "notes.npz").write_text("not an npz")
    capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = [a.format(npz=npz, tmp=tmp_path, ro=_read_only_folder(tmp_path)) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedyn: error:") and fragment in err[0], err
    after = sorted(p.name for p in tmp_path.iterdir() if p.name != "locked")
    assert after == before


def test_gltf_export_imports_no_gui_toolkit(tmp_path):
    import subprocess
    import sys

    npz, glb = tmp_path / "r.npz", tmp_path / "r.glb"
    code = (f"import sys\nfrom treedyn_core.cli import main\n"
            f"assert main(['run', 'two_limbs', '--duration', '0.1', '--out', {str(npz)!r}, "
            f"'--gltf', {str(glb)!r}]) == 0\n"
            f"assert main(['export', {str(npz)!r}, {str(glb)!r}]) == 0\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in ('PyQt6', 'vispy')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_written_file_has_the_usual_permissions(tmp_path):
    """Written through a temporary file (mkstemp makes it 0600), the result gets the mode a
    newly created file gets here (0666 less the umask)."""
    import os

    npz = tmp_path / "run.npz"
    assert main(["run", "two_limbs", "--duration", "0.2", "--out", str(npz)]) == 0
    out = tmp_path / "run.glb"
    assert main(["export", str(npz), str(out)]) == 0
    (tmp_path / "plain").touch()
    assert out.stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777
    assert os.access(out, os.R_OK)


def test_the_tree_colours_travel_through_the_npz_into_the_materials(tmp_path):
    """The run keeps the conifer's species colours (the species table's Norway spruce); the
    export's bark material of the thickest limbs and its foliage material carry them (linear
    RGB of the sRGB colours)."""
    from treedyn_core.model import species
    from treedyn_core.io.gltf_export import _linear
    from treedyn_core.io.limb_mesh import rgb
    arrays = _run("conifer", 0.05)
    table = species.entry("picea_abies")["colour"]
    assert tuple(arrays["foliage_colour"]) == rgb(table["foliage"])
    assert tuple(arrays["bark_colour"]) == rgb(table["bark"])
    gltf = pygltflib.GLTF2().load(str(_write(tmp_path, "conifer", arrays)))
    colours = {m.name: m.pbrMetallicRoughness.baseColorFactor[:3] for m in gltf.materials}
    np.testing.assert_allclose(colours["bark 0"], _linear(rgb(table["bark"])), rtol=1e-6)
    np.testing.assert_allclose(colours["foliage (conifer)"], _linear(rgb(table["foliage"])),
                               rtol=1e-6)
