"""AMBER-style construction tasks: the task-marker comment of a source file, and the check
that a task's construction names are definitions it leaves open.

A source file says what kind of task it is in one comment anywhere in the file (taken out of
the task text, which is what the prover sees):

    (* formalbench-task                       /- formalbench-task
       kind: transformation                      kind: evaluation
       constructions: D_tgt P_tgt                constructions: answer
       informal: Minimise |x| ... *)             informal: Find ... -/

`kind` is one of `TaskKind`; `constructions` names the definitions that are the answer
(space- or comma-separated); `informal` is the problem in words (it may run over several
lines). Why a comment and not a side file: a folder of tasks stays a folder of files that
compile as they are.
"""

from __future__ import annotations

import re

from formalbench.checking.construction import value_holes
from formalbench.checking.holes import hole_decls
from formalbench.core.records import Language, TaskKind

MARKER_WORD = "formalbench-task"
_MARKERS = {
    Language.coq: re.compile(r"\(\*\s*" + MARKER_WORD + r"\b(.*?)\*\)[ \t]*\n?", re.S),
    Language.lean: re.compile(r"/-\s*" + MARKER_WORD + r"\b(.*?)-/[ \t]*\n?", re.S),
}
_KEYS = ("kind", "constructions", "informal")
CONSTRUCTION_KINDS = frozenset({TaskKind.evaluation, TaskKind.algorithm, TaskKind.transformation})


class MarkerError(ValueError):
    """A task marker that cannot be read; the message says which field is wrong."""


def read_marker(content: str, language: Language) -> tuple[str, dict[str, str]]:
    """The file without its marker comment, and the marker's fields (empty: no marker)."""
    found = list(_MARKERS[language].finditer(content))
    if not found:
        return content, {}
    if len(found) > 1:
        raise MarkerError(f"{len(found)} `{MARKER_WORD}` comments; a file holds one task")
    match = found[0]
    fields: dict[str, str] = {}
    key = ""
    for line in match.group(1).splitlines():
        head, colon, rest = line.strip().partition(":")
        if colon and head.strip() in _KEYS:
            key = head.strip()
            if key in fields:
                raise MarkerError(f"field {key!r} given twice in the task marker")
            fields[key] = rest.strip()
        elif line.strip():
            if not key:
                raise MarkerError(f"unknown task-marker line {line.strip()[:60]!r}")
            fields[key] = f"{fields[key]} {line.strip()}".strip()
    return content[: match.start()] + content[match.end() :], fields


def marker_kind(fields: dict[str, str]) -> TaskKind | None:
    raw = fields.get("kind", "").strip()
    if not raw:
        return None
    try:
        return TaskKind(raw)
    except ValueError:
        allowed = ", ".join(k.value for k in TaskKind)
        raise MarkerError(f"unknown task kind {raw!r} (one of {allowed})") from None


def marker_constructions(fields: dict[str, str]) -> list[str]:
    return [n for n in re.split(r"[\s,]+", fields.get("constructions", "")) if n]


def open_values(formal: str, language: Language) -> list[str]:
    """Names of the value definitions `formal` leaves open (the constructions by default)."""
    decls, holes = hole_decls(formal, language)
    return value_holes(decls, holes, language)


def construction_problem(
    formal: str, language: Language, kind: TaskKind, constructions: list[str]
) -> str | None:
    """Why these construction names do not fit the task, or None when they do.

    Each must be a definition that the task leaves open; a proof task has none."""
    if not constructions:
        return None
    if kind not in CONSTRUCTION_KINDS:
        return f"a {kind.value} task has no constructions (got {', '.join(constructions)})"
    decls, holes = hole_decls(formal, language)
    hole_set = set(holes)
    open_defs = {d.name for d in decls if d.index in hole_set and d.name}
    missing = [n for n in constructions if n not in open_defs]
    if missing:
        return (
            f"construction {missing[0]!r} is not a declaration the task leaves open "
            f"(open: {', '.join(sorted(n for n in open_defs if n)) or 'none'})"
        )
    return None
