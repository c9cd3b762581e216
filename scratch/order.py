import sys; sys.path.insert(0, "tests")
import math, numpy as np
from physics_cases import convergence_orders, random_tree_simulation
reference = random_tree_simulation(15, 7, integrator="rk4", prestress=False)
steps = int(math.ceil(0.5 / (0.25 * reference.rk4_stable_dt())))
reference.dt = 0.5 / steps; reference.step(steps)
dts = [1/480, 1/960, 1/1920, 1/3840]; errors = []
for dt in dts:
    sim = random_tree_simulation(15, 7, integrator="galpha", prestress=False, dt=dt)
    sim.step(int(round(0.5 / dt))); errors.append(np.abs(sim.tip - reference.tip).max())
print("errors", errors, "orders", convergence_orders(dts, errors))
