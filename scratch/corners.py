"""Slider corners at 1/30 s for galpha with several iteration counts."""
import copy, sys, time
import numpy as np
from treedyn_core.preset import load_preset
from treedyn_core.simulation import Simulation, SimulationDiverged

def corner(name, k, c, iters, integrator="galpha", duration=60.0, dt=1/30, rho=None):
    data = copy.deepcopy(load_preset(name).data)
    data["wind"]["speed"] = 0.0
    data["simulation"].update(integrator=integrator, dt=dt)
    sim = Simulation.from_data(data)
    if rho is not None: sim.rho_inf = rho
    sim.galpha_iterations = iters
    sim.set_stiffness_scale(k); sim.set_damping_scale(c); sim.end_eases()
    start = sim.energy(); peak = start; scale = sim.energy_scale
    steps = int(round(duration / dt)); t_bad = None
    try:
        for s in range(steps // 3):
            sim.step(3)
            e = sim.energy()
            if e > peak: peak = e
            if (peak - start) > 1e-6 * scale and t_bad is None: t_bad = sim.time
    except SimulationDiverged as e:
        return f"DIVERGED t={sim.time:.2f}"
    vmax = np.abs(sim.v).max()
    return f"rise/scale {(peak-start)/scale:.2e} first>1e-6 at {t_bad} |v|max {vmax:.3g}"

if __name__ == "__main__":
    name, k, c = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    dur = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    its = [int(x) for x in sys.argv[5].split(",")] if len(sys.argv) > 5 else [1, 2, 3, 5, 10, 20]
    for it in its:
        t0 = time.time()
        print(name, k, c, "iters", it, corner(name, k, c, it, duration=dur), f"{time.time()-t0:.1f}s", flush=True)
