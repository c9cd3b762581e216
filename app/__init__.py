"""treedyn's desktop app: PyQt6 main window, vispy canvas, controls, simulation worker."""
