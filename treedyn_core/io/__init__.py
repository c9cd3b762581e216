"""Files a run writes and reads: the NPZ and NetCDF outputs, glTF export, the output files' atomic writer."""
