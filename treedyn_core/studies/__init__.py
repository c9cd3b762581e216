"""Wind studies: the study file, running many simulations on Dask, the results table and its report."""
