import sys; sys.path.insert(0, "scratch")
from corners import corner
name, k, c = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
for rho in [0.0, 0.3, 0.6, 0.9]:
    print("rho", rho, corner(name, k, c, 2, duration=10, rho=rho), flush=True)
for dt in [1/60, 1/120, 1/240, 1/480]:
    print("dt", dt, corner(name, k, c, 2, duration=10, dt=dt), flush=True)
