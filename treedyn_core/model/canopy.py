"""The wind in and above a forest stand (docs/design.md §5.1, docs/validation.md "Canopy flow").

A tree in a stand of canopy height h (m) and mean spacing s (m) between stems meets the
horizontally averaged wind of the stand:

- above the canopy top, the logarithmic profile of the roughness sublayer as ForestGALES
  writes it (Gardiner et al. 2000; Hale et al. 2015, the ``fgr`` package):

      U(z) = (u*/κ) ln((z − d)/z₀),   z ≥ h,

  with zero-plane displacement d and roughness length z₀ from the stand's frontal area
  index λ (Raupach 1994, Boundary-Layer Meteorol. 71: 211–216):

      d/h  = 1 − (1 − exp(−√(c_d1 λ))) / √(c_d1 λ),                 c_d1 = 7.5
      u*/U_h = √(C_S + C_R λ/2)  (λ ≤ 0.6),  √(C_S + 0.3 C_R)  (λ > 0.6),   C_S = 0.003, C_R = 0.3
      z₀   = (h − d) exp(−κ U_h/u* + ψ_h),   ψ_h = ln c_w − 1 + 1/c_w,   c_w = 2

  (κ = 0.4; the λ/2 and the cap at λ = 0.6 are ForestGALES' reading of Raupach's
  (u*/U_h)_max = 0.3). The profile is written through U_h, so it is continuous at the top;
  its friction velocity is the log law's, u* = κ U_h / ln((h − d)/z₀) (0.36 U_h in a dense
  stand: ForestGALES' bending moment takes u* so; Raupach's √(C_S + C_R λ/2) ≤ 0.305 enters
  z₀ only). ForestGALES' λ is 2 × (crown width × C_d/2) × crown depth / s²: the
  streamlined crown's drag area per ground area. Here λ is the drag area C_d·A of a tree of
  the stand per ground area s², the stand's trees taken as the simulated tree scaled to the
  canopy height (`frontal_area_index`).
- below the canopy top, the exponential decay of Inoue (1963) and Cionco (1965):

      U(z) = U_h exp(a (z/h − 1)),   z < h,

  continuous with the log profile at z = h, with attenuation coefficient a = 2.5, within the
  2–3 that Cionco's compilations give for conifer forests (Cionco 1965, J. Appl. Meteorol.
  4: 517–522; 1978, Boundary-Layer Meteorol. 15: 81–93).

The turbulence is the field's (`wind.py`) with σ_u = I·U_h at and above the canopy top
(I = ``wind.turbulence_intensity``); a ``stand: forest`` species tree's defaults are those
measured at the top of a stand, I = `dense_top_intensity` and L = h (`species`).

Turbulence at and above the canopy top (Raupach, Finnigan & Brunet 1996, Boundary-Layer
Meteorol. 78: 351–382, their canopy-top statistics; Finnigan 2000, Annu. Rev. Fluid Mech. 32:
519–571): σ_u = 1.8 u*, and the integral length scale of u is of the order of h (here L = h).
Inside the canopy the turbulence decays more slowly than the mean wind, so that the intensity
σ_u/U grows toward the ground (their canopy profiles: σ_u/u* falls from about 2 at the top to
about 0.5–1 in the trunk space, and σ_u/U exceeds 1 in the lower canopy). Here σ_u ∝
exp(a (z/h − 1)/2), half the mean's rate, a choice inside those bounds rather than a fit: it
puts σ_u/u* at 0.7 at z = h/4 and σ_u/U at 1.2 at z = h/2. σ_v and σ_w keep their ratios to
σ_u of the open field (0.8, 0.5), so σ_w/u* is 0.9 at the top against about 1.1 measured.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import TreedynError
from .crown import drag_area

KARMAN = 0.4                      # von Kármán's constant κ (ForestGALES' k)
RAUPACH_CD1 = 7.5                 # c_d1 of d/h (Raupach 1994)
RAUPACH_CS = 0.003                # C_S, substrate drag coefficient
RAUPACH_CR = 0.3                  # C_R, roughness-element drag coefficient
RAUPACH_CW = 2.0                  # c_w of the roughness-sublayer influence function ψ_h
LAMBDA_CAP = 0.6                  # ForestGALES: above this λ, u*/U_h = √(C_S + 0.3 C_R)
ATTENUATION = 2.5                 # a of U(z) = U_h exp(a (z/h − 1)) below the top
SIGMA_U_OVER_USTAR = 1.8          # σ_u/u* at the canopy top (RFB96)
LENGTH_SCALE_OVER_HEIGHT = 1.0    # L_x^u / h at the canopy top (RFB96, Finnigan 2000)
TURBULENCE_ATTENUATION = 0.5 * ATTENUATION   # σ_u ∝ exp(a_σ (z/h − 1)) below the top
# λ is taken at this uniform speed (m/s), where ForestGALES clamps its drag law C·U^(−N) from
# below (the fgr package's drag function).
FRONTAL_AREA_SPEED = 10.0
# The tallest tree a canopy may hold, over its height (bad input beyond, docs/design.md §6).
MAX_TREE_OVER_CANOPY = 3.0

# Layout of the profile array the kernels read (`WindField.canopy`): height 0 means none.
HEIGHT = 0              # h, m
DISPLACEMENT = 1        # d, m
ROUGHNESS = 2           # z₀, m
MEAN_DECAY = 3          # a
TURBULENCE_DECAY = 4    # a_σ
TOP_OVER_REFERENCE = 5  # U_h / U(z_ref)
PROFILE_SIZE = 6


class CanopyFlow(NamedTuple):
    """The stand's mean flow parameters (module docstring), lengths in m."""

    height: float             # h
    spacing: float            # s
    frontal_area_index: float  # λ
    displacement: float       # d
    roughness: float          # z₀
    friction_ratio: float     # u*/U_h of the log profile


