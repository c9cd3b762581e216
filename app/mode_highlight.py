"""The limbs a mode moves, drawn over the tree while its row in the modes panel is hovered.

A mode's name ("branch b2 sway y") says little until the limbs are seen, and names only where
most of its kinetic energy is: the modes of a tree are coupled (in young_oak's "branch b2 sway
y" limbs outside b2 move up to 0.89 of the largest tip displacement). `moving_limbs` gives each
limb its tip displacement in the mode as a fraction of the largest (the linearised shape,
`ModeResult.tip_displacements`); `ModeHighlight` draws the limbs that move at least
`MOVING_FRACTION` of it as bright segments on top of the tree (no depth test: a branch inside
the crown stays visible), more opaque the more they move, following the pose the window draws.
"""

from __future__ import annotations

import numpy as np
from vispy import scene

# Limbs moving less than this fraction of the mode's largest tip displacement are not drawn:
# the trunk under a branch mode, the far side of the crown.
MOVING_FRACTION = 0.3
HIGHLIGHT = (1.0, 0.15, 0.75)  # magenta: neither bark, leaf, sky nor the pull spring
WIDTH = 4  # px


def moving_limbs(tree, result, index: int) -> np.ndarray:
    """(N,) in [0, 1], breadth-first: how much each limb of `tree` moves in mode `index` of
    `result` (a `ModeResult`, preset order), its tip displacement over the mode's largest."""
    tips = np.linalg.norm(tree.from_preset_order(result.tip_displacements[index]), axis=-1)
    largest = float(tips.max()) if tips.size else 0.0
    return tips / largest if largest > 0.0 else np.zeros(tree.n)


class ModeHighlight:
    """Segments over the limbs that move, in the scene `parent` (the canvas's view)."""

    def __init__(self, parent):
        self.visual = scene.visuals.Line(connect="segments", method="gl", width=WIDTH,
                                         parent=parent)
        self.visual.set_gl_state("translucent", depth_test=False)
        self.visual.order = 10  # after the tree
        self.visual.visible = False
        self.mask: np.ndarray | None = None

    def show(self, motion: np.ndarray | None, base: np.ndarray | None = None,
             tip: np.ndarray | None = None) -> None:
        """Highlight the limbs by `motion` ((N,) in [0, 1], `moving_limbs`; None: hide), posed
        base → tip ((N, 3) m, inertial)."""
        self.mask = None
        if motion is not None and (motion >= MOVING_FRACTION).any():
            self.mask = motion >= MOVING_FRACTION
            colour = np.empty((2 * int(self.mask.sum()), 4), dtype=np.float32)
            colour[:, :3] = HIGHLIGHT
            colour[:, 3] = np.repeat(motion[self.mask], 2)
            self._colour = colour
        self.visual.visible = self.mask is not None
        if self.mask is not None and base is not None:
            self.follow(base, tip)

    def follow(self, base: np.ndarray, tip: np.ndarray) -> None:
        """Move the highlighted segments to the tree's pose."""
        if self.mask is None:
            return
        segments = np.empty((2 * int(self.mask.sum()), 3), dtype=np.float32)
        segments[0::2], segments[1::2] = base[self.mask], tip[self.mask]
        self.visual.set_data(pos=segments, color=self._colour)

    @property
    def segments(self) -> np.ndarray | None:
        """(2M, 3) the segments drawn, or None when hidden (tests read it)."""
        return self.visual.pos if self.visual.visible else None
