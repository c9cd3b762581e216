"""`treedyn bench performance --json` and `treedyn bench frames --json` produce every row issue
10 names (small sizes only: the figures themselves are not checked here, only that they are
there, positive and finite)."""

from __future__ import annotations

import io
import json
import math

import pytest

from treedyn_core.bench import performance as bench_performance
from treedyn_core.errors import TreedynError
from treedyn_core.model.generator import count_limbs

SIZES = (10, 100)


def positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value > 0


def test_bench_performance_json_has_every_row(monkeypatch):
    monkeypatch.setattr(bench_performance, "cold_start", lambda: 20.0)  # its own test below
    buffer = io.StringIO()
    result = bench_performance.run(sizes=SIZES, as_json=True, out=buffer)
    printed = json.loads(buffer.getvalue())
    assert printed == json.loads(json.dumps(result))

    machine = printed["machine"]
    assert isinstance(machine["cpus"], int) and machine["cpus"] >= 1
    for library in ("cpu", "python", "numpy", "numba", "treedyn"):
        assert machine[library], library
    assert printed["dt"] == pytest.approx(1 / 120)
    assert positive(printed["time_to_first_step_seconds"])
    assert printed["cold_start_seconds"] == 20.0

    rows = printed["rows"]
    # Each size × integrator, rk4 included at these sizes, in the order of the sizes.
    assert [row["integrator"] for row in rows] == ["implicit", "rk4"] * len(SIZES)
    for k, target in enumerate(SIZES):
        implicit, rk4 = rows[2 * k], rows[2 * k + 1]
        assert implicit["limbs"] == rk4["limbs"]
        assert 0.5 * target <= implicit["limbs"] <= 2 * target
    for row in rows:
        for key in ("seconds_per_step", "steps_per_second", "real_time_factor", "dt",
                    "microseconds_per_limb_step", "load_seconds"):
            assert positive(row[key]), (row["limbs"], row["integrator"], key, row[key])
        assert row["threads"] == 1   # trees this small stay on one thread
        assert row["steps_per_second"] == pytest.approx(1 / row["seconds_per_step"])
        assert row["real_time_factor"] == pytest.approx(row["dt"] / row["seconds_per_step"])
        if row["integrator"] == "implicit":
            assert row["dt"] == pytest.approx(1 / 120)
            split = row["split_seconds"]
            for stage in ("wind_and_drag", "joint_forces", "recursion"):
                assert positive(split[stage]), (row["limbs"], stage, split[stage])
            assert positive(row["seconds_per_step_no_wind"])


def test_bench_performance_gives_a_row_on_one_thread_and_one_on_all(monkeypatch):
    """Where a tree is shared among threads, the implicit step is measured on one thread (with
    the split into stages) and on all; rk4 on all."""
    monkeypatch.setenv("TREEDYN_THREADS", "2")
    rows = bench_performance.measure(*bench_performance.build(1000))
    assert [(row["integrator"], row["threads"]) for row in rows] == [
        ("implicit", 1), ("implicit", 2), ("rk4", 2)]
    assert "split_seconds" in rows[0] and "split_seconds" not in rows[1]
    assert all(positive(row["seconds_per_step"]) for row in rows)


@pytest.mark.parametrize("nominal", bench_performance.SIZES)
def test_bench_trees_are_within_five_percent_of_their_sizes(nominal):
    """Every nominal size gets a tree within 5 % of it: 100,000 too, whose nearest trees of
    equal branches (88,575 and 118,098 limbs) are not."""
    generator = bench_performance.tree_of_size(nominal)["tree"]["generator"]
    assert abs(count_limbs(generator) / nominal - 1.0) <= bench_performance.SIZE_TOLERANCE


def test_bench_trees_stay_within_the_generators_limit():
    """Near 250,000 the nearest tree (262,146 limbs) is over max_limbs: the largest under it."""
    generator = bench_performance.tree_of_size(250_000)["tree"]["generator"]
    assert 150_000 < count_limbs(generator) <= generator["max_limbs"]


