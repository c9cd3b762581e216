"""The tree as data: the preset format and its validation, species tables and the generator, scans read from TreeQSM, the limb arrays a simulation is built from."""
