"""Damping and wind off, 2° push of the trunk, dt 1/30 s: energy drift over a duration."""
import copy, sys, time, math
import numpy as np
from treedyn_core.preset import load_preset, shipped_presets
from treedyn_core.simulation import Simulation, SimulationDiverged

def push(name, integrator="galpha", iters=2, dt=1/30, duration=60.0, rho=None):
    data = copy.deepcopy(load_preset(name).data)
    data["wind"]["speed"] = 0.0
    data["simulation"].update(integrator=integrator, dt=dt)
    sim = Simulation.from_data(data)
    sim.galpha_iterations = iters
    if rho is not None: sim.rho_inf = rho
    sim.aerodynamics = False
    sim.set_damping_scale(0.0); sim.end_eases()
    a = math.radians(float(__import__("os").environ.get("PUSH", "2.0"))) / 2
    w, x = math.cos(a), math.sin(a)
    q0 = sim.q[0].copy()   # q0 ⊗ (cos, sin·x)
    sim.q[0] = [q0[0]*w - q0[1]*x, q0[0]*x + q0[1]*w, q0[2]*w + q0[3]*x, q0[3]*w - q0[2]*x]
    sim.state_changed()
    start = sim.energy(); peak = start; scale = sim.energy_scale; t_bad = None
    try:
        for s in range(int(round(duration / dt)) // 3):
            sim.step(3)
            e = sim.energy(); peak = max(peak, e)
            if t_bad is None and peak - start > 1e-6 * scale: t_bad = sim.time
    except SimulationDiverged:
        return f"DIVERGED t={sim.time:.2f}"
    return f"rise/scale {(peak-start)/scale:.2e} first>1e-6 at {t_bad} end/scale {(sim.energy()-start)/scale:.2e} |v|max {np.abs(sim.v).max():.3g}"

if __name__ == "__main__":
    names = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] != "all" else sorted(shipped_presets())
    integ = sys.argv[2] if len(sys.argv) > 2 else "galpha"
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    dur = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    for n in names:
        t0 = time.time()
        print(n, integ, iters, push(n, integ, iters, duration=dur if n != "giant" else min(dur, 10.0)), f"{time.time()-t0:.0f}s", flush=True)
