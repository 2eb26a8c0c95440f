"""Ask Lean which axioms each target uses, and keep its answers apart from the candidate's messages.

The axioms must come from the assistant, not from the text: a `#print axioms NAME` line per
target is appended after the candidate (after a blank line, each on a line of its own, with
a final newline so that an end-of-file error never lands on one of them). Names are asked for
as `_root_.NAME`, so that a candidate that leaves a namespace open cannot answer for the target
with a look-alike declaration inside it. The information messages those lines produce are
answers, not diagnostics of the candidate; a message that starts on such a line (an unknown
constant when the target is missing) becomes a note. A message the candidate caused past its
own end (an unterminated comment swallowing the queries) is kept, with its position moved
back inside the candidate's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from formalbench.core.errors import InputError
from formalbench.core.records import Diagnostic, Severity

_DEPENDS = re.compile(
    r"^\s*['`](?P<name>.+?)['`]\s+depends on axioms:\s*\[(?P<axioms>.*)\]\s*$", re.S
)
_NONE = re.compile(r"^\s*['`](?P<name>.+?)['`]\s+does not depend on any axioms\s*$", re.S)


def parse_axioms_message(text: str) -> tuple[str, list[str]] | None:
    """Read Lean's answer to `#print axioms`: (name, axioms), or None for another message."""
    if match := _NONE.match(text):
        return match["name"], []
    if match := _DEPENDS.match(text):
        axioms = [a.strip() for a in match["axioms"].split(",")]
        return match["name"], [a for a in axioms if a]
    return None


def validate_targets(targets: Sequence[str]) -> list[str]:
    """The distinct target names, in order; a name Lean could not read is an InputError."""
    seen: list[str] = []
    for target in targets:
        if not isinstance(target, str) or not target.strip() or target != target.strip():
            raise InputError(f"target name {target!r} is empty or has surrounding spaces")
        if "\n" in target or "\r" in target or target.startswith(("#", "--", "/-")):
            raise InputError(f"target name {target!r} is not a Lean declaration name")
        if target not in seen:
            seen.append(target)
    return seen


def _rooted(name: str) -> str:
    """`_root_.name`: resolved from the root even if the candidate left a namespace open."""
    return name if name.startswith("_root_.") else f"_root_.{name}"


@dataclass(frozen=True)
class AxiomQueries:
    """A text with `#print axioms` lines appended, and which target each line asks about."""

    text: str
    lines: dict[int, str]  # line of the query (from 1) -> target
    last_line: int  # the last line that belongs to the candidate
    last_line_length: int


def append_axiom_queries(text: str, targets: Sequence[str]) -> AxiomQueries:
    """`text` followed by one `#print axioms` line per target (see the module docstring)."""
    parts = text.split("\n")
    last_line = max(1, len(parts) - 1 if text.endswith("\n") and len(parts) > 1 else len(parts))
    last_len = len(parts[last_line - 1]) if parts else 0
    if not targets:
        return AxiomQueries(text, {}, last_line, last_len)
    base = text if text.endswith("\n") or not text else text + "\n"
    first = base.count("\n") + 2  # one blank line in between
    lines = {first + i: name for i, name in enumerate(targets)}
    queries = "".join(f"#print axioms {_rooted(name)}\n" for name in targets)
    return AxiomQueries(f"{base}\n{queries}", lines, last_line, last_len)


def settle_messages(
    diagnostics: Sequence[Diagnostic], queries: AxiomQueries
) -> tuple[list[Diagnostic], dict[str, list[str]], list[str]]:
    """Separate the answers to the queries from the candidate's own messages.

    Returns the candidate's diagnostics (none past its last line), the axioms per target,
    and notes for targets Lean could not answer about.
    """
    kept: list[Diagnostic] = []
    axioms: dict[str, list[str]] = {}
    notes: list[str] = []
    for diag in diagnostics:
        target = queries.lines.get(diag.line) if diag.line is not None else None
        if target is not None:
            answer = parse_axioms_message(diag.message) if diag.severity == Severity.info else None
            if answer is not None:
                axioms[target] = answer[1]
            else:
                notes.append(f"#print axioms {target}: {diag.message.strip()}")
            continue
        kept.append(_clamp(diag, queries))
    for target in queries.lines.values():
        if target not in axioms and not any(
            n.startswith(f"#print axioms {target}:") for n in notes
        ):
            notes.append(f"#print axioms {target}: no answer (the candidate may not end cleanly)")
    return kept, axioms, notes


def _clamp(diag: Diagnostic, queries: AxiomQueries) -> Diagnostic:
    last, width = queries.last_line, queries.last_line_length
    update: dict[str, int | None] = {}
    if diag.line is not None and diag.line > last:
        update.update(line=last, column=width)
    if diag.end_line is not None and diag.end_line > last:
        update.update(end_line=last, end_column=width)
    return diag.model_copy(update=update) if update else diag
