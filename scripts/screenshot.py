"""Render the app running a preset in the wind to PNG files (the README's screenshot).

    python scripts/screenshot.py                      # docs/screenshot.png, young_oak
    xvfb-run -s "-screen 0 1280x800x24" python scripts/screenshot.py young_oak \\
        --seconds 12 --out window.png --canvas view.png

Without a DISPLAY it starts its own virtual X server (Xvfb, through
pyvirtualdisplay, which pytest-xvfb installs). The window is shown for
`--seconds` of wall-clock time after the simulation is ready, so the live plot
has a stretch of history, then grabbed whole (`--out`) and, if asked, the 3-D
view alone rendered offscreen (`--canvas`). Regenerate docs/screenshot.png
whenever the look of the app changes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SCREEN = (1280, 800)


def _start_display():
    """A virtual X server when there is no display (None when there is one)."""
    if os.environ.get("DISPLAY") or not sys.platform.startswith("linux"):
        return None
    try:
        from pyvirtualdisplay import Display
    except ImportError:
        sys.exit("screenshot: no DISPLAY and no pyvirtualdisplay; run it under "
                 "xvfb-run -s \"-screen 0 1280x800x24\"")
    display = Display(visible=False, size=SCREEN, color_depth=24)
    display.start()
    return display


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", nargs="?", default="young_oak")
    parser.add_argument("--seconds", type=float, default=22.0,
                        help="wall-clock seconds to run after the simulation is ready "
                             "(22: the plot's 20 s window is full)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshot.png"),
                        help="PNG of the whole window")
    parser.add_argument("--canvas", default=None, help="PNG of the 3-D view alone")
    parser.add_argument("--size", default="1200x760", help="window size WxH")
    parser.add_argument("--lines", action="store_true", help="the lines render mode (default: "
                        "shaded tubes)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="preset override, as treedyn run --set (default: "
                             "wind.speed=9 wind.direction_deg=20)")
    args = parser.parse_args(argv)
    overrides = args.set or ["wind.speed=9", "wind.direction_deg=20"]

    display = _start_display()
    if display is None:
        return _shoot(args, overrides)
    # Qt must be gone before its X server: shoot in a child process on the virtual display.
    try:
        env = dict(os.environ, DISPLAY=display.new_display_var)
        command = [sys.executable, str(Path(__file__).resolve())]
        command += sys.argv[1:] if argv is None else list(argv)
        return subprocess.run(command, env=env).returncode
    finally:
        display.stop()


def _shoot(args, overrides) -> int:
    from PyQt6.QtCore import QSettings
    from vispy.io import write_png

    from treedyn_app.application import app_instance
    from treedyn_app.main_window import MainWindow
    from treedyn_app.tree_visual import LINES, TUBES
    from treedyn_app.worker import RUNNING
    from treedyn_core.model.preset import apply_overrides, load_preset

    preset = load_preset(args.preset)
    preset.data = apply_overrides(preset.data, overrides)
    app = app_instance()
    settings = QSettings(str(Path("/tmp") / "treedyn_screenshot.ini"), QSettings.Format.IniFormat)
    window = MainWindow(preset, settings=settings, render_mode=LINES if args.lines else TUBES)
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
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # From the X server, not QWidget.grab(): the 3-D view is a native GL window, which a
    # widget grab leaves blank.
    window.screen().grabWindow(int(window.winId())).save(str(out))
    print(f"wrote {out}")
    if args.canvas:
        write_png(args.canvas, window.canvas.render())
        print(f"wrote {args.canvas}")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
