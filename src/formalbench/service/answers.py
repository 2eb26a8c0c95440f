"""Answers in Kimina Lean Server's shape, from formalbench's own records.

A Kimina answer per item is `{"custom_id" | "id", "error", "response": {"env", "messages",
"sorries", "time"}, "time"}` (`env`, the Lean REPL's environment number, is always 0 here:
Kimina's client model requires the key): `error` is a string when the check itself failed (time out,
crash), `messages` are the assistant's `{"severity", "pos": {"line", "column"}, "endPos",
"data"}`, `sorries` the holes left. A Kimina client calls a proof valid when `error` is empty,
no message has severity `error` and `sorries` is empty; every answer here keeps that reading
true to formalbench: a strict verdict that fails sets `error` (its reasons and first finding)
and lists each finding as an error message, so a client that reads only `error`, or only
`messages`, gets the strict answer; the verdict itself is `verdict`, the object `formalbench
check --json` prints.

Positions: Coq's are the submitted text's own (lines from 1). Lean's are Kimina's: Kimina
runs a snippet's leading `import` and blank lines apart and sends the rest to the REPL, whose
positions it answers unchanged, so a line is counted from the first line after them
(`body_lines`); a client written for Kimina (formalbench's own `KiminaBackend` among them)
finds each message where Kimina would put it. A message inside those leading lines keeps its
own line. Columns are Lean's (from 0), sorries carry the REPL's `goal` and `proofState`.
"""

from __future__ import annotations

from typing import Any

from formalbench.backends.lean.messages import holes_from_sorry_warnings
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Hole,
    Language,
    Severity,
    Verdict,
)

_STATUS_ERRORS = {
    CheckStatus.timeout: "timeout: the check ran out of time",
    CheckStatus.out_of_memory: "out_of_memory: the check went over its memory cap",
    CheckStatus.crash: "backend_crash: the proof assistant died",
}


def body_lines(text: str, language: Language) -> int:
    """How many leading lines of `text` Kimina answers apart (Lean: its leading `import` and
    blank lines, as Kimina's `split_snippet` takes them); 0 for Coq."""
    if language != Language.lean:
        return 0
    from formalbench.backends.lean.kimina import leading_import_lines

    return leading_import_lines(text)


def _pos(line: int | None, column: int | None, offset: int = 0) -> dict[str, int]:
    if line is not None and line > offset:
        line -= offset
    return {"line": line or 0, "column": column or 0}


def message(d: Diagnostic, offset: int = 0) -> dict[str, Any]:
    """One diagnostic as a Kimina (Lean REPL) message, lines moved up by `offset`."""
    out: dict[str, Any] = {"severity": d.severity.value, "pos": _pos(d.line, d.column, offset)}
    if d.end_line is not None or d.end_column is not None:
        out["endPos"] = _pos(d.end_line or d.line, d.end_column, offset)
    out["data"] = d.message
    return out


def sorry(h: Hole, offset: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pos": _pos(h.line, h.column, offset),
        "endPos": _pos(h.end_line, h.end_column, offset),
        "goal": h.goal or "",
    }
    if h.proof_state is not None:
        out["proofState"] = h.proof_state
    return out


def compiled(result: CheckResult, offset: int = 0) -> tuple[str | None, dict[str, Any] | None]:
    """(error, response) of a compile-only check; `offset`: `body_lines` of the text."""
    error = _STATUS_ERRORS.get(result.status)
    if error is not None:
        detail = (result.detail or "").strip().splitlines()
        return (f"{error} ({detail[0][:300]})" if detail else error), None
    response = {
        "env": 0,  # the REPL environment in Kimina's answers; required by its client's model
        "messages": [message(d, offset) for d in result.diagnostics],
        "sorries": [sorry(h, offset) for h in result.holes],
        "time": round(result.elapsed, 3),
    }
    return None, response


def strict(
    verdict: Verdict, payload: dict[str, Any], offset: int = 0
) -> tuple[str | None, dict[str, Any]]:
    """(error, response) of a strict verdict; `payload` is the `check --json` object (its
    positions stay the text's own, as `check` prints them); `offset`: `body_lines`. Lean's
    sorry warnings are also `sorries` (the verdict keeps the messages, not the REPL's list)."""
    messages = [message(d, offset) for d in verdict.diagnostics]
    error = None
    if not verdict.passed:
        reasons = ", ".join(r.value for r in verdict.reasons) or "failed"
        first = verdict.findings[0].message if verdict.findings else ""
        first = " ".join(first.split())[:500]
        error = f"strict verdict: {reasons}" + (f": {first}" if first else "")
        for f in verdict.findings:
            d = Diagnostic(
                severity=Severity.error,
                message=f"[{f.reason.value}] {f.message}",
                line=f.line,
                column=f.column,
            )
            messages.append(message(d, offset))
    holes = holes_from_sorry_warnings(verdict.diagnostics)
    response = {
        "env": 0,
        "messages": messages,
        "sorries": [sorry(h, offset) for h in holes],
        "time": round(verdict.elapsed, 3),
    }
    return error, {"response": response, "verdict": payload}
