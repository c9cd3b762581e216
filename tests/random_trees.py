"""Seeded random trees for testing (the project's `autoTree`, spatial_v2 style).

* `random_reference_tree` / `random_state`: generic geometry and joint states
  for the reference dynamics (`reference_dynamics.ReferenceTree`); base
  offsets and COMs point anywhere, not only along a limb axis, so that every
  term of the dynamics is exercised.
* `random_limbs`: explicit limb entries in the preset form of
  ``treedyn_core.model.schema.LIMB`` (every key present), for the production loader.
* `reference_tree_from_limbs`: the same limbs as a `ReferenceTree` plus their
  rest joint rotations, following docs/design.md §1 and §6, so that production and
  reference can run on one tree.

Every function is deterministic in its seed.
"""

from __future__ import annotations

import numpy as np

if __package__:
    from .reference_dynamics import ReferenceTree, rotation_exp
else:
    from reference_dynamics import ReferenceTree, rotation_exp

TOPOLOGIES = ("random", "chain", "star", "mixed")


def random_rotation(rng):
    """(3, 3) uniformly distributed rotation (normalised Gaussian quaternion)."""
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def random_principal_moments(rng, mass, size):
    """(3,) kg m², principal moments of a body of ``mass`` (kg) and extent ``size`` (m).

    Built from positive second moments ``σ_k = ∫ x_k² dm`` as
    ``I_x = σ_y + σ_z`` etc., so the triangle inequality holds strictly.
    """
    sigma = mass * size ** 2 * rng.uniform(0.005, 0.1, size=3)
    return np.array([sigma[1] + sigma[2], sigma[0] + sigma[2], sigma[0] + sigma[1]])


def random_parents(n, rng, topology="random", chain_fraction=0.5):
    """(n,) parent indices with ``parent[i] < i``, ``parent[0] = -1``.

    topology: ``random`` (uniform among 0..i-1), ``chain`` (i-1), ``star`` (0),
    ``mixed`` (i-1 with probability ``chain_fraction``, else uniform).
    """
    if topology not in TOPOLOGIES:
        raise ValueError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
    parent = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        if topology == "chain":
            parent[i] = i - 1
        elif topology == "star":
            parent[i] = 0
        elif topology == "mixed" and rng.uniform() < chain_fraction:
            parent[i] = i - 1
        else:
            parent[i] = rng.integers(0, i)
    return parent


def random_reference_tree(n, seed, topology="random", chain_fraction=0.5, size=1.0):
    """A random `ReferenceTree` of ``n`` limbs.

    Base offsets and COMs are Gaussian vectors of scale ``size`` (m) and 0.3
    ``size``; masses uniform in 0.1–5 kg; inertias about the COM are a random
    rotation of principal moments obeying the triangle inequality. The root's
    base (its ground pivot) is a random point too.
    """
    rng = np.random.default_rng(seed)
    parent = random_parents(n, rng, topology, chain_fraction)
    base_offset = size * rng.normal(size=(n, 3))
    com = 0.3 * size * rng.normal(size=(n, 3))
    mass = rng.uniform(0.1, 5.0, size=n)
    inertia = np.empty((n, 3, 3))
    for i in range(n):
        Q = random_rotation(rng)
        inertia[i] = Q @ np.diag(random_principal_moments(rng, mass[i], size)) @ Q.T
        inertia[i] = 0.5 * (inertia[i] + inertia[i].T)
    return ReferenceTree(parent, base_offset, com, mass, inertia)


def random_state(tree, seed, amplitude=1.0, rate=None):
    """Random joint state ``(R, v)``.

    R : (N, 3, 3) joint rotations (child → parent axes), ``exp(φ^×)`` with
        ``φ`` uniform in the ball of radius ``amplitude`` rad (≤ π).
    v : (N, 3) rad/s joint rates, child axes, Gaussian of scale ``rate``
        (default: ``amplitude``).
    """
    rng = np.random.default_rng(seed)
    n = tree.n
    rate = amplitude if rate is None else rate
    R = np.empty((n, 3, 3))
    for i in range(n):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        R[i] = rotation_exp(amplitude * rng.uniform() ** (1.0 / 3.0) * direction)
    v = rate * rng.normal(size=(n, 3))
    return R, v


