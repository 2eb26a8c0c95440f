"""One object, two spellings: Rocq 9 renamed Coq's prelude `Corelib` and its standard library
`Stdlib`, so `Coq.Init.Logic.eq` prints as `Corelib.Init.Logic.eq` there. Name lists written
once in Coq 8's spelling (the density's trivial set, the value check's choice operators) read
a name printed by either Coq through `coq8_name`."""

from __future__ import annotations


def coq8_name(name: str) -> str:
    """`name` as Coq 8 spells it: a leading `Corelib.` or `Stdlib.` becomes `Coq.`."""
    root, dot, rest = name.partition(".")
    return f"Coq.{rest}" if dot and root in ("Corelib", "Stdlib") else name
