import sys; sys.path.insert(0, "scratch")
import energy, copy, math
from treedyn_core.simulation import Simulation
orig = Simulation.from_data
for th in [0.5, 0.52, 0.55]:
    def fd(data, **kw):
        s = orig(data, **kw); s.theta_method = th; return s
    Simulation.from_data = staticmethod(fd)
    for n in ["weeping_willow", "old_oak"]:
        print(th, n, energy.push(n, "implicit", 1, duration=20), flush=True)