def test_bench_performance_repeat_gives_medians_and_ranges(monkeypatch):
    """--repeat K: each row is measured in K passes over the sizes; its times are the passes'
    medians, its ranges their extremes, and its rates follow from the median."""
    per_pass = iter([0.004, 0.006, 0.005])                         # s per step, passes 1–3
    stages = ("wind_and_drag", "joint_forces", "recursion")

    def fake_measure(sim, load_seconds, integrators):
        t = next(per_pass)
        return [bench_performance._with_rates(
            {"limbs": sim.tree.n, "integrator": name, "threads": 1, "dt": 1 / 120,
             "seconds_per_step": t,
             "load_seconds": load_seconds, **({"seconds_per_step_no_wind": t / 2,
                                               "split_seconds": dict.fromkeys(stages, t / 4)}
                                              if name == "implicit" else {})})
            for name in integrators]

    monkeypatch.setattr(bench_performance, "measure", fake_measure)
    monkeypatch.setattr(bench_performance, "time_to_first_step", lambda: 1.0)
    monkeypatch.setattr(bench_performance, "cold_start", lambda: 20.0)
    monkeypatch.setattr(bench_performance, "calibration_ms", lambda: 6.7)
    buffer = io.StringIO()
    result = bench_performance.run(sizes=(10,), repeat=3, out=buffer)
    implicit, rk4 = result["rows"]
    assert implicit["passes"] == rk4["passes"] == 3
    assert implicit["range_seconds_per_step"] == [0.004, 0.006]
    assert implicit["seconds_per_step"] == 0.005
    assert implicit["real_time_factor"] == pytest.approx((1 / 120) / 0.005)
    assert implicit["microseconds_per_limb_step"] == pytest.approx(5e3 / implicit["limbs"])
    assert implicit["range_seconds_per_step_no_wind"] == [0.002, 0.003]
    assert implicit["split_seconds"]["recursion"] == 0.00125
    assert "4.000–6.000" in buffer.getvalue()


def test_combine_takes_medians_over_passes():
    passes = [{"limbs": 100, "integrator": "implicit", "dt": 0.01, "load_seconds": 2.0,
               "seconds_per_step": t, "seconds_per_step_no_wind": t / 2,
               "split_seconds": {"recursion": t / 4}} for t in (0.03, 0.01, 0.02, 0.05)]
    row = bench_performance.combine(passes)
    assert row["seconds_per_step"] == pytest.approx(0.025)
    assert row["range_seconds_per_step"] == [0.01, 0.05]
    assert row["seconds_per_step_no_wind"] == pytest.approx(0.0125)
    assert row["range_seconds_per_step_no_wind"] == [0.005, 0.025]
    assert row["split_seconds"]["recursion"] == pytest.approx(0.00625)
    assert row["steps_per_second"] == pytest.approx(40.0)
    assert row["real_time_factor"] == pytest.approx(0.4)
    assert row["microseconds_per_limb_step"] == pytest.approx(250.0)


def test_bench_frames_json_has_every_row(qapp):
    from treedyn_app import bench_frames

    buffer = io.StringIO()
    result = bench_frames.run(sizes=(100,), as_json=True, out=buffer, live_seconds=1.0,
                              live_warm_up=0.5, live_runs=(("tubes", 10_000),))
    printed = json.loads(buffer.getvalue())
    assert printed == json.loads(json.dumps(result))

    machine = printed["machine"]
    for key in ("cpu", "cpus", "python", "numpy", "vispy", "pyqt6", "qt"):
        assert machine[key], key
    assert machine.get("gl_renderer"), "the OpenGL renderer string is printed"

    assert [row["mode"] for row in printed["frames"]] == ["tubes", "lines"]
    for row in printed["frames"]:
        assert 50 <= row["limbs"] <= 200 and row["segments"] == row["limbs"]
        for key in ("update_ms", "draw_ms", "frame_ms", "fps", "cpu_ms", "render_ms", "frames"):
            assert positive(row[key]), (key, row[key])
        assert row["frame_ms"] >= row["draw_ms"]
        assert row["fps"] == pytest.approx(1e3 / row["frame_ms"])

    (live,) = printed["app"]
    assert live["mode"] == "tubes"
    assert 5_000 <= live["limbs"] <= 20_000  # the 10,000-limb tree
    assert live["integrator"] == "implicit"
    for key in ("fps", "frames", "real_time_factor", "new_poses_per_second", "seconds"):
        assert positive(live[key]), (key, live[key])


@pytest.mark.parametrize("environment, words", [
    ({"QT_QPA_PLATFORM": "offscreen"}, "offscreen"),
    ({"DISPLAY": None, "WAYLAND_DISPLAY": None, "QT_QPA_PLATFORM": None}, "DISPLAY is not set"),
    ({"DISPLAY": ":4711", "WAYLAND_DISPLAY": None, "QT_QPA_PLATFORM": None}, ":4711"),
])
def test_bench_frames_refuses_without_a_usable_display(monkeypatch, environment, words):
    """Where Qt would abort the process (no X display) or vispy cannot draw (offscreen), the
    benchmark stops first with a one-line error."""
    import sys

    from treedyn_app import bench_frames

    if not sys.platform.startswith("linux"):
        pytest.skip("the display check is for X11")
    for name, value in environment.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    with pytest.raises(TreedynError, match=words) as caught:
        bench_frames._check_display()
    assert "\n" not in str(caught.value)

