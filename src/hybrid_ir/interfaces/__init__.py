"""The package as other code uses it: the Python API on plain dict shapes, and runs as PyTerrier
DataFrames."""
