"""The preset format (docs/design.md §6) as data: every key, its kind, default, range and unit.

`preset.py` validates and fills a preset from these tables; docs/design.md §6.2's
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
``int_or_list``, ``float_or_list``
    An int (a float), or a list of them (one per branching level).
``enum``
    A string among ``choices``.
``colour``
    A string ``#rrggbb`` (sRGB, hexadecimal).
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

# Upper bounds of physical inputs: generous beyond any tree (the tallest trees are ~115 m, the
# widest trunks ~6 m in radius), and far enough below the float range that the derived
# quantities (mass ∝ ρ r² L, inertia ∝ m L², stiffness ∝ E r⁴ / L, energies ∝ m g L) stay
# finite: with these, every derived quantity is below ~1e40.
MAX_LENGTH = 1000.0          # m, a limb, a trunk, a height
MAX_RADIUS = 100.0           # m
MAX_POSITION = 1e6           # m, the root's coordinates
MAX_MASS = 1e12              # kg
MAX_INERTIA = 1e18           # kg m²
MAX_STIFFNESS = 1e20         # N m/rad (and N m s/rad for damping)
MAX_LEAF_AREA = 1e4          # m² per limb
MAX_DENSITY = 1e5            # kg/m³ (osmium: 2.26e4)
MAX_YOUNGS_MODULUS = 1e13    # Pa (diamond: 1.2e12)
MAX_GRAVITY = 1000.0         # m/s² per component
MAX_WIND_SPEED = 60.0        # m/s
MIN_DT = 1e-9                # s
DIRECTION_LIMIT = 1e100      # per component; the length must also be ≥ 1e-100 (see preset.py)
MAX_ANGLE_DEG = 360.0        # deg, a rotation vector's component, an azimuth: a whole turn
# An initial perturbation: a joint bent by at most a quarter turn per axis (the rotation's
# angle stays below 156°, short of the half turn where the spring's potential wraps), turning
# at most 100 rad/s (the fastest joints of every shipped preset in a 60 m/s storm reach
# 136 rad/s over 10 s, docs/hardening.md).
MAX_INITIAL_ROTATION_DEG = 90.0
MAX_INITIAL_RATE = 100.0     # rad/s
# The mean wind the profile gives at the highest point a tree can reach: the format's
# 60 m/s cap holds at wind.reference_height, and a power law may give more above it (the
# giant's crown, 36 m up, sees 72 m/s at the cap); at most 100 m/s, below the highest
# gust measured at the surface (113 m/s, Barrow Island 1996).
MAX_PROFILE_SPEED = 100.0    # m/s
MAX_WORKERS = 256            # local worker processes of a study

LIMB: dict[str, Field] = {
    "name": Field("str", REQUIRED, "unique name of the limb", required=True),
    "parent": Field("str", None, "name of the parent limb; null: the root, based at root_position",
                    nullable=True),
    "length": Field("float", 1.0, "length L_F", "m", min=0.0, min_open=True, max=MAX_LENGTH),
    "radius": Field("float", 0.05, "radius (drawing width, drag, default inertia)", "m",
                    min=0.0, min_open=True, max=MAX_RADIUS),
    "direction": Field("vec3", [0.0, 0.0, 1.0], "u_F, the limb's direction in its own axes "
                       "(normalised on load; its length within 1e-100 … 1e100)",
                       min=-DIRECTION_LIMIT, max=DIRECTION_LIMIT, nonzero=True),
    "rest_rotation_deg": Field("vec3", [0.0, 0.0, 0.0], "rotation vector of the rest frame "
                               "relative to the parent's rest frame (root: to the inertial "
                               "frame): the tree's shape at rest", "deg", min=-MAX_ANGLE_DEG,
                               max=MAX_ANGLE_DEG),
    "spring_rest_rotation_deg": Field("vec3", None, "rotation vector where the spring exerts no "
                                      "torque (same convention); null: = rest_rotation_deg, or "
                                      "computed when simulation.prestress is true", "deg",
                                      min=-MAX_ANGLE_DEG, max=MAX_ANGLE_DEG, nullable=True),
    "attach": Field("float", 1.0, "fraction along the parent's axis where the base sits "
                    "(1 = tip)", min=0.0, max=1.0),
    "mass": Field("float", None, "mass; null: solid cylinder of material.density", "kg",
                  min=0.0, min_open=True, max=MAX_MASS, nullable=True),
    "inertia": Field("vec3", None, "principal moments about the centre of mass, limb axes; "
                     "null: solid cylinder about direction", "kg m²", min=0.0, min_open=True,
                     max=MAX_INERTIA, nullable=True),
    "com": Field("float", 0.5, "centre of mass at this fraction along the limb", min=0.0, max=1.0),
    "stiffness": Field("float_or_vec3", None, "joint stiffness: scalar (isotropic) or per limb "
                       "axis; null: from material", "N m/rad", min=0.0, max=MAX_STIFFNESS, nullable=True),
    "damping": Field("float_or_vec3", None, "joint damping: scalar (isotropic) or per limb "
                     "axis; null: from material.damping_ratio", "N m s/rad", min=0.0,
                     max=MAX_STIFFNESS, nullable=True),
    "leaf_area": Field("float", 0.0, "foliage area carried by the limb", "m²", min=0.0,
                       max=MAX_LEAF_AREA),
}

GENERATOR_TRUNK: dict[str, Field] = {
    "length": Field("float", 3.0, "trunk length", "m", min=0.0, min_open=True, max=MAX_LENGTH),
    "radius": Field("float", 0.12, "trunk radius at the ground", "m", min=0.0, min_open=True,
                    max=MAX_RADIUS),
    "segments": Field("int", 4, "limbs in the trunk", min=1),
}

# Every key is listed in docs/design.md §6.2 (scripts/preset_reference.py writes it).
GENERATOR: dict[str, Any] = {
    "seed": Field("int", 7, "random seed of the jitter (same seed, same tree)", min=0),
    "trunk": GENERATOR_TRUNK,
    "levels": Field("int", 3, "branching generations above the trunk (at most 64: with "
                    "length_ratio ≥ 0.01 the last limbs stay longer than 1e-128 m)", min=0,
                    max=64),
    "children": Field("int_or_list", 3, "branches per branch end (int, or a list per level)",
                      min=1),
    "segments": Field("int_or_list", 2, "limbs per branch (int, or a list per level)", min=1),
    "branch_angle_deg": Field("float", 40.0, "angle between a branch and its parent's axis",
                              "deg", min=0.0, max=180.0),
    "azimuth_step_deg": Field("float", 137.5, "azimuth between successive branches "
                              "(phyllotaxis)", "deg", min=-MAX_ANGLE_DEG, max=MAX_ANGLE_DEG),
    "length_ratio": Field("float_or_list", 0.7, "branch length over parent branch length "
                          "(a number, or a list per level)", min=0.01, max=2.0),
    "radius_exponent": Field("float", 2.0, "da Vinci exponent e: r_parent^e = sum r_child^e",
                             min=0.5, max=4.0),
    "jitter": Field("float", 0.1, "relative random variation of lengths and angles", min=0.0,
                    max=0.5),
    "leaf_area": Field("float", 0.05, "foliage area per terminal limb", "m²", min=0.0,
                       max=MAX_LEAF_AREA),
    "leaf_limbs": Field("int", 1, "limbs that share each terminal limb's leaf_area equally: it "
                        "and its ancestors up its unbranched chain (a willow's hanging shoot "
                        "leafy along its length)", min=1),
    "whorls": Field("int", 0, "whorls of branches at the highest trunk joints (every "
                    "whorl_spacing-th) below an excurrent leader (conifer); 0: the trunk ends "
                    "in a branching", min=0),
    "whorl_spacing": Field("int", 1, "trunk limbs from one whorl to the next, and from the "
                           "highest whorl to the top", min=1),
    "whorl_length_ratio": Field("float", 0.3, "whorl branch length over the trunk length above "
                                "the whorl (conical crown); only with whorls > 0", min=0.0,
                                min_open=True, max=2.0),
    "droop_deg": Field("float_or_list", 0.0, "bend of each branch limb toward the ground, never "
                       "past vertical (weeping); negative: toward the sky (a number, or a list "
                       "per level)", "deg", min=-90.0, max=90.0),
    "droop_level": Field("int", 1, "first branching level whose limbs droop", min=1),
    "foliage_colour": Field("colour", None, "colour of the foliage as drawn, #rrggbb (sRGB); "
                            "null: the species table's, else the foliage form's", nullable=True),
    "bark_colour": Field("colour", None, "colour of the bark of the thickest limbs as drawn, "
                         "#rrggbb (sRGB); null: the species table's, else brown", nullable=True),
    "max_limbs": Field("int", 250000, "refuse larger trees with a clear error (at most "
                       "250,000: a tree's run needs ~1 kB per limb and frame)", min=1,
                       max=250000),
    # A tree by species and size (treedyn_core/model/species.py fills the keys not given from the
    # species table assets/species.yaml; docs/validation.md).
    "species": Field("str", None, "species key of assets/species.yaml (Latin binomial in lower "
                     "case, e.g. picea_abies); null: no species", nullable=True),
    "height": Field("float", None, "tree height H (with species)", "m", min=0.0, min_open=True,
                    max=200.0, nullable=True),
    "dbh": Field("float", None, "stem diameter at breast height, 1.3 m (with species)", "m",
                 min=0.0, min_open=True, max=20.0, nullable=True),
    "stand": Field("enum", "forest", "forest | open: crown ratio and width (with species)",
                   choices=("forest", "open")),
    "leafless": Field("bool", False, "no foliage: no leaf area, leaf mass or leaf drag"),
    "stem_form": Field("float", None, "stem taper exponent q: trunk radius ∝ (H − z)^q, equal to "
                       "dbh/2 at 1.3 m; null: pipe-model trunk", min=0.0, max=2.0, nullable=True),
    "juvenile_radius": Field("float", None, "radius of the stem's juvenile-wood core, a "
                             "cylinder along the whole stem (with stem_form); null: none", "m",
                             min=0.0, max=20.0, nullable=True),
    "juvenile_modulus_ratio": Field("float", 1.0, "Young's modulus of the juvenile core over "
                                    "material.youngs_modulus (with juvenile_radius; at least "
                                    "0.01: no wood's core is 100 times softer than its outer "
                                    "wood)", min=0.01, max=1.0),
    "fork_height": Field("float", None, "height at which the stem divides into fork_leaders "
                         "leaders of equal share of its cross-section (with stem_form): the stem "
                         "joints above it have 1/fork_leaders of the single stem's stiffness; "
                         "null: no fork", "m", min=0.0, min_open=True, max=MAX_LENGTH,
                         nullable=True),
    "fork_leaders": Field("int", 1, "leaders above fork_height (with fork_height)", min=1,
                          max=64),
    "leaf_mass_per_area": Field("float", 0.0, "fresh foliage mass per leaf area, added to the "
                                "limbs carrying leaves", "kg/m²", min=0.0, max=10.0),
    "branch_mass": Field("float", None, "total branch wood mass, shared among branch limbs by "
                         "volume; null: from material.density", "kg", min=0.0, min_open=True,
                         max=1e7, nullable=True),
    "root_stiffness": Field("float", None, "rotational stiffness of the root-soil plate (the "
                            "root joint); null: from the material like any joint", "N m/rad",
                            min=0.0, min_open=True, max=1e12, nullable=True),
}

MATERIAL: dict[str, Field] = {
    "density": Field("float", 700.0, "wood density", "kg/m³", min=0.0, min_open=True,
                     max=MAX_DENSITY),
    "youngs_modulus": Field("float", 1.0e10, "Young's modulus E_Y", "Pa", min=0.0, min_open=True,
                            max=MAX_YOUNGS_MODULUS),
    "poisson_ratio": Field("float", 0.3, "Poisson's ratio ν (G = E_Y / (2(1 + ν))); wood's "
                           "are 0.02–0.5 (Wood Handbook 2010, table 5-2), never "
                           "negative: G ≤ E_Y / 2", min=0.0, max=0.5),
    "damping_ratio": Field("float", 0.05, "ζ per joint axis: c_i = 2ζ·sqrt(k_i·J_ii)", min=0.0,
                           max=10.0),
    "damping_model": Field("enum", "joint", "joint: each joint gets damping_ratio with its "
                           "subtree rigid; stiffness_proportional: the lowest sway mode gets it "
                           "(docs/validation.md)", choices=("joint", "stiffness_proportional")),
    "modulus_of_rupture": Field("float", 4.0e7, "bending strength MOR of the green wood, for the "
                                "stem's breaking moment (π/32)·MOR·DBH³ in studies; default: "
                                "mid-range of ForestGALES' species values (34–65 MPa, e.g. "
                                "Norway spruce 36, Scots pine 46, oak 59; Hale et al. 2015)",
                                "Pa", min=0.0, min_open=True, max=1e9),
}

INITIAL_STATE_ENTRY: dict[str, Field] = {
    "limb": Field("str", REQUIRED, "name of the limb", required=True),
    "rotation_deg": Field("vec3", [0.0, 0.0, 0.0], "rotation relative to the (prestressed) rest "
                          "pose, limb axes (at most a quarter turn per axis)", "deg",
                          min=-MAX_INITIAL_ROTATION_DEG, max=MAX_INITIAL_ROTATION_DEG),
    "angular_velocity": Field("vec3", [0.0, 0.0, 0.0], "joint rate relative to the parent, limb "
                              "axes", "rad/s", min=-MAX_INITIAL_RATE, max=MAX_INITIAL_RATE),
}

SIMULATION: dict[str, Field] = {
    "model": Field("enum", "articulated", "articulated | seed", choices=("articulated", "seed")),
    "integrator": Field("enum", "implicit", "implicit | galpha | rk4 | dop853",
                        choices=("implicit", "galpha", "rk4", "dop853")),
    "implicit_theta": Field("float", 0.6, "θ of the implicit θ-method", min=0.5, min_open=True,
                            max=1.0),
    "rho_inf": Field("float", 0.5, "spectral radius at infinity ρ∞ of generalized-α (1: no "
                     "numerical damping, 0: the most on the highest frequencies)", min=0.0,
                     max=1.0),
    "dt": Field("float", 1.0 / 120.0, "time step (at least 1e-9 s: a second in at most 1e9 "
                "steps)", "s", min=MIN_DT, max=0.1),
    "gravity": Field("vec3", [0.0, 0.0, -9.81], "gravitational acceleration", "m/s²",
                     min=-MAX_GRAVITY, max=MAX_GRAVITY),
    "prestress": Field("bool", True, "the rest pose is the static equilibrium under gravity"),
    "start": Field("enum", None, "rest | mean_wind: a run starts from the rest pose, or from the "
                   "static equilibrium under the mean wind's drag; null: mean_wind for a "
                   "prestressed tree without initial_state, else rest",
                   choices=("rest", "mean_wind"), nullable=True),
}

# A forest stand around the tree (treedyn_core/model/canopy.py; docs/design.md §5.1).
CANOPY: dict[str, Field] = {
    "height": Field("float", None, "canopy height h of the stand the tree stands in: log "
                    "profile above it, exponential decay below, the canopy's turbulence (the "
                    "tree at most 3 h tall); null: open ground, the power law", "m", min=1.0,
                    max=100.0, nullable=True),
    "spacing": Field("float", 3.0, "mean spacing between the stand's stems (with height)", "m",
                     min=0.0, min_open=True, max=MAX_LENGTH),
}

WIND: dict[str, Any] = {
    "speed": Field("float", 6.0, "mean speed U at reference_height (at most 60 m/s: trees break "
                   "near 40 m/s; the implicit step is shown stable up to 60 m/s on every "
                   "shipped preset at turbulence 1.0; see docs/hardening.md)", "m/s",
                   min=0.0,
                   max=MAX_WIND_SPEED),
    "direction_deg": Field("float", 0.0, "azimuth the wind blows toward (0 = +x, 90 = +y)", "deg"),
    "reference_height": Field("float", 10.0, "height z_ref of the reference speed", "m", min=0.0,
                              min_open=True, max=MAX_LENGTH),
    "profile_exponent": Field("float", 0.14, "power-law exponent α of U(z)", min=0.0, max=1.0),
    "turbulence_intensity": Field("float", 0.2, "I = σ_u / U (in a stand: σ_u / U_h at the "
                                  "canopy top)", min=0.0, max=1.0),
    "length_scale": Field("float", 20.0, "longitudinal integral length scale (measured near "
                          "trees: metres to hundreds of metres)", "m", min=0.1, max=1e5),
    "modes": Field("int", 64, "Fourier modes of the turbulent field", min=1, max=4096),
    "seed": Field("int", 1, "random seed of phases and directions", min=0),
    "air_density": Field("float", 1.225, "ρ", "kg/m³", min=0.0, min_open=True, max=MAX_DENSITY),
    "drag_coefficient": Field("float", 1.2, "cylinder cross-flow C_d", min=0.0, max=100.0),
    "leaf_drag_coefficient": Field("float", 0.5, "foliage C_dleaf", min=0.0, max=100.0),
    "vogel_exponent": Field("float", 0.0, "β, leaf reconfiguration", min=-1.0, max=0.0),
    "canopy": CANOPY,
}

TUNING: dict[str, Field] = {
    "stiffness_scale": Field("float", 1.0, "multiplies every stiffness", min=0.0, min_open=True,
                             max=1000.0),
    "damping_scale": Field("float", 1.0, "multiplies every damping", min=0.0, max=1000.0),
}

# A scanned tree: a QSM's cylinders made limbs (treedyn_core/model/scan.py, docs/scans.md).
SCAN: dict[str, Field] = {
    "file": Field("str", REQUIRED, "the QSM file (.mat v5/v7/v7.3, .txt, .csv; lengths in m), "
                  "relative to the preset's folder", required=True),
    "model": Field("int", 0, "which model of a struct array of QSMs (0: the first)", min=0),
    "species": Field("str", None, "species key of assets/species.yaml: the wood, the root "
                     "plate and, unless leafless, the foliage; null: the material keys as given, "
                     "the stem's base clamped, leaves only from leaf_area", nullable=True),
    "leafless": Field("bool", False, "no foliage: no leaf area, leaf mass or leaf drag"),
    "min_radius": Field("float", 0.01, "cylinders thinner than this, and those they carry, are "
                        "no limbs: their wood (and foliage) is a point mass on the limb carrying "
                        "them", "m", min=0.0, max=MAX_RADIUS),
    "twig_radius": Field("float", None, "mean radius of the tree's twigs: cylinders "
                         "thinner than reliable_radius taper toward it along their branches "
                         "(laser scans inflate thin branches); null: the species' (none known: "
                         "radii as read); 0: radii as read", "m", min=0.0, max=0.01,
                         nullable=True),
    "reliable_radius": Field("float", 0.025, "cylinders at least this thick keep their radius as "
                             "read (QSMs' excess wood lies in branches under 5 cm in diameter)",
                             "m", min=0.0, max=MAX_RADIUS),
    "limb_length": Field("float", 0.5, "consecutive cylinders of a branch are merged (longer ones "
                         "cut) into limbs of about this length", "m", min=0.001, max=MAX_LENGTH),
    "max_limbs": Field("int", 20000, "refuse a scan that makes more limbs", min=1, max=250000),
    "leaf_area": Field("float", None, "one-sided leaf area of the whole tree, shared among the "
                       "tips by their cross-sections (pipe model); null: the species' foliage "
                       "fraction over its leaf mass per area (0 without species)", "m²", min=0.0,
                       max=1e6, nullable=True),
    "leaf_mass_per_area": Field("float", None, "fresh foliage mass per leaf area; null: the "
                                "species' (0 without species)", "kg/m²", min=0.0, max=10.0,
                                nullable=True),
    "root_stiffness": Field("float", None, "rotational stiffness of the root plate, in series "
                            "with the stem's lowest half limb; null: the species' anchorage "
                            "(without species: none, the base clamped)", "N m/rad", min=0.0,
                            min_open=True, max=1e12, nullable=True),
}

# tree: exactly one of "limbs" / "generator" / "scan".
TREE: dict[str, Any] = {
    "limbs": Field("limbs", None, "explicit limb list", nullable=True),
    "generator": GENERATOR,
    "scan": SCAN,
}

PRESET: dict[str, Any] = {
    "version": Field("int", FORMAT_VERSION, "format version (only 1)", min=1, max=1),
    "name": Field("str", "Untitled tree", "shown in the app"),
    "description": Field("str", "", "species, dimensions and where the numbers come from"),
    "tree": TREE,
    "material": MATERIAL,
    "root_position": Field("vec3", [0.0, 0.0, 0.0], "base of the root limb", "m",
                           min=-MAX_POSITION, max=MAX_POSITION),
    "initial_state": Field("initial_state", [], "perturbations of the equilibrium"),
    "simulation": SIMULATION,
    "wind": WIND,
    "tuning": TUNING,
}
