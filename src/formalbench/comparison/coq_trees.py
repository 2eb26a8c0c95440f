"""Coq operator trees of gated statements: coqc prints each under `Set Printing All` (one
run for all of them) and `metrics.coq_optree` turns the printed terms into trees."""

from __future__ import annotations

import re

from formalbench.backends.coq import CoqBackend
from formalbench.comparison.beq_coq import BASE_HEADER, CoqStatement
from formalbench.core.errors import InputError
from formalbench.metrics.coq_optree import coq_tree
from formalbench.metrics.optree import OpTree

_MARK = "formalbench_tree"
_TIME = re.compile(r"^Chars \d+ - \d+ ")
_SPLIT = re.compile(rf'"?{_MARK} (\d+)"?\s*')


def coq_trees(
    header: str, statements: list[CoqStatement], backend: CoqBackend | None = None
) -> list[OpTree]:
    """The trees of `statements` (already through the gate of `parse_statement`)."""
    backend = backend or CoqBackend()
    lines = [BASE_HEADER, header, "Set Printing All.\nSet Printing Width 1000000.\n"]
    for i, s in enumerate(statements):
        lines.append(f'Goal True. idtac "{_MARK} {i}". Abort.\nCheck ({s.term}).\n')
    outcome = backend.run("".join(lines), backend.timeout)  # stdout holds the printed terms
    # the backend runs coqc with `-time`: drop its `Chars a - b [...]` lines
    stdout = "\n".join(ln for ln in outcome.stdout.splitlines() if not _TIME.match(ln))
    parts = _SPLIT.split(stdout)
    printed = {int(parts[k]): parts[k + 1] for k in range(1, len(parts) - 1, 2)}
    if len(printed) != len(statements) or any(not v.strip() for v in printed.values()):
        raise InputError("coqc did not print every statement: " + outcome.stderr.strip()[:200])
    return [coq_tree(printed[i]) for i in range(len(statements))]
