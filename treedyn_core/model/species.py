"""Trees by species and size: `tree.generator.species`, `height`, `dbh`, `stand`.

`apply` runs before a preset is validated. From the species' entry of `assets/species.yaml`
and the tree's height H (m) and stem diameter at breast height DBH (m) it derives every
generator, material and wind key the preset does not give itself (a key given in the preset
always wins):

- Stem: ``trunk.length = H`` in limbs of about 0.625 m (conifers 16–48, broadleaves 16–48:
  `TIER_SPACING`, `LIMBS_PER_TIER`); the stem tapers as
  r(z) = r₀·((H − z)/H)^q (``stem_form`` q), q = (1/f − 1)/2 from the species' breast-height
  form factor f (a paraboloid, f = 1/2, has q = 1/2; a cone, f = 1/3, q = 1), with r₀ such
  that the diameter at 1.3 m is DBH.
- Crown: its length is the species' crown ratio (``stand: forest`` or ``open``) times H, and
  it holds one tier (conifers: a whorl) of branches every 0.625 m (conifers) or 1.25 m
  (broadleaves) within it, the nearest whole number (``whorls``, ``whorl_spacing``); the branch
  length puts the crown's width at the species' width-to-height ratio times H.
- Mass: branch wood (``branch_mass``) and foliage are set from the species' above-ground
  biomass fractions (stem : branches : foliage, dry mass, each part taken to fresh mass with
  its own water: `fresh_fractions`) relative to the stem's own mass, which the taper and the
  green wood density give; foliage mass = leaf area × ``leaf_mass_per_area``, so the
  leaf area per shoot end follows from the foliage mass. Where the table gives biomass
  functions of the tree's size (`biomass_fractions`), the fractions are those of a tree of
  this DBH and height: small trees carry relatively more crown than large ones.
- Juvenile core: where the table gives one (``wood.juvenile``), a core of the given fraction
  of the breast-height radius with the given modulus ratio (``juvenile_radius``,
  ``juvenile_modulus_ratio``), in the stem joints' stiffness (`generator.stem_joint_stiffness`).
- Fork: where the table gives one for the stand (``fork``), the stem divides at the given
  height into the given number of leaders (``fork_height``, ``fork_leaders``): the stem joints
  above it have the leaders' stiffness (`generator.stem_joint_stiffness`).
- Root: ``root_stiffness`` from the critical turning moment per stem mass (`anchorage`).
- Wood: density, Young's modulus, Poisson's ratio, modulus of rupture, structural damping
  ratio; wind: the foliage's drag coefficient and Vogel exponent, the drag coefficient times
  the crown's `sheltering` where the table gives its extinction κ (the conifers, the oaks,
  birch and beech; their crowns' drag then follows their species' wind-tunnel law,
  docs/validation.md); look: the foliage's and
  the bark's colours.
- Stand: ``stand: forest`` puts the tree in a stand of its own height (``wind.canopy.height
  = H``, `canopy`) with the wind speed given at the canopy top (``wind.reference_height =
  H``) and the turbulence measured there (``turbulence_intensity`` 0.64, ``length_scale``
  H); ``stand: open`` leaves the open ground's power law.

The species table gives the source of every number.
"""

from __future__ import annotations

import copy
import functools
import math
from importlib import resources
from typing import Callable, NoReturn

import yaml

from . import anchorage, canopy
from .generator import stem_radii

BREAST_HEIGHT = 1.3  # m
# Tiers of branches (a conifer's whorls, a broadleaf's scaffold branches): one per this length
# of the crown, the grid of tier positions between these counts over the stem; and trunk limbs
# per tier spacing. The crown's length is a whole number of tier spacings. A conifer's whorls
# are light and many: at 0.625 m its sway frequency changes by at most 6 % when they are halved
# again (at 1.25 m with the floor of 8, a 10 m spruce's crown was half the stem, not 45 %, and
# it swayed 13 % faster). A broadleaf's tier holds scaffold branches: more tiers would make more
# and thinner ones, another tree, so its tiers stay 1.25 m apart (the architecture the sway
# frequencies were calibrated with) and its stem is cut into limbs of half that
# (docs/validation.md, Discretization).
TIER_SPACING = {"conifer": 0.625, "broadleaf": 1.25}  # m
TIER_GRID = {"conifer": (16, 48), "broadleaf": (8, 24)}
LIMBS_PER_TIER = {"conifer": 1, "broadleaf": 2}
# Limbs per branch at levels 1 and 2; level-2 branches per level-1 branch end; level-2 length
# over level-1 length. The sway of the stem is insensitive to these (the crown's mass and
# drag are set by the biomass fractions and the leaf area, not by the limb count).
SEGMENTS = {"conifer": [3, 1], "broadleaf": [3, 2]}
SUB_BRANCHES = 3
LENGTH_RATIO = {"conifer": 0.4, "broadleaf": 0.55}

