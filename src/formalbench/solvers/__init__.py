"""solvers layer."""
