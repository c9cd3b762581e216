"""Root anchorage: the rotational stiffness of the root–soil plate (the root joint).

Winching tests to failure find the critical turning moment at the stem base proportional to
the stem's fresh mass, M_crit = C·m_stem, with C a species (and soil) constant in N·m/kg
(Nicoll et al. 2006, Can. J. For. Res. 36; Byrne 2005, UBC thesis; Peltola et al. 2000, For.
Ecol. Manage. 135). Non-destructive pulling tests stay below 0.25° of stem-base inclination,
on the initial, nearly linear part of the tipping curve; the generalised tipping curve used
by those tests (Wessolly & Erb 1998, Handbuch der Baumstatik; Brudi & van Wassenaer 2002)
reaches 0.25° at about 40 % of M_crit. The root plate's initial rotational stiffness is then

    k_root = 0.4·M_crit / 0.25° = C·m_stem / θ_e,   θ_e = 0.25°/0.4 = 0.625°.

Neild & Wood (1999, Tree Physiology 19) separated stem and root-plate flexibility in
winching tests of Sitka spruce and found the root plate gives a substantial, size-dependent
share of a tree's compliance; this relation gives that share a size dependence through
m_stem, which grows as DBH²·H.
"""

from __future__ import annotations

import math

# Stem-base rotation at which the linear initial slope of the tipping curve reaches M_crit.
ELASTIC_ROTATION_RAD = math.radians(0.25 / 0.4)


def critical_turning_moment(moment_per_stem_mass: float, stem_mass: float) -> float:
    """M_crit in N·m from C (N·m/kg) and the stem's fresh mass (kg)."""
    return moment_per_stem_mass * stem_mass


def root_stiffness(moment_per_stem_mass: float, stem_mass: float) -> float:
    """Rotational stiffness of the root plate, N·m/rad: M_crit / θ_e (module docstring)."""
    return critical_turning_moment(moment_per_stem_mass, stem_mass) / ELASTIC_ROTATION_RAD
