"""The built-in synthetic benchmark: a small egocentric world, rendered to real video."""
