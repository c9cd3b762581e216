"""The limbs a mode moves, drawn over the tree while its row in the modes panel is hovered.

A mode's name ("branch b2 sway y") says little until the limbs are seen: `moving_limbs` picks
the limbs whose tip moves at least `MOVING_FRACTION` of the mode's largest tip displacement
(the linearised shape, `ModeResult.tip_displacements`), and `ModeHighlight` draws them as
bright segments on top of the tree (no depth test: a branch inside the crown stays
visible), following the pose the window draws.
"""

from __future__ import annotations

import numpy as np
from vispy import scene

# A limb "moves" in a mode when its tip moves at least this fraction of the mode's largest
# tip displacement: below ~1/3 the trunk of a branch mode (coupled by a few per cent) and the
# branches a trunk mode only carries along would light up too.
MOVING_FRACTION = 0.3
HIGHLIGHT = (1.0, 0.15, 0.75, 1.0)  # magenta: neither bark, leaf, sky nor the pull spring
WIDTH = 4  # px


def moving_limbs(tree, result, index: int) -> np.ndarray:
    """(N,) bool, breadth-first: the limbs of `tree` that mode `index` of `result` (a
    `ModeResult`, preset order) moves (tip displacement ≥ `MOVING_FRACTION` of its largest)."""
    tips = np.linalg.norm(tree.from_preset_order(result.tip_displacements[index]), axis=-1)
    largest = float(tips.max()) if tips.size else 0.0
    if largest <= 0.0:
        return np.zeros(tree.n, dtype=bool)
    return tips >= MOVING_FRACTION * largest


class ModeHighlight:
    """Segments over the limbs `mask` selects, in the scene `parent` (the canvas's view)."""

    def __init__(self, parent):
        self.visual = scene.visuals.Line(connect="segments", method="gl", color=HIGHLIGHT,
                                         width=WIDTH, parent=parent)
        self.visual.set_gl_state("translucent", depth_test=False)
        self.visual.order = 10  # after the tree
        self.visual.visible = False
        self.mask: np.ndarray | None = None

    def show(self, mask: np.ndarray | None, base: np.ndarray | None = None,
             tip: np.ndarray | None = None) -> None:
        """Highlight the limbs `mask` selects ((N,) bool; None or none selected: hide), posed
        base → tip ((N, 3) m, inertial)."""
        self.mask = mask if mask is not None and mask.any() else None
        self.visual.visible = self.mask is not None
        if self.mask is not None and base is not None:
            self.follow(base, tip)

    def follow(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Move the highlighted segments to the tree's pose."""
        if self.mask is None:
            return
        segments = np.empty((2 * int(self.mask.sum()), 3), dtype=np.float32)
        segments[0::2], segments[1::2] = base[self.mask], tip[self.mask]
        self.visual.set_data(pos=segments)

    @property
    def segments(self) -> np.ndarray | None:
        """(2M, 3) the segments drawn, or None when hidden (tests read it)."""
        return self.visual.pos if self.visual.visible else None
