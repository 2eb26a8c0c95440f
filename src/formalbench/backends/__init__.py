"""Proof assistants behind one protocol (`Backend`). Lean is primary; Coq runs for real here."""

from formalbench.backends.base import Backend, CheckRequest

__all__ = ["Backend", "CheckRequest"]