Fail = Callable[[str, str], NoReturn]
_KEY = "tree.generator"


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """The species table (`assets/species.yaml`) as read: species key → entry, and ``limits``."""
    # The installed package treedyn_assets (the folder assets/ of the clone).
    with (resources.files("treedyn_assets") / "species.yaml").open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def names() -> list[str]:
    """The species keys, in the table's order."""
    return [key for key in table() if key != "limits"]


def entry(name: str) -> dict:
    """The table entry of species `name` (KeyError if unknown)."""
    if name == "limits":
        raise KeyError(name)
    return table()[name]


def taper_exponent(form_factor: float) -> float:
    """q of r ∝ (H − z)^q whose solid has the breast-height form factor f = V/(A·H), the
    basal area taken at the ground: V = A·H/(2q + 1), so q = (1/f − 1)/2."""
    return 0.5 * (1.0 / form_factor - 1.0)


def ground_radius(height: float, dbh: float, q: float) -> float:
    """r₀ (m) of r(z) = r₀((H − z)/H)^q with r(1.3 m) = DBH/2."""
    return 0.5 * dbh * (height / (height - BREAST_HEIGHT)) ** q


def tier_grid(height: float, group: str) -> int:
    """Tier positions over the stem of a species tree of this height (m) and group: the stem
    has ``LIMBS_PER_TIER`` trunk limbs per position, the crown a tier at its highest ones."""
    low, high = TIER_GRID[group]
    return int(min(max(round(height / TIER_SPACING[group]), low), high))


def check_size(name: str, height: float, dbh: float, fail: Fail) -> None:
    """Refuse a height or a slenderness H/DBH outside the table's allometry limits."""
    limits = table()["limits"]
    low, high = limits["height_m"]
    if not low <= height <= high:
        fail(f"{_KEY}.height", f"{height:g} m is outside the allometry of {name} "
             f"(height {low:g}–{high:g} m)")
    low, high = limits["slenderness"]
    slenderness = height / dbh
    if not low <= slenderness <= high:
        fail(f"{_KEY}.dbh", f"{dbh:g} m on a {height:g} m tree is a slenderness H/DBH of "
             f"{slenderness:.3g}, outside the allometry of {name} ({low:g}–{high:g})")


def _component(coefficients, dbh_cm: float, height: float) -> float:
    """Dry mass (kg) of one biomass component, W = exp(a + b·D/(D + c) + d·H + e·ln H), D in
    cm and H in m: the form of Marklund's (1988) functions."""
    a, b, c, d, e = (float(v) for v in coefficients)
    return math.exp(a + b * dbh_cm / (dbh_cm + c) + d * height + e * math.log(height))


def biomass_fractions(name: str, height: float, dbh: float) -> dict:
    """Above-ground fractions {"stem", "branches", "foliage"} of species `name` at height H and
    DBH (m): the table's biomass functions of size where it gives them (stem = stem wood + bark,
    branches = living branches with their foliage − foliage), else its fixed fractions."""
    biomass = entry(name)["biomass"]
    functions = biomass.get("functions")
    if functions is None:
        return {part: float(biomass[part]) for part in ("stem", "branches", "foliage")}
    dbh_cm = 100.0 * dbh
    stem = sum(_component(functions[part], dbh_cm, height) for part in ("stem_wood", "bark"))
    foliage = _component(functions["foliage"], dbh_cm, height)
    branches = _component(functions["living_branches"], dbh_cm, height) - foliage
    total = stem + branches + foliage
    return {"stem": stem / total, "branches": branches / total, "foliage": foliage / total}


def fresh_fractions(name: str, height: float, dbh: float) -> dict:
    """Fractions {"stem", "branches", "foliage"} of the fresh (green) above-ground mass of
    species `name` at height H and DBH (m): the dry fractions of `biomass_fractions`, each with
    its water. Stem and branch wood hold the wood's green moisture content, foliage its fresh
    over dry mass ratio (needles about 2.2, broad leaves about 2.5, against 1.7–2.2 for green
    wood), so a tree's fresh crown is heavier, relative to its stem, than its dry one."""
    spec = entry(name)
    dry = biomass_fractions(name, height, dbh)
    wood = 1.0 + float(spec["wood"]["green_moisture"])
    fresh = {"stem": dry["stem"] * wood, "branches": dry["branches"] * wood,
             "foliage": dry["foliage"] * float(spec["foliage"]["fresh_over_dry"])}
    total = sum(fresh.values())
    return {part: mass / total for part, mass in fresh.items()}


