"""The preset format (DESIGN §6) as data: every key, its kind, default, range and unit.

`preset.py` validates and fills a preset from these tables; the README's format
reference and `treedyn expand` follow them. A table is an ordered mapping from
key to `Field` (a leaf) or to another table (a nested mapping); the order here
is the order in which a saved preset writes its keys.

Kinds of leaf:

``float``, ``int``, ``bool``, ``str``
    Plain values (an int is accepted where a float is expected, never a bool).
``vec3``
    A list of three finite floats.
``float_or_vec3``
    A scalar, or a list of three finite floats (per limb axis).
``int_or_list``
    An int, or a list of ints (one per branching level).
``enum``
    A string among ``choices``.
``limbs``, ``initial_state``
    A list of mappings, each validated against `LIMB` or `INITIAL_STATE_ENTRY`.

Ranges: ``min``/``max`` bound every number of the value (each element of a
vector); ``min_open``/``max_open`` make the bound strict. ``nullable`` admits
``null`` (YAML ``~``/``null``), which means "derived" where the doc says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Field:
    """One leaf key of the preset format."""

    kind: str
    default: Any
    doc: str
    unit: str = ""
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    max_open: bool = False
    nullable: bool = False
    required: bool = False
    choices: tuple[str, ...] = ()
    nonzero: bool = False  # vectors: must not be the zero vector


REQUIRED = object()  # default of a key that has none

LIMB: dict[str, Field] = {
    "name": Field("str", REQUIRED, "unique name of the limb", required=True),
    "parent": Field("str", None, "name of the parent limb; null: the root, based at root_position",
                    nullable=True),
    "length": Field("float", 1.0, "length L_F", "m", min=0.0, min_open=True),
    "radius": Field("float", 0.05, "radius (drawing width, drag, default inertia)", "m",
                    min=0.0, min_open=True),
    "direction": Field("vec3", [0.0, 0.0, 1.0], "u_F, the limb's direction in its own axes "
                       "(normalised on load)", nonzero=True),
    "rest_rotation_deg": Field("vec3", [0.0, 0.0, 0.0], "rotation vector of the rest frame "
                               "relative to the parent's rest frame (root: to the inertial "
                               "frame): the tree's shape at rest", "deg"),
    "spring_rest_rotation_deg": Field("vec3", None, "rotation vector where the spring exerts no "
                                      "torque (same convention); null: = rest_rotation_deg, or "
                                      "computed when simulation.prestress is true", "deg",
                                      nullable=True),
    "attach": Field("float", 1.0, "fraction along the parent's axis where the base sits "
                    "(1 = tip)", min=0.0, max=1.0),
    "mass": Field("float", None, "mass; null: solid cylinder of material.density", "kg",
                  min=0.0, min_open=True, nullable=True),
    "inertia": Field("vec3", None, "principal moments about the centre of mass, limb axes; "
                     "null: solid cylinder about direction", "kg m²", min=0.0, min_open=True,
                     nullable=True),
    "com": Field("float", 0.5, "centre of mass at this fraction along the limb", min=0.0, max=1.0),
    "stiffness": Field("float_or_vec3", None, "joint stiffness: scalar (isotropic) or per limb "
                       "axis; null: from material", "N m/rad", min=0.0, nullable=True),
    "damping": Field("float_or_vec3", None, "joint damping: scalar (isotropic) or per limb "
                     "axis; null: from material.damping_ratio", "N m s/rad", min=0.0,
                     nullable=True),
    "leaf_area": Field("float", 0.0, "foliage area carried by the limb", "m²", min=0.0),
}

GENERATOR_TRUNK: dict[str, Field] = {
    "length": Field("float", 3.0, "trunk length", "m", min=0.0, min_open=True),
    "radius": Field("float", 0.12, "trunk radius at the ground", "m", min=0.0, min_open=True),
    "segments": Field("int", 4, "limbs in the trunk", min=1),
}

# Shape parameters beyond DESIGN §6's list are added here (and documented in the README).
GENERATOR: dict[str, Any] = {
    "seed": Field("int", 7, "random seed of the jitter (same seed, same tree)", min=0),
    "trunk": GENERATOR_TRUNK,
    "levels": Field("int", 3, "branching generations above the trunk", min=0),
    "children": Field("int_or_list", 3, "branches per branch end (int, or a list per level)",
                      min=1),
    "segments": Field("int_or_list", 2, "limbs per branch (int, or a list per level)", min=1),
    "branch_angle_deg": Field("float", 40.0, "angle between a branch and its parent's axis",
                              "deg", min=0.0, max=180.0),
    "azimuth_step_deg": Field("float", 137.5, "azimuth between successive branches "
                              "(phyllotaxis)", "deg"),
    "length_ratio": Field("float", 0.7, "branch length over parent branch length", min=0.0,
                          min_open=True, max=2.0),
    "radius_exponent": Field("float", 2.0, "da Vinci exponent e: r_parent^e = sum r_child^e",
                             min=0.5, max=4.0),
    "jitter": Field("float", 0.1, "relative random variation of lengths and angles", min=0.0,
                    max=0.5),
    "leaf_area": Field("float", 0.05, "foliage area per terminal limb", "m²", min=0.0),
    "whorls": Field("int", 0, "whorls of branches at the highest trunk joints below an excurrent "
                    "leader (conifer); 0: the trunk ends in a branching", min=0),
    "whorl_length_ratio": Field("float", 0.3, "whorl branch length over the trunk length above "
                                "the whorl (conical crown); only with whorls > 0", min=0.0,
                                min_open=True, max=2.0),
    "droop_deg": Field("float", 0.0, "bend of each branch limb toward the ground, never past "
                       "vertical (weeping); negative: toward the sky", "deg", min=-90.0,
                       max=90.0),
    "droop_level": Field("int", 1, "first branching level whose limbs droop", min=1),
    "max_limbs": Field("int", 250000, "refuse larger trees with a clear error", min=1),
}

MATERIAL: dict[str, Field] = {
    "density": Field("float", 700.0, "wood density", "kg/m³", min=0.0, min_open=True),
    "youngs_modulus": Field("float", 1.0e10, "Young's modulus E_Y", "Pa", min=0.0, min_open=True),
    "poisson_ratio": Field("float", 0.3, "Poisson's ratio ν (G = E_Y / (2(1 + ν)))", min=-1.0,
                           min_open=True, max=0.5),
    "damping_ratio": Field("float", 0.05, "ζ per joint axis: c_i = 2ζ·sqrt(k_i·J_ii)", min=0.0,
                           max=10.0),
    "modulus_of_rupture": Field("float", 4.0e7, "bending strength MOR of the green wood, for the "
                                "stem's breaking moment (π/32)·MOR·DBH³ in studies; default: "
                                "mid-range of ForestGALES' species values (34–65 MPa, e.g. "
                                "Norway spruce 36, Scots pine 46, oak 59; Hale et al. 2015)",
                                "Pa", min=0.0, min_open=True),
}

INITIAL_STATE_ENTRY: dict[str, Field] = {
    "limb": Field("str", REQUIRED, "name of the limb", required=True),
    "rotation_deg": Field("vec3", [0.0, 0.0, 0.0], "rotation relative to the (prestressed) rest "
                          "pose, limb axes", "deg"),
    "angular_velocity": Field("vec3", [0.0, 0.0, 0.0], "joint rate relative to the parent, limb "
                              "axes", "rad/s"),
}

SIMULATION: dict[str, Field] = {
    "model": Field("enum", "articulated", "articulated | seed", choices=("articulated", "seed")),
    "integrator": Field("enum", "implicit", "implicit | rk4 | dop853",
                        choices=("implicit", "rk4", "dop853")),
    "implicit_theta": Field("float", 0.6, "θ of the implicit θ-method", min=0.5, min_open=True,
                            max=1.0),
    "dt": Field("float", 1.0 / 120.0, "time step", "s", min=0.0, min_open=True, max=0.1),
    "gravity": Field("vec3", [0.0, 0.0, -9.81], "gravitational acceleration", "m/s²"),
    "prestress": Field("bool", True, "the rest pose is the static equilibrium under gravity"),
}

WIND: dict[str, Field] = {
    "speed": Field("float", 6.0, "mean speed U at reference_height", "m/s", min=0.0, max=100.0),
    "direction_deg": Field("float", 0.0, "azimuth the wind blows toward (0 = +x, 90 = +y)", "deg"),
    "reference_height": Field("float", 10.0, "height z_ref of the reference speed", "m", min=0.0,
                              min_open=True),
    "profile_exponent": Field("float", 0.14, "power-law exponent α of U(z)", min=0.0, max=1.0),
    "turbulence_intensity": Field("float", 0.2, "I = σ_u / U", min=0.0, max=1.0),
    "length_scale": Field("float", 20.0, "longitudinal integral length scale", "m", min=0.0,
                          min_open=True),
    "modes": Field("int", 64, "Fourier modes of the turbulent field", min=1, max=4096),
    "seed": Field("int", 1, "random seed of phases and directions", min=0),
    "air_density": Field("float", 1.225, "ρ", "kg/m³", min=0.0, min_open=True),
    "drag_coefficient": Field("float", 1.2, "cylinder cross-flow C_d", min=0.0),
    "leaf_drag_coefficient": Field("float", 0.5, "foliage C_dleaf", min=0.0),
    "vogel_exponent": Field("float", 0.0, "β, leaf reconfiguration", min=-1.0, max=0.0),
}

TUNING: dict[str, Field] = {
    "stiffness_scale": Field("float", 1.0, "multiplies every stiffness", min=0.0, min_open=True,
                             max=1000.0),
    "damping_scale": Field("float", 1.0, "multiplies every damping", min=0.0, max=1000.0),
}

# tree: exactly one of "limbs" / "generator".
TREE: dict[str, Any] = {
    "limbs": Field("limbs", None, "explicit limb list", nullable=True),
    "generator": GENERATOR,
}

PRESET: dict[str, Any] = {
    "version": Field("int", FORMAT_VERSION, "format version (only 1)", min=1, max=1),
    "name": Field("str", "Untitled tree", "shown in the app"),
    "description": Field("str", "", "species, dimensions and where the numbers come from"),
    "tree": TREE,
    "material": MATERIAL,
    "root_position": Field("vec3", [0.0, 0.0, 0.0], "base of the root limb", "m"),
    "initial_state": Field("initial_state", [], "perturbations of the equilibrium"),
    "simulation": SIMULATION,
    "wind": WIND,
    "tuning": TUNING,
}
