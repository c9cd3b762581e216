"""treedyn's core: tree model, presets, physics, wind and command-line back ends.

Never imports Qt or vispy (a test checks it).
"""

__version__ = "0.1.0"
