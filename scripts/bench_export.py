"""Time and size of the glTF export: a generated tree of about N limbs (the benchmark's
`tree_of_size`), S simulated seconds saved at 30 frames per second, then exported.

    python scripts/bench_export.py [--limbs 10000] [--duration 10] [--repeat 3]

Prints the simulation's wall time (treedyn run's own loop), the export's (quaternions, meshes,
JSON, the file written to a temporary folder), and the file's size against the float32
animation samples plus meshes it holds (`gltf_export.raw_size`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from treedyn_core.bench.performance import tree_of_size
from treedyn_core.io.gltf_export import Motion, raw_size, write_glb
from treedyn_core.io.run import simulate
from treedyn_core.simulation import Simulation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limbs", type=int, default=10000)
    parser.add_argument("--duration", type=float, default=10.0, help="simulated s")
    parser.add_argument("--repeat", type=int, default=3, help="exports timed (median shown)")
    args = parser.parse_args()

    sim = Simulation.from_data(tree_of_size(args.limbs))
    start = time.perf_counter()
    result = simulate(sim, args.duration)
    simulated = time.perf_counter() - start
    motion = Motion.from_arrays(result.arrays)
    times = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tree.glb"
        for _ in range(args.repeat):
            start = time.perf_counter()
            size = write_glb(motion, path)
            times.append(time.perf_counter() - start)
    raw = raw_size(motion)
    print(f"{len(motion.names):,} limbs, {len(motion.t)} frames ({args.duration:g} s at 30 "
          f"frames per second)")
    print(f"simulation {simulated:.2f} s wall; export {statistics.median(times):.2f} s "
          f"(median of {args.repeat}: {', '.join(f'{t:.2f}' for t in times)} s)")
    print(f"file {size / 1e6:.2f} MB; samples + meshes {raw / 1e6:.2f} MB; ratio "
          f"{size / raw:.3f}")


if __name__ == "__main__":
    main()
