"""Hovering a mode in the modes panel highlights the limbs it moves (app/mode_highlight.py).

The limbs lit from the mode's tip displacements are checked against the mode's name, which
`treedyn_core.analysis.modes` derives another way (the smallest subtree holding most of the mode's
kinetic energy): the limb lit brightest for "branch b2 sway y" is one of branch b2's."""

from __future__ import annotations

import numpy as np
from PyQt6.QtCore import QPoint
from PyQt6.QtTest import QTest

from test_app import open_window, settings  # noqa: F401 (fixtures)
from treedyn_app.mode_highlight import HIGHLIGHT, MOVING_FRACTION, moving_limbs
from treedyn_core.model.preset import load_preset


def highlight_pixels(image: np.ndarray) -> int:
    """Pixels of the highlight's magenta in an RGBA render."""
    rgb = image[..., :3].astype(int)
    target = (np.array(HIGHLIGHT) * 255).astype(int)
    return int((np.abs(rgb - target).max(axis=-1) < 60).sum())


def hover_row(qtbot, panel, row: int) -> None:
    """Point at `row` (again from outside the rows if the list was refilled under the pointer,
    which forgets the hover)."""
    table = panel.table
    rect = table.visualRect(table.model().index(row, 3))
    for _ in range(3):
        QTest.mouseMove(table.viewport(), rect.center())
        try:
            qtbot.waitUntil(lambda: panel.hovered() == row, timeout=1000)
            return
        except qtbot.TimeoutError:
            QTest.mouseMove(table.viewport(), QPoint(2, table.viewport().height() - 2))
    assert panel.hovered() == row


def branch_of(description: str) -> str | None:
    """'branch b2.2 sway x' → 'b2.2'."""
    words = description.split()
    return words[1] if words[0] == "branch" else None


def test_hovering_a_mode_highlights_its_moving_limbs(qtbot, open_window):
    window = open_window(load_preset("young_oak"))
    panel, table = window.modes_panel, window.modes_panel.table
    window.modes_action.trigger()
    qtbot.waitUntil(lambda: table.rowCount() == 10
                    and window._modes_shown == window._modes_job.key, timeout=120_000)
    tree = window.worker.latest.tree
    assert highlight_pixels(window.canvas.render()) == 0

    descriptions = [table.item(r, 3).text() for r in range(table.rowCount())]
    checked = 0
    for row, description in enumerate(descriptions):
        hover_row(qtbot, panel, row)
        mask = window.highlight.mask
        motion = moving_limbs(tree, window._modes_job.result, row)
        np.testing.assert_array_equal(mask, motion >= MOVING_FRACTION)
        branch = branch_of(description)
        if branch is not None:
            # The label names the branch holding most of the mode's motion, so of it and its
            # sibling branches it is the one the highlight lights most (one light twig of a
            # sibling may still swing a little further than any limb of it).
            first = tree.names.index(branch)
            lit = {c: float(motion[list(tree.subtree(c))].sum())
                   for c in tree.children(int(tree.parent[first]))}
            assert max(lit, key=lit.get) == first, (description, {
                tree.names[c]: round(v, 2) for c, v in lit.items()})
            checked += 1
        elif description.startswith("trunk sway"):  # the crown top moves most
            assert mask[window.worker.simulation.crown_top()]
        # Drawn where the tree is drawn: the segments are the lit limbs' base → tip.
        base, tip = window.canvas.tree.pose
        segments = window.highlight.segments
        np.testing.assert_array_equal(segments[0::2], base[mask].astype(np.float32))
        np.testing.assert_array_equal(segments[1::2], tip[mask].astype(np.float32))
    assert checked >= 5  # young_oak's ten lowest modes are mostly branch modes
    assert highlight_pixels(window.canvas.render()) > 50

    QTest.mouseMove(window.canvas.widget, QPoint(5, 5))  # off the table: the highlight goes
    qtbot.waitUntil(lambda: panel.hovered() == -1, timeout=2000)
    assert window.highlight.segments is None
    assert highlight_pixels(window.canvas.render()) == 0
