"""Dependency walks over a proof assistant's library: which declarations a statement uses,
to what distance (for the dependency density rho_k of `metrics.density`)."""
