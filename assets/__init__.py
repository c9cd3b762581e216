"""Shipped data: tree presets (``presets/*.yaml``) and icons. Holds no code."""
