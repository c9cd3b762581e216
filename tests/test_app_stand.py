"""A tree in a forest stand in the app (#39 item 4): the canopy height marked in the view
(the neighbours' crowns up to it and its rim), the wind compass giving the mean speed u_h at
the canopy top, the turbulence control saying it is σ_u/U_h there; on open ground none of it.
pytest-qt under Xvfb, as tests/test_app_daily.py."""

from __future__ import annotations

import numpy as np
import pytest
from PyQt6.QtCore import QSettings

from test_app import READY_TIMEOUT_MS
from treedyn_app.main_window import MainWindow
from treedyn_app.stand_visual import CROWN_BASE, crown_mesh, stand_of, stem_positions
from treedyn_app.worker import FAILED, RUNNING
from treedyn_core.model.preset import load_preset, parse_preset

# The compass's caption shows one decimal; the worker's u_h may move by a ramp's last digits.
SPEED_SHOWN = 0.051  # m/s


@pytest.fixture
def window_of(qtbot, tmp_path):
    windows = []

    def make(preset):
        settings = QSettings(str(tmp_path / "treedyn.ini"), QSettings.Format.IniFormat)
        window = MainWindow(preset, settings=settings)
        qtbot.addWidget(window)
        windows.append(window)
        window.show()
        qtbot.waitExposed(window)
        wait_ready(qtbot, window, preset.name)
        return window

    yield make
    for window in windows:
        window.shutdown()


def wait_ready(qtbot, window, name: str) -> None:
    qtbot.waitUntil(lambda: window.worker.latest.state in (RUNNING, FAILED)
                    and window._generation > 0 and window.preset.name == name
                    and window.worker.latest.preset is window.preset,
                    timeout=READY_TIMEOUT_MS)
    qtbot.wait(100)  # a tick of the window: the frame shown


def caption_speed(shown) -> float:
    """The speed the compass of `shown` (a window, or a film's canvas) gives, m/s."""
    return float(shown.canvas.wind_overlay.caption.split(" m/s")[0])


def test_a_forest_tree_is_shown_in_its_stand_and_an_open_one_alone(qtbot, window_of):
    preset = load_preset("conifer")  # a stand: forest Norway spruce of 25 m
    assert stand_of(preset.data) == (25.0, 3.0)
    window = window_of(preset)
    canvas, tree = window.canvas, window.worker.simulation.tree
    ground = float(tree.rest_base[0][2])
    stand = canvas.stand
    assert stand.visible and stand.height == 25.0
    assert stand.rim_height() == pytest.approx(ground + 25.0, abs=1e-4)
    assert stand.crown_tops() == pytest.approx(ground + 25.0, abs=1e-4)
    assert "canopy top 25 m" == stand.label
    # The neighbours stand on the stand's 3 m grid, none where the tree stands.
    distances = np.hypot(*(stand.stems - tree.rest_base[0][:2]).T)
    assert len(stand.stems) >= 8 and distances.min() == pytest.approx(3.0, abs=1e-6)
    # The compass: u_h at the canopy top (here the reference height is the canopy's).
    top = window.worker.simulation.wind.canopy_top_speed
    assert window.worker.latest.settings.canopy_top_speed == pytest.approx(top)
    assert window.canvas.wind_overlay.caption.endswith("\nat canopy top")
    assert caption_speed(window) == pytest.approx(top, abs=SPEED_SHOWN)
    c = window.controls
    assert "σ_u / U_h at the canopy top" in c.turbulence.toolTip()
    assert c.stand_note.isVisible() and "25 m canopy" in c.stand_note.text()
    assert "speed and turbulence σ_u/U_h at the canopy top" in c.stand_note.text()
    # An open-grown tree: no stand, the compass at the reference height.
    window.open_preset("young_oak")
    wait_ready(qtbot, window, load_preset("young_oak").name)
    assert not canvas.stand.visible and canvas.stand.rim_height() is None
    assert "canopy" not in canvas.wind_overlay.caption
    assert caption_speed(window) == pytest.approx(window.worker.simulation.wind_speed,
                                                  abs=SPEED_SHOWN)
    assert window.worker.latest.settings.canopy_top_speed is None
    assert not c.stand_note.isVisible()
    assert c.turbulence.toolTip() == "Turbulence intensity σ_u / U"


