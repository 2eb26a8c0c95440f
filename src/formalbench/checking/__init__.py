"""Strict verification of a candidate against its task (DESIGN.md "Strict verification").

`lexer` tokenizes Lean 4 and Coq; `holes` finds and fills holes; `verifier.StrictVerifier`
runs the text layer (forbidden constructs, statement preservation, construction values) and
the assistant layer (compile, axioms) and returns a `Verdict`.
"""

from formalbench.checking.holes import HoleSite, fill_holes, find_holes, target_names
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.lexer import Token, strip_comments, tokenize

__all__ = [
    "HoleSite",
    "StrictVerifier",
    "Token",
    "fill_holes",
    "find_holes",
    "strip_comments",
    "target_names",
    "tokenize",
]
