"""treedyn's desktop app: PyQt6 main window, vispy canvas, controls, simulation worker."""

import os

# One BLAS thread unless the user says otherwise (read when numpy / scipy load their OpenBLAS,
# so this must run before they are imported). Measured on 2 cores: the modes of sapling take
# 0.04 s alone but 1.2–7 s inside the app with two OpenBLAS threads spinning against the GUI,
# the simulation worker and Mesa's llvmpipe threads; 0.1 s with one.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
