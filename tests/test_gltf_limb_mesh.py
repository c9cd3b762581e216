"""The limb and foliage geometry shared by the app and the glTF exporter (limb_mesh)."""

import numpy as np
import pytest

from treedyn_core.io.limb_mesh import (FOLIAGE_AREA, FORMS, TWIG_TAPER, foliage_clumps,
                                       foliage_form, tip_radius, tube_faces, tube_vertices)
from treedyn_core.model.preset import load_preset

SIDES = 8


def _random_tubes(rng, n=50):
    base = rng.normal(size=(n, 3))
    axis = rng.normal(size=(n, 3)) * rng.uniform(0.1, 3, (n, 1))
    axis[0] = [2.0, 1e-9, 0.0]  # along x̂: the other branch of `perpendicular`
    r0 = rng.uniform(0.01, 0.3, n)
    r1 = r0 * rng.uniform(0.2, 1.0, n)
    return base, axis, r0, r1


def test_tube_rings_lie_on_the_tapered_surface():
    base, axis, r0, r1 = _random_tubes(np.random.default_rng(3))
    vertices, normals = tube_vertices(base, axis, r0, r1, SIDES)
    along = axis / np.linalg.norm(axis, axis=1, keepdims=True)
    for ring, centre, radius in ((slice(0, SIDES), base, r0),
                                 (slice(SIDES, 2 * SIDES), base + axis, r1)):
        offset = vertices[:, ring] - centre[:, None]
        np.testing.assert_allclose(np.linalg.norm(offset, axis=2), radius[:, None] * np.ones(SIDES),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.einsum("nkj,nj->nk", offset, along), 0.0, atol=1e-12)
    # Each normal is ⟂ to the surface's generator (base ring → tip ring) and its ring tangent.
    generator = vertices[:, SIDES:] - vertices[:, :SIDES]
    np.testing.assert_allclose(np.einsum("nkj,nkj->nk", normals[:, :SIDES], generator), 0.0,
                               atol=1e-12)
    tangent = np.roll(vertices[:, :SIDES], -1, axis=1) - np.roll(vertices[:, :SIDES], 1, axis=1)
    np.testing.assert_allclose(np.einsum("nkj,nkj->nk", normals[:, :SIDES], tangent), 0.0,
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=2), 1.0, rtol=1e-12)


def test_tube_triangles_face_outward():
    base, axis, r0, r1 = _random_tubes(np.random.default_rng(4))
    vertices, normals = tube_vertices(base, axis, r0, r1, SIDES)
    faces = tube_faces(SIDES)
    a, b, c = (vertices[:, faces[:, k]] for k in range(3))
    face_normal = np.cross(b - a, c - a)
    vertex_normal = normals[:, faces].mean(axis=2)
    assert (np.einsum("nfj,nfj->nf", face_normal, vertex_normal) > 0).all()
    assert len(faces) == 2 * SIDES and faces.max() == 2 * SIDES - 1


def test_tip_radius_meets_the_thickest_child():
    parent = np.array([-1, 0, 0, 1])
    radius = np.array([0.2, 0.1, 0.15, 0.05])
    np.testing.assert_allclose(tip_radius(parent, radius),
                               [0.15, 0.05, TWIG_TAPER * 0.15, TWIG_TAPER * 0.05])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_foliage_area_and_placement(form):
    rng = np.random.default_rng(5)
    leaf_area = np.where(rng.uniform(size=300) < 0.5, rng.uniform(0.1, 2.0, 300), 0.0)
    clumps = foliage_clumps(leaf_area, FORMS[form], max_triangles=3000)
    corners = clumps.corners
    area = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0],
                                         corners[:, 2] - corners[:, 0]), axis=1)
    # Every leafy limb carries FOLIAGE_AREA of its leaf area, and only leafy limbs carry any.
    carried = np.bincount(clumps.limb, weights=area, minlength=len(leaf_area))
    np.testing.assert_allclose(carried, FOLIAGE_AREA * leaf_area, rtol=1e-12)
    low, high = FORMS[form].along
    assert ((clumps.along >= low) & (clumps.along <= high)).all()
    # Corners counter-clockwise about the normal.
    face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    np.testing.assert_allclose(face / np.linalg.norm(face, axis=1, keepdims=True),
                               clumps.normal, atol=1e-9)


def test_weeping_foliage_hangs_in_upright_strips():
    form = FORMS["weeping"]
    clumps = foliage_clumps(np.full(50, 0.5), form, max_triangles=500)
    top_left, top_right, point = (clumps.corners[:, k] for k in range(3))
    np.testing.assert_allclose(top_left[:, 2], top_right[:, 2], atol=1e-12)  # a level top
    width = np.linalg.norm(top_right - top_left, axis=1)
    # The point hangs straight below the top edge's middle, `hang` widths down.
    np.testing.assert_allclose(point - 0.5 * (top_left + top_right),
                               np.stack([0 * width, 0 * width, -form.hang * width], axis=1),
                               atol=1e-12)
    np.testing.assert_allclose(clumps.normal[:, 2], 0.0, atol=1e-12)  # upright


def test_foliage_budget_spreads_the_area_over_fewer_limbs():
    leaf_area = np.full(1000, 0.3)
    clumps = foliage_clumps(leaf_area, FORMS["broadleaf"], max_triangles=200)
    assert len(clumps.limb) == 200
    corners = clumps.corners
    area = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0],
                                         corners[:, 2] - corners[:, 0]), axis=1)
    np.testing.assert_allclose(area.sum(), FOLIAGE_AREA * leaf_area.sum(), rtol=1e-12)


@pytest.mark.parametrize("preset, form", [("young_oak", "broadleaf"), ("conifer", "conifer"),
                                          ("weeping_willow", "weeping"), ("two_limbs", "broadleaf")])
def test_species_form_of_the_shipped_presets(preset, form):
    assert foliage_form(load_preset(preset).data).name == form


def test_tree_colours_come_from_the_species_and_the_preset_overrides_them():
    """The conifer (species picea_abies) is drawn in its table entry's colours; a preset's own
    foliage_colour or bark_colour wins; a bad colour is one line naming the key."""
    from treedyn_core.model import species
    from treedyn_core.io.limb_mesh import limb_colors, rgb
    from treedyn_core.model.preset import apply_overrides
    from treedyn_core.errors import PresetError
    data = load_preset("conifer").data
    table = species.entry("picea_abies")["colour"]
    form = foliage_form(data)
    assert form.colour == rgb(table["foliage"]) and form.bark == rgb(table["bark"])
    assert rgb("#ff8000") == (1.0, 128 / 255, 0.0)
    radius = np.array([0.3, 0.1, 0.01])
    np.testing.assert_allclose(limb_colors(radius, form.bark)[0, :3], form.bark)
    mine = foliage_form(apply_overrides(data, ["tree.generator.bark_colour='#102030'"]))
    assert mine.bark == rgb("#102030") and mine.colour == form.colour
    with pytest.raises(PresetError, match="tree.generator.foliage_colour.*#rrggbb"):
        apply_overrides(data, ["tree.generator.foliage_colour=green"])
