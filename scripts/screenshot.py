"""Render the app running a preset to PNG files (run under a display, e.g. xvfb-run).

    xvfb-run -s "-screen 0 1280x800x24" python scripts/screenshot.py young_oak \
        --seconds 4 --canvas canvas.png --window window.png
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", nargs="?", default="young_oak")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="wall-clock seconds to run after the simulation is ready")
    parser.add_argument("--canvas", default="treedyn_canvas.png", help="PNG of the 3-D view")
    parser.add_argument("--window", default=None, help="PNG of the whole window")
    parser.add_argument("--size", default="1200x760", help="window size WxH")
    parser.add_argument("--tubes", action="store_true", help="the tubes render mode")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="preset override, as treedyn run --set")
    args = parser.parse_args(argv)

    from PyQt6.QtCore import QSettings
    from vispy.io import write_png

    from app.main_window import MainWindow, app_instance
    from app.tree_visual import LINES, TUBES
    from app.worker import RUNNING
    from treedyn_core.preset import apply_overrides, load_preset

    preset = load_preset(args.preset)
    if args.set:
        preset.data = apply_overrides(preset.data, args.set)
    app = app_instance()
    settings = QSettings(str(Path("/tmp") / "treedyn_screenshot.ini"), QSettings.Format.IniFormat)
    window = MainWindow(preset, settings=settings, render_mode=TUBES if args.tubes else LINES)
    width, height = (int(v) for v in args.size.split("x"))
    window.resize(width, height)
    window.show()

    def wait(condition, timeout):
        end = time.perf_counter() + timeout
        while time.perf_counter() < end and not condition():
            app.processEvents()
            time.sleep(0.005)

    wait(lambda: window.worker.latest.state == RUNNING, 120)
    wait(lambda: False, args.seconds)
    write_png(args.canvas, window.canvas.render())
    print(f"wrote {args.canvas}")
    if args.window:
        window.grab().save(args.window)
        print(f"wrote {args.window}")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
