"""Benchmarks: accuracy on a free rigid body and on trees, speed, the study's throughput."""