def stand_flow(height: float, spacing: float, frontal_area_index: float) -> CanopyFlow:
    """d, z₀ and u*/U_h of a stand of canopy height `height` (m), spacing `spacing` (m) and
    frontal area index λ (Raupach 1994 as ForestGALES computes it; module docstring)."""
    lam = max(float(frontal_area_index), 1e-12)
    root = math.sqrt(RAUPACH_CD1 * lam)
    displacement = height * (1.0 - (1.0 - math.exp(-root)) / root)
    if lam > LAMBDA_CAP:
        raupach_ratio = math.sqrt(RAUPACH_CS + RAUPACH_CR * 0.3)
    else:
        raupach_ratio = math.sqrt(RAUPACH_CS + RAUPACH_CR * lam / 2.0)
    psi_h = math.log(RAUPACH_CW) - 1.0 + 1.0 / RAUPACH_CW
    roughness = (height - displacement) * math.exp(-KARMAN / raupach_ratio + psi_h)
    # u* of the log profile through U_h (as ForestGALES' turning moment takes it), which
    # leaves out Raupach's ψ_h: u*/U_h = κ / ln((h − d)/z₀).
    friction_ratio = KARMAN / math.log((height - displacement) / roughness)
    return CanopyFlow(float(height), float(spacing), lam, displacement, roughness,
                      friction_ratio)


def shape(z, flow: CanopyFlow):
    """U(z)/U_h of the stand's mean profile at heights z (m; below 0.1 m: at 0.1 m)."""
    z = np.maximum(np.asarray(z, dtype=np.float64), 0.1)
    h, d, z0 = flow.height, flow.displacement, flow.roughness
    above = np.log((np.maximum(z, h) - d) / z0) / math.log((h - d) / z0)
    below = np.exp(ATTENUATION * (np.minimum(z, h) / h - 1.0))
    return np.where(z >= h, above, below)


def turbulence_shape(z, flow: CanopyFlow):
    """σ_u(z)/σ_u(h): 1 at and above the canopy top, exp(a_σ (z/h − 1)) below it."""
    z = np.maximum(np.asarray(z, dtype=np.float64), 0.1)
    return np.exp(TURBULENCE_ATTENUATION * (np.minimum(z, flow.height) / flow.height - 1.0))


def top_intensity(flow: CanopyFlow) -> float:
    """σ_u/U_h at the canopy top: 1.8 u*/U_h (RFB96)."""
    return SIGMA_U_OVER_USTAR * flow.friction_ratio


def dense_top_intensity() -> float:
    """σ_u/U_h at the top of a dense stand (λ > 0.6, every closed forest): there z₀/(h − d) is
    the same for all λ, so u*/U_h = κ/(κ/√(C_S + 0.3 C_R) − ψ_h) = 0.358 and σ_u/U_h = 0.64."""
    return top_intensity(stand_flow(1.0, 1.0, 1.0))


def profile_array(flow: CanopyFlow | None, reference_height: float) -> np.ndarray:
    """The (`PROFILE_SIZE`,) array the wind kernel reads; all zeros without a canopy."""
    out = np.zeros(PROFILE_SIZE)
    if flow is not None:
        out[HEIGHT] = flow.height
        out[DISPLACEMENT] = flow.displacement
        out[ROUGHNESS] = flow.roughness
        out[MEAN_DECAY] = ATTENUATION
        out[TURBULENCE_DECAY] = TURBULENCE_ATTENUATION
        out[TOP_OVER_REFERENCE] = 1.0 / float(shape(reference_height, flow))
    return out


def frontal_area_index(tree, wind: dict, height: float, spacing: float) -> float:
    """λ of a stand of trees like `tree` scaled to canopy height `height` (m) at spacing
    `spacing` (m): the tree's `drag_area` at `FRONTAL_AREA_SPEED`, times (h/H)², over s²."""
    scale = height / tree.height
    return drag_area(tree, wind, FRONTAL_AREA_SPEED) * scale * scale / (spacing * spacing)


def check_tree_height(tree_height: float, canopy_height: float, fail) -> None:
    """`fail(key_path, message)` if the tree is taller than `MAX_TREE_OVER_CANOPY` canopies."""
    if tree_height > MAX_TREE_OVER_CANOPY * canopy_height:
        fail("wind.canopy.height", f"a {tree_height:.3g} m tree in a canopy of "
             f"{canopy_height:g} m: the tree may be at most {MAX_TREE_OVER_CANOPY:g} times "
             f"the canopy's height")


def stand_frontal_area_index(tree, wind: dict, error=None) -> float | None:
    """λ of the stand of ``wind.canopy`` around `tree` (`frontal_area_index`), or None on open
    ground. A tree taller than `MAX_TREE_OVER_CANOPY` canopies is bad input: `error(key_path,
    message)` makes the exception (a `preset.Preset`'s ``error``), else `TreedynError`."""
    stand = wind.get("canopy") or {}
    if stand.get("height") is None:
        return None
    height = float(stand["height"])

    def fail(key_path, message):
        raise error(key_path, message) if error else TreedynError(f"{key_path}: {message}")

    check_tree_height(tree.height, height, fail)
    return frontal_area_index(tree, wind, height, float(stand["spacing"]))
