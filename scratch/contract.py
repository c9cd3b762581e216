"""Newton contraction per iteration of one galpha step, from a sim's current state."""
import copy, sys
import numpy as np
from treedyn_core.preset import load_preset
from treedyn_core.simulation import Simulation, SimulationDiverged
from treedyn_core.integrators import galpha_steps, galpha_coefficients, GalphaState

def make(name, k, c, dt=1/30, integrator="galpha", iters=2, wind=0.0):
    data = copy.deepcopy(load_preset(name).data)
    data["wind"]["speed"] = wind
    data["simulation"].update(integrator=integrator, dt=dt)
    sim = Simulation.from_data(data)
    sim.galpha_iterations = iters
    sim.set_stiffness_scale(k); sim.set_damping_scale(c); sim.end_eases()
    return sim

def iterates(sim, K=12):
    """v after one step with 1..K iterations, from the sim's current state and galpha work."""
    out = []
    for k in range(1, K + 1):
        q, v = sim.q.copy(), sim.v.copy()
        work = GalphaState(*(a.copy() for a in sim._galpha_state))
        system = sim.system()
        wstate = sim.wind.state.copy()
        galpha_steps(system, 1, float(sim.dt), galpha_coefficients(sim.rho_inf), k, q, v, work)
        sim.wind.state[:] = wstate
        out.append((q, v, work.guess.copy()))
    return out

if __name__ == "__main__":
    name, k, c = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    nsteps = int(sys.argv[4]); iters = int(sys.argv[5])
    sim = make(name, k, c, iters=iters)
    for s in range(nsteps):
        it = iterates(sim, 8)
        x = [g for _, _, g in it]
        d = [np.abs(x[j + 1] - x[j]).max() for j in range(len(x) - 1)]
        worst = np.unravel_index(np.abs(x[2] - x[1]).argmax(), x[0].shape)
        print(f"step {s} E {sim.energy():.6g} |v|max {np.abs(sim.v).max():.3g} |x|max {np.abs(x[-1]).max():.3g}"
              f" |dx_k| " + " ".join(f"{e:.1e}" for e in d) + f" worst limb {worst}")
        try:
            sim.step(1)
        except SimulationDiverged:
            print("diverged"); break
