"""What is computed from a tree: its modes and sway frequency, the pulling test, fragility curves."""
