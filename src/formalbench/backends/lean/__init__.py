"""Lean 4: per-file `lean --json`, the community REPL with a process pool, Kimina server client."""

from formalbench.backends.lean.backend import LeanBackend
from formalbench.backends.lean.kimina import KiminaBackend

__all__ = ["KiminaBackend", "LeanBackend"]