def test_a_canopy_below_the_reference_height_gives_the_slower_wind_at_its_top(
        qtbot, window_of):
    preset = parse_preset(
        "version: 1\nname: Small tree in a stand\n"
        "tree: {generator: {trunk: {length: 6.0, radius: 0.15, segments: 6}, levels: 2, "
        "children: 3, segments: 2}}\n"
        "wind: {speed: 10.0, reference_height: 10.0, canopy: {height: 5.0, spacing: 2.5}}\n")
    window = window_of(preset)
    assert window.canvas.stand.height == 5.0
    top = window.worker.simulation.wind.canopy_top_speed
    assert top < 9.0  # the wind at 5 m, inside the log profile's drop below 10 m
    assert caption_speed(window) == pytest.approx(top, abs=SPEED_SHOWN)
    assert "at canopy top" in window.canvas.wind_overlay.caption
    note = window.controls.stand_note.text()
    assert "speed at 10 m" in note and "turbulence σ_u/U_h at the canopy top" in note
    # The speed slider moves the compass's u_h in proportion.
    window.controls.wind_speed.spin.setValue(20.0)
    qtbot.waitUntil(lambda: abs(caption_speed(window) - 2.0 * top) < 0.11, timeout=5000)


def test_the_neighbours_stand_on_the_spacing_grid_with_crowns_up_to_the_canopy():
    stems = stem_positions(np.array([1.0, 2.0]), 3.0, 7.0)
    offsets = stems - [1.0, 2.0]
    assert len(stems) == 20  # (±3, ±6 on a 3 m grid within 7 m) less the tree's own point
    assert np.allclose(offsets / 3.0, np.round(offsets / 3.0))
    assert np.hypot(*offsets.T).min() == pytest.approx(3.0)
    assert np.hypot(*offsets.T).max() <= 7.0
    for conifer in (True, False):
        vertices, faces = crown_mesh(stems, 0.5, CROWN_BASE * 20.0, 20.0, 1.2, conifer)
        assert vertices[:, 2].max() == pytest.approx(20.5)
        assert vertices[:, 2].min() == pytest.approx(0.5 + CROWN_BASE * 20.0)
        assert faces.max() < len(vertices)
        across = np.abs(vertices[:, :2] - np.repeat(stems, len(vertices) // len(stems),
                                                    axis=0))
        assert across.max() == pytest.approx(1.2)
    assert stand_of(load_preset("young_oak").data) is None


def test_the_compass_caption_of_two_lines_clears_its_dial_and_the_view():
    from treedyn_app.wind_overlay import CAPTION_GAP, CAPTION_LINE, placement

    for width, height in ((950, 600), (600, 400), (2400, 2400)):
        one, radius = placement(width, height)
        two, same = placement(width, height, 2)
        assert same == radius and two[1] == pytest.approx(one[1] - CAPTION_LINE * radius)
        assert two[1] + (CAPTION_GAP + 2 * CAPTION_LINE) * radius <= height


def test_a_film_shows_the_stand_and_the_canopy_top_wind_as_the_view_does(qtbot):
    from treedyn_app.render_video import FilmCanvas
    from treedyn_core.simulation import Simulation

    sim = Simulation(load_preset("conifer"))
    film = FilmCanvas(sim, (320, 240))
    try:
        assert film.canvas.stand.visible and film.canvas.stand.height == 25.0
        assert film.canvas.wind_overlay.caption.endswith("\nat canopy top")
        assert caption_speed(film) == pytest.approx(sim.wind.canopy_top_speed, abs=SPEED_SHOWN)
        assert film.draw(sim.tree.rest_base, sim.tree.rest_tip).shape == (240, 320, 3)
    finally:
        film.close()
