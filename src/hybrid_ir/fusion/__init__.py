"""Fusion of runs: the methods, their parameter grids and sweeps, and cross-validated weights."""
