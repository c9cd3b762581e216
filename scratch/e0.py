import sys; sys.path.insert(0, "scratch")
from contract import make
import numpy as np
for integ in ["implicit", "galpha"]:
    sim = make("two_limbs", 10, 0.1, integrator=integ)
    print(integ, sim.energies(), sim.energy_scale, sim.q, sim.v)
    for s in range(5):
        sim.step(1); print(s, sim.energies(), np.abs(sim.v).max())