def random_limbs(n, seed):
    """``n`` explicit limb entries in the preset form of ``schema.LIMB``.

    Every LIMB key is present, in the schema's order, with plain Python values
    (YAML-ready): names ``L0…``, parents uniform among earlier limbs (``L0`` is
    the root), random unit directions (one in four the default ``[0, 0, 1]``),
    random rest rotations, explicit mass, principal inertia, anisotropic
    stiffness and a damping that is a 3-vector or a scalar.
    """
    rng = np.random.default_rng(seed)
    limbs = []
    for i in range(n):
        length = float(rng.uniform(0.2, 1.5))
        radius = float(rng.uniform(0.01, 0.1))
        if rng.uniform() < 0.25:
            direction = [0.0, 0.0, 1.0]
        else:
            u = rng.normal(size=3)
            direction = [float(x) for x in u / np.linalg.norm(u)]
        mass = float(rng.uniform(0.1, 5.0))
        inertia = [float(x) for x in random_principal_moments(rng, mass, length)]
        if rng.uniform() < 0.5:
            damping = [float(x) for x in rng.uniform(0.1, 5.0, size=3)]
        else:
            damping = float(rng.uniform(0.1, 5.0))
        limbs.append({
            "name": f"L{i}",
            "parent": None if i == 0 else f"L{int(rng.integers(0, i))}",
            "length": length,
            "radius": radius,
            "direction": direction,
            "rest_rotation_deg": [float(x) for x in rng.uniform(-60.0, 60.0, size=3)],
            "spring_rest_rotation_deg": None,
            "attach": float(rng.uniform(0.2, 1.0)),
            "mass": mass,
            "inertia": inertia,
            "com": float(rng.uniform(0.2, 0.8)),
            "stiffness": [float(x) for x in rng.uniform(50.0, 500.0, size=3)],
            "damping": damping,
            "leaf_area": 0.0,
        })
    return limbs


def reference_tree_from_limbs(limbs, root_position=(0.0, 0.0, 0.0)):
    """`ReferenceTree` and rest joint rotations of explicit limb entries.

    docs/design.md §1/§6: ``u`` = normalised ``direction``; a child's base sits at
    ``attach · L_p u_p`` in its parent's axes (root: at ``root_position``); the
    COM at ``com · L u`` in own axes; ``inertia`` is diagonal in limb axes; the
    rest joint rotation is ``exp(rest_rotation_deg in rad)`` (child rest →
    parent rest axes). Needs explicit ``mass`` and ``inertia`` (no material
    defaults here) and limbs listed parents first.

    Returns
    -------
    tree : ReferenceTree
    R_rest : (N, 3, 3) rest joint rotations, child → parent axes.
    """
    index = {limb["name"]: i for i, limb in enumerate(limbs)}
    n = len(limbs)
    parent = np.full(n, -1, dtype=np.int64)
    base_offset = np.zeros((n, 3))
    com = np.zeros((n, 3))
    mass = np.zeros(n)
    inertia = np.zeros((n, 3, 3))
    R_rest = np.zeros((n, 3, 3))
    axis = np.zeros((n, 3))
    for i, limb in enumerate(limbs):
        if limb["mass"] is None or limb["inertia"] is None:
            raise ValueError(f"{limb['name']}: explicit mass and inertia needed")
        u = np.asarray(limb["direction"], dtype=float)
        axis[i] = u / np.linalg.norm(u)
        if limb["parent"] is None:
            base_offset[i] = root_position
        else:
            p = index[limb["parent"]]
            if p >= i:
                raise ValueError(f"{limb['name']}: parent {limb['parent']} listed after it")
            parent[i] = p
            base_offset[i] = limb["attach"] * limbs[p]["length"] * axis[p]
        com[i] = limb["com"] * limb["length"] * axis[i]
        mass[i] = limb["mass"]
        inertia[i] = np.diag(limb["inertia"])
        R_rest[i] = rotation_exp(np.radians(limb["rest_rotation_deg"]))
    return ReferenceTree(parent, base_offset, com, mass, inertia), R_rest
