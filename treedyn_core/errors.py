"""Errors a user can cause. The command line prints them as one line and exits 2 (3 for a
diverged simulation)."""


class TreedynError(Exception):
    """A problem in the user's input or settings, worded for the user."""


class PresetError(TreedynError):
    """An invalid preset: the message names the file, the line where known, and the key path."""


class SimulationDiverged(TreedynError):
    """The state became non-finite or left the physical bounds of `divergence`; the message
    names the limb, the simulated time and the likely cause."""
