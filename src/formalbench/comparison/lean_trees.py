"""Lean operator trees of gated statements from the assistant: one check elaborates each
statement under `set_option pp.all true in #check (P : Prop)` and `metrics.lean_elab_optree`
reads the printed terms. A statement Lean prints nothing usable for (or whose printed term
the grammar does not cover) gets None: the caller then compares text trees
(`metrics.lean_optree`) instead, never an elaborated tree with a text one."""

from __future__ import annotations

import re

from formalbench.backends.base import Backend
from formalbench.comparison.beq_lean import LeanStatement, imports_of, section
from formalbench.core.records import CheckStatus, Severity
from formalbench.metrics.lean_elab_optree import lean_elab_tree
from formalbench.metrics.lean_optree import LeanParseError
from formalbench.metrics.optree import OpTree

_ANSWER = re.compile(r"\s:\s*Prop\s*$")


def elaborated_source(statements: list[LeanStatement]) -> tuple[str, list[int]]:
    """The file of the queries (each statement in a section of its own header, as BEq
    elaborates it), and the line each statement's `#check` starts on (Lean puts its answer
    at the `#check` keyword). `set_option … in` ends its own line: the header splitter takes
    a line that starts with `set_option` and does not end in `in` for a header command."""
    text, lines = imports_of(*statements), []
    for s in statements:
        query = f"set_option pp.all true in\n#check ({s.prop} : Prop)"
        block = section(s, query)
        lines.append(text.count("\n") + block[: block.index("#check")].count("\n") + 1)
        text += block + "\n"
    return text, lines


def elaborated_trees(backend: Backend, statements: list[LeanStatement]) -> list[OpTree | None]:
    """The tree of each statement as Lean elaborates it, or None where there is none."""
    source, lines = elaborated_source(statements)
    result = backend.check(source)
    printed: dict[int, str] = {}
    if result.status == CheckStatus.ok:
        for d in result.diagnostics:
            # `#check` answers `TERM : Prop`; other info on the line is not the answer
            if d.severity == Severity.info and d.line in lines and _ANSWER.search(d.message):
                printed.setdefault(d.line, d.message)
    out: list[OpTree | None] = []
    for line in lines:
        try:
            out.append(lean_elab_tree(printed[line]) if line in printed else None)
        except LeanParseError:
            out.append(None)
    return out
