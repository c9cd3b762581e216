"""The sway frequency f0 a stem-mounted sensor reads (`treedyn modes`: ``sway_frequency_hz``).

Field studies (Moore & Maguire 2004, Trees 18; Jackson et al. 2019, J. R. Soc.
Interface 16) report f0 as the dominant spectral peak of the stem's motion, from an
inclinometer or accelerometer on the stem. Here f0 is the frequency of the lowest mode that
`modes` describes as a trunk or crown sway: a bending (not twisting) mode in which the stem's
joints hold more than a third of the mode's spring strain energy (`modes.TRUNK_SHARE`), or
whose kinetic energy is mostly in the crown as a whole, carried by the stem; a single branch
swaying alone ("branch … sway") barely moves a stem sensor. None when the modes computed hold
no such mode (ask for more modes).
"""

from __future__ import annotations

STEM_SWAYS = ("trunk sway", "crown sway")


def sway_frequency_hz(result) -> float | None:
    """f0 in Hz of a `modes.ModeResult` (module docstring), or None."""
    for frequency, description in zip(result.frequencies_hz, result.descriptions):
        if description.startswith(STEM_SWAYS):
            return float(frequency)
    return None


def sway_line(result) -> str:
    """The text line of `treedyn modes` that states f0 and its definition."""
    f0 = sway_frequency_hz(result)
    if f0 is None:
        return ("sway frequency: no trunk or crown sway among these modes (ask for more with "
                "--count)")
    return (f"sway frequency f0 = {f0:.4g} Hz (the lowest trunk or crown sway, what a "
            f"stem-mounted sensor reads)")