def derive(name: str, height: float, dbh: float, stand: str = "forest",
           density: float | None = None) -> dict:
    """Everything a species gives a tree of height H and DBH (m), as preset sections:
    ``{"generator": …, "material": …, "wind": …}`` (module docstring). `density` (kg/m³)
    replaces the species' green density in the stem mass (a preset that sets its own)."""
    spec = entry(name)
    group = spec["group"]
    wood = spec["wood"]
    rho = float(density if density is not None else wood["density"])
    q = taper_exponent(spec["stem_form_factor"]["value"])
    r0 = ground_radius(height, dbh, q)
    n_grid = tier_grid(height, group)
    limbs_per_tier = LIMBS_PER_TIER[group]
    n_trunk = limbs_per_tier * n_grid
    stem_mass = rho * math.pi * sum(r * r for r in stem_radii(height, r0, q, n_trunk)) * (
        height / n_trunk)

    crown = spec["crown"]
    tiers = int(min(max(round(crown["ratio"][stand] * n_grid), 2), n_grid - 1))
    branching = spec["branching"]
    per_tier = int(branching["per_whorl"] if branching["whorls"] else branching["per_tier"])
    angle = math.radians(branching["angle_deg"])
    length_ratio = LENGTH_RATIO[group]
    # The lowest tier sits tiers·H/n_grid below the top; its branch reaches out by about
    # L·(sin θ + 0.7·length_ratio), which should be half the crown width.
    above_lowest = tiers * height / n_grid
    reach = math.sin(angle) + 0.7 * length_ratio
    whorl_length_ratio = 0.5 * crown["width_over_height"][stand] * height / (above_lowest * reach)
    whorl_length_ratio = min(max(whorl_length_ratio, 0.05), 2.0)

    biomass = fresh_fractions(name, height, dbh)
    branch_mass = stem_mass * biomass["branches"] / biomass["stem"]
    foliage_mass = stem_mass * biomass["foliage"] / biomass["stem"]
    foliage = spec["foliage"]
    juvenile = wood.get("juvenile")
    fork = spec.get("fork", {}).get(stand)
    shoot_ends = tiers * per_tier * SUB_BRANCHES + 1  # the leader's top carries leaves too
    leaf_area = foliage_mass / foliage["leaf_mass_per_area"] / shoot_ends

    generator = {
        "trunk": {"length": height, "radius": r0, "segments": n_trunk},
        "levels": 2,
        "children": [per_tier, SUB_BRANCHES],
        "segments": list(SEGMENTS[group]),
        "branch_angle_deg": float(branching["angle_deg"]),
        "length_ratio": length_ratio,
        "radius_exponent": 2.0,
        "leaf_area": leaf_area,
        "whorls": tiers,
        "whorl_spacing": limbs_per_tier,
        "whorl_length_ratio": whorl_length_ratio,
        "droop_deg": _per_level_number(branching["droop_deg"]),
        "droop_level": 1,
        "stem_form": q,
        "juvenile_radius": float(juvenile["radius_fraction"]) * 0.5 * dbh if juvenile else None,
        "juvenile_modulus_ratio": float(juvenile["modulus_ratio"]) if juvenile else 1.0,
        "fork_height": float(fork["height"]) if fork else None,
        "fork_leaders": int(fork["leaders"]) if fork else 1,
        "leaf_mass_per_area": float(foliage["leaf_mass_per_area"]),
        "branch_mass": branch_mass,
        "root_stiffness": anchorage.root_stiffness(
            spec["anchorage"]["turning_moment_per_stem_mass"], stem_mass),
        "foliage_colour": spec["colour"]["foliage"],
        "bark_colour": spec["colour"]["bark"],
    }
    material = {
        "density": float(wood["density"]),
        "youngs_modulus": float(wood["youngs_modulus"]),
        "poisson_ratio": float(wood["poisson_ratio"]),
        "damping_ratio": float(spec["damping_ratio"]["value"]),
        "damping_model": "stiffness_proportional",
        "modulus_of_rupture": float(wood["modulus_of_rupture"]),
    }
    crown_width = crown["width_over_height"][stand] * height
    wind = {
        "leaf_drag_coefficient": float(foliage["drag_coefficient"]) * float(sheltering(
            foliage.get("sheltering_extinction"),
            foliage_mass / foliage["leaf_mass_per_area"] / (crown_width * above_lowest))),
        "vogel_exponent": float(foliage["vogel_exponent"]),
    }
    if stand == "forest":
        # In a stand of its own height, the wind speed given at the canopy top (`canopy`):
        # the u_h of ForestGALES' turning moments.
        wind["reference_height"] = float(height)
        wind["canopy"] = {"height": float(height)}
        # The turbulence measured at the top of a closed stand: σ_u = 1.8 u*, L = h (canopy).
        wind["turbulence_intensity"] = round(canopy.dense_top_intensity(), 3)
        wind["length_scale"] = float(height) * canopy.LENGTH_SCALE_OVER_HEIGHT
    return {"generator": generator, "material": material, "wind": wind}


