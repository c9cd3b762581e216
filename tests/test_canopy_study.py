"""The study rows' canopy_top_wind_m_s (treedyn_core/studies/study_run.py): the mean wind u_h at the
top of the stand's canopy, in which ForestGALES states its turning moments; on open ground the
mean wind at the tree's top."""

from __future__ import annotations

import json

import pytest

from treedyn_core.studies.study_run import RunSpec, run_row

FOREST = "tree: {generator: {species: picea_abies, height: 12, dbh: 0.2}}\n"
OPEN = "tree: {generator: {species: picea_abies, height: 12, dbh: 0.2, stand: open}}\n"


def _row(tmp_path, text, params):
    path = tmp_path / "tree.yaml"
    path.write_text(text)
    return run_row(RunSpec(0, "k", str(path), json.dumps({}), params, 0.05, None))


def test_forest_row_gives_the_canopy_top_wind(tmp_path):
    """A forest species tree's wind.speed is given at its canopy top: the column is the speed."""
    row = _row(tmp_path, FOREST, {"wind.speed": 9.0})
    assert row["status"] == "ok", row["error"]
    assert row["canopy_top_wind_m_s"] == pytest.approx(9.0, rel=1e-12)


def test_canopy_top_wind_with_the_reference_inside_the_canopy(tmp_path):
    """wind.speed at 5 m inside a 12 m canopy: the column is speed · U_h/U(5 m) > speed."""
    row = _row(tmp_path, FOREST + "wind: {reference_height: 5}\n", {"wind.speed": 3.0})
    assert row["status"] == "ok", row["error"]
    assert row["canopy_top_wind_m_s"] > 3.0 * 2.0


def test_open_row_gives_the_wind_at_the_trees_top(tmp_path):
    """On open ground: the power law at the tree's height, U (H/z_ref)^α."""
    row = _row(tmp_path, OPEN, {"wind.speed": 6.0})
    assert row["status"] == "ok", row["error"]
    height = row["height_m"]
    assert row["canopy_top_wind_m_s"] == pytest.approx(6.0 * (height / 10.0) ** 0.14,
                                                       rel=1e-12)
