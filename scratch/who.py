"""Which limbs blow up, and the Newton contraction per iteration, on the push test."""
import sys, math, copy
sys.path.insert(0, "scratch")
import numpy as np
from treedyn_core.preset import load_preset
from treedyn_core.simulation import Simulation, SimulationDiverged
from contract import iterates
name = sys.argv[1]; iters = int(sys.argv[2]); nsteps = int(sys.argv[3])
data = copy.deepcopy(load_preset(name).data)
data["wind"]["speed"] = 0.0
data["simulation"].update(integrator="galpha", dt=1/30)
sim = Simulation.from_data(data); sim.galpha_iterations = iters
sim.aerodynamics = False; sim.set_damping_scale(0.0); sim.end_eases()
a = math.radians(1.0); q0 = sim.q[0].copy(); w, x = math.cos(a), math.sin(a)
sim.q[0] = [q0[0]*w - q0[1]*x, q0[0]*x + q0[1]*w, q0[2]*w + q0[3]*x, q0[3]*w - q0[2]*x]
sim.state_changed()
t = sim.tree
for s in range(nsteps):
    it = iterates(sim, 6)
    x = [g for _, _, g in it]
    d = [np.abs(x[j + 1] - x[j]).max() for j in range(len(x) - 1)]
    i = int(np.abs(sim.v).max(axis=1).argmax())
    vi = sim.v[i]; u = np.array([0, 0, 1.0])
    if s % max(1, nsteps // 25) == 0 or s > nsteps - 5:
        print(f"step {s} E/scale {sim.energy()/sim.energy_scale:.4g} |v|max {np.abs(sim.v).max():.3g} limb {i} ({t.names[i]}, depth {t.depth[i] if hasattr(t,'depth') else '?'}) v {np.round(vi,2)}"
              f" |dx_k| " + " ".join(f"{e:.1e}" for e in d), flush=True)
    try:
        sim.step(1)
    except SimulationDiverged:
        print("diverged"); break