def sheltering(extinction: float | None, leaf_area_index: float) -> float:
    """Fraction s = (1 − exp(−κL))/(κL) of a crown's foliage exposed to the wind: Beer's law
    through a crown holding L m² of leaves per m² of its width × depth, extinction κ (per
    m²/m²); 1 where the table gives no κ (or the crown holds no leaves)."""
    if not extinction or leaf_area_index <= 0.0:
        return 1.0
    x = float(extinction) * leaf_area_index
    return -math.expm1(-x) / x


def _per_level_number(value) -> float | list[float]:
    """A table entry that is a number or a list per branching level, as floats."""
    return [float(v) for v in value] if isinstance(value, list) else float(value)


def _number(value, key: str, fail: Fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        fail(f"{_KEY}.{key}", f"must be a positive number of metres, got {value!r}")
    return float(value)


def _fill(given: dict, derived: dict) -> dict:
    """`given` with every key of `derived` it lacks (nested mappings merged the same way)."""
    out = dict(given)
    for key, value in derived.items():
        if key not in out:
            out[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = _fill(out[key], value)
    return out


# The keys that choose a species tree's size and kind: changing one re-derives the rest.
SIZE_KEYS = ("tree.generator.species", "tree.generator.height", "tree.generator.dbh",
             "tree.generator.stand", "material.density")


# The keys a species tree needs together: one alone leaves it incomplete.
JOINT_KEYS = ("tree.generator.species", "tree.generator.height", "tree.generator.dbh")


def _without(given: dict, derived: dict) -> dict:
    """`given` without the keys whose value is the one `derived` holds (nested the same way)."""
    out = {}
    for key, value in given.items():
        if key not in derived:
            out[key] = value
        elif isinstance(value, dict) and isinstance(derived[key], dict):
            rest = _without(value, derived[key])
            if rest:
                out[key] = rest
        elif value != derived[key]:
            out[key] = value
    return out


def strip_derived(data: dict) -> dict:
    """A validated species preset `data` without the keys its species derived (those holding
    the derived value), so that validating it again after a change of species, height, DBH,
    stand or density derives them anew; a key the preset gave itself with another value stays.
    A preset without a species is returned as is."""
    gen = data["tree"].get("generator")
    if not isinstance(gen, dict) or gen.get("species") is None:
        return data
    derived = derive(gen["species"], float(gen["height"]), float(gen["dbh"]),
                     gen.get("stand", "forest"), data["material"]["density"])
    out = dict(data)
    out["tree"] = dict(data["tree"])
    out["tree"]["generator"] = _without(gen, derived["generator"])
    for section in ("material", "wind"):
        out[section] = _without(data[section], derived[section])
    return out


def apply(raw: dict, fail: Fail) -> dict:
    """The raw preset `raw` with the species' derived keys added where not given (a new dict;
    `raw` unchanged). Without ``tree.generator.species`` it is returned as is, after checking
    that no species-only key (height, dbh) is given. `fail(key_path, message)` raises."""
    tree = raw.get("tree")
    gen = tree.get("generator") if isinstance(tree, dict) else None
    scan = tree.get("scan") if isinstance(tree, dict) else None
    if isinstance(scan, dict) and scan.get("species") is not None:
        return _apply_scan(raw, scan["species"], fail)
    if not isinstance(gen, dict):
        return raw
    name = gen.get("species")
    if name is None:
        for key in ("height", "dbh"):
            if gen.get(key) is not None:
                fail(f"{_KEY}.{key}", "needs tree.generator.species (the allometry it uses)")
        _check_stem_keys(gen, fail)
        return raw
    if not isinstance(name, str) or name not in names():
        fail(f"{_KEY}.species", f"unknown species {name!r} (known: {', '.join(names())})")
    for key in ("height", "dbh"):
        if gen.get(key) is None:
            fail(f"{_KEY}.{key}", "required with species (tree size in metres)")
    height = _number(gen["height"], "height", fail)
    dbh = _number(gen["dbh"], "dbh", fail)
    stand = gen.get("stand", "forest")
    if stand not in ("forest", "open"):
        fail(f"{_KEY}.stand", f"must be one of forest, open; got {stand!r}")
    check_size(name, height, dbh, fail)
    material = raw.get("material") if isinstance(raw.get("material"), dict) else {}
    density = material.get("density")
    if isinstance(density, bool) or not isinstance(density, (int, float)) or density <= 0:
        density = None  # validation reports a bad one
    derived = derive(name, height, dbh, stand, density)
    out = dict(raw)
    out["tree"] = dict(tree)
    out["tree"]["generator"] = _fill(gen, derived["generator"])
    _check_stem_keys(out["tree"]["generator"], fail)
    for section in ("material", "wind"):
        given = raw.get(section)
        if given is None or isinstance(given, dict):
            out[section] = _fill(given or {}, derived[section])
    return out


# Keys of a tapered stem (`generator`): without stem_form they would be ignored.
STEM_KEYS = ("juvenile_radius", "fork_height")


def _check_stem_keys(gen: dict, fail: Fail) -> None:
    """Refuse a tapered stem's key given to a generator whose stem is not tapered."""
    if gen.get("stem_form") is not None:
        return
    for key in STEM_KEYS:
        if gen.get(key) is not None:
            fail(f"{_KEY}.{key}", "needs tree.generator.stem_form (a tapered stem) or a "
                 "species, which gives one")


def _drop(given: dict, derived: dict, path: str, keep) -> dict:
    """`given` without the keys `derived` has (nested the same way), except the key paths
    (``path.key``) in `keep` and those below them."""
    out = {}
    for key, value in given.items():
        here = f"{path}.{key}"
        if key not in derived or any(here == k or here.startswith(k + ".") for k in keep):
            out[key] = value
        elif isinstance(value, dict) and isinstance(derived[key], dict):
            rest = _drop(value, derived[key], here, keep)
            if rest:
                out[key] = rest
    return out


def take_species(data: dict, name, keep) -> dict:
    """A validated preset `data` without a species, about to be given the species `name` by
    an override (``--set tree.generator.species=…``): without the generator, material and
    wind keys the species derives, so that it derives them. The preset's own values of those
    keys were chosen for its own tree, not as changes to a species'; the key paths in `keep`
    (set by the same overrides) stay. An unknown name or a tree without a generator: `data`."""
    gen = data["tree"].get("generator")
    if not isinstance(gen, dict) or not isinstance(name, str) or name not in names():
        return data
    derived = derive(name, 15.0, 0.3)   # which keys it derives: the same at every size
    out = dict(data)
    out["tree"] = dict(data["tree"])
    out["tree"]["generator"] = _drop(gen, derived["generator"], "tree.generator", keep)
    for section in ("material", "wind"):
        out[section] = _drop(data[section], derived[section], section, keep)
    return out


# The sections a scanned tree's species sets (its wood and foliage's drag; the rest of a
# species tree's keys describe a drawn tree, which a scan replaces). The wood is the same at
# every size; the leaves' drag coefficient is that of a 15 m open-grown tree of the species
# (its crown's sheltering where the table gives one). Open ground: a scan says nothing of a
# stand around it, which ``wind.canopy`` gives where there is one (a forest species tree's
# stand of its own height would put every scan in a 15 m canopy).
_SCAN_SECTIONS = ("material", "wind")


def _scan_derived(name: str) -> dict:
    derived = derive(name, 15.0, 0.3, stand="open")
    return {section: derived[section] for section in _SCAN_SECTIONS}


def _apply_scan(raw: dict, name, fail: Fail) -> dict:
    """`raw`, a scanned tree of species `name` (``tree.scan.species``), with the species'
    material and wind keys where not given."""
    if not isinstance(name, str) or name not in names():
        fail("tree.scan.species", f"unknown species {name!r} (known: {', '.join(names())})")
    out = dict(raw)
    for section, values in _scan_derived(name).items():
        given = raw.get(section)
        if given is None or isinstance(given, dict):
            out[section] = _fill(given or {}, values)
    return out


def take_scan_species(data: dict, name, keep) -> dict:
    """A validated scan preset `data` about to be given the species `name` by an override
    (``--set tree.scan.species=…``): without the material and wind keys a species sets, but
    those in `keep` (set by the same overrides), so that the new species sets them (as
    `take_species` for a generated tree). An unknown name: `data` (validation refuses it)."""
    if not isinstance(name, str) or name not in names():
        return data
    out = dict(data)
    for section, values in _scan_derived(name).items():
        out[section] = _drop(data[section], values, section, keep)
    return out
