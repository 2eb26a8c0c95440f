"""Lean's messages as `Diagnostic`s, from either of the two JSON shapes Lean tools write.

`lake env lean --json FILE` writes one JSON object a line (`SerialMessage`: `severity` is
"information" | "warning" | "error", the text is `data`, there may be a `kind`); the REPL
writes the same message inside its replies with `severity` "info" and no `kind`. Toolchains
differ in details a parser must survive: the key order, a missing or null `endPos`, a missing
`kind`, and the wording of the sorry warning (quotes or backticks). Positions stay Lean's
own: lines from 1, columns from 0 (what `Diagnostic` promises), shifted only by a line offset
where the text Lean saw started further down the user's file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from formalbench.core.records import Diagnostic, Hole, Severity

SORRY_KIND = "hasSorry"
_SORRY_TEXT = re.compile(r"^declaration uses ['`]sorry['`]")
_SEVERITIES = {
    "error": Severity.error,
    "warning": Severity.warning,
    "information": Severity.info,
    "info": Severity.info,
    "trace": Severity.info,
}


def severity_of(raw: object) -> Severity:
    """Map Lean's severity word to ours; anything unknown is treated as an error (fail safe)."""
    return _SEVERITIES.get(str(raw).lower(), Severity.error)


def is_sorry_warning(text: str) -> bool:
    """True for Lean's "declaration uses 'sorry'" warning in either quoting."""
    return bool(_SORRY_TEXT.match(text.strip()))


def _pos(raw: object) -> tuple[int | None, int | None]:
    if not isinstance(raw, Mapping):
        return None, None
    line, column = raw.get("line"), raw.get("column")
    line = line if isinstance(line, int) and line > 0 else None  # the REPL writes 0 for "none"
    column = column if isinstance(column, int) and column >= 0 and line is not None else None
    return line, column


def _shift(line: int | None, offset: int) -> int | None:
    return None if line is None else line + offset


def message_to_diagnostic(msg: Mapping[str, Any], line_offset: int = 0) -> Diagnostic:
    """One Lean message (REPL or `--json` shape) as a Diagnostic, lines moved by `line_offset`."""
    text = str(msg.get("data", ""))
    caption = msg.get("caption")
    if caption and not text:
        text = str(caption)
    line, column = _pos(msg.get("pos"))
    end_line, end_column = _pos(msg.get("endPos"))
    kind = msg.get("kind")
    if not isinstance(kind, str) or kind in ("", "[anonymous]"):
        kind = None
    if kind is None and is_sorry_warning(text):
        kind = SORRY_KIND  # the REPL and older toolchains do not tag it; tag it for everyone
    file = msg.get("fileName")
    return Diagnostic(
        severity=severity_of(msg.get("severity")),
        message=text,
        file=None if file is None else str(file),
        line=_shift(line, line_offset),
        column=column,
        end_line=_shift(end_line, line_offset),
        end_column=end_column,
        kind=kind,
    )


def sorry_to_hole(entry: Mapping[str, Any], line_offset: int = 0) -> Hole:
    """One entry of a REPL reply's `sorries` list as a Hole (goal and proof-state id kept)."""
    line, column = _pos(entry.get("pos"))
    end_line, end_column = _pos(entry.get("endPos"))
    state = entry.get("proofState")
    goal = entry.get("goal")
    return Hole(
        line=_shift(line, line_offset),
        column=column,
        end_line=_shift(end_line, line_offset),
        end_column=end_column,
        goal=goal if isinstance(goal, str) else None,
        proof_state=state if isinstance(state, int) else None,
    )


def parse_json_output(text: str) -> tuple[list[Diagnostic], list[str]]:
    """Parse the stdout of `lean --json`: the messages, and the lines that were not messages.

    Lines that are not JSON objects (e.g. "Stack overflow detected. Aborting.") are returned
    apart so that the caller can report them; they never raise.
    """
    diagnostics: list[Diagnostic] = []
    other: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        try:
            obj = json.loads(stripped) if stripped.startswith("{") else None
        except ValueError:
            obj = None
        if isinstance(obj, dict) and ("data" in obj or "severity" in obj):
            diagnostics.append(message_to_diagnostic(obj))
        else:
            other.append(line)
    return diagnostics, other


def holes_from_sorry_warnings(diagnostics: list[Diagnostic]) -> list[Hole]:
    """Holes for a run that reports no goals (per-file mode): one per sorry warning."""
    return [
        Hole(line=d.line, column=d.column, end_line=d.end_line, end_column=d.end_column)
        for d in diagnostics
        if d.kind == SORRY_KIND or (d.severity == Severity.warning and is_sorry_warning(d.message))
    ]
