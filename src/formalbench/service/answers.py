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
"""

from __future__ import annotations

from typing import Any

from formalbench.core.records import CheckResult, CheckStatus, Diagnostic, Hole, Severity, Verdict

_STATUS_ERRORS = {
    CheckStatus.timeout: "timeout: the check ran out of time",
    CheckStatus.out_of_memory: "out_of_memory: the check went over its memory cap",
    CheckStatus.crash: "backend_crash: the proof assistant died",
}


def _pos(line: int | None, column: int | None) -> dict[str, int]:
    return {"line": line or 0, "column": column or 0}


def message(d: Diagnostic) -> dict[str, Any]:
    """One diagnostic as a Kimina (Lean REPL) message."""
    out: dict[str, Any] = {"severity": d.severity.value, "pos": _pos(d.line, d.column)}
    if d.end_line is not None or d.end_column is not None:
        out["endPos"] = _pos(d.end_line or d.line, d.end_column)
    out["data"] = d.message
    return out


def sorry(h: Hole) -> dict[str, Any]:
    out: dict[str, Any] = {"pos": _pos(h.line, h.column), "endPos": _pos(h.end_line, h.end_column)}
    out["goal"] = h.goal or ""
    return out


def compiled(result: CheckResult) -> tuple[str | None, dict[str, Any] | None]:
    """(error, response) of a compile-only check."""
    error = _STATUS_ERRORS.get(result.status)
    if error is not None:
        detail = (result.detail or "").strip().splitlines()
        return (f"{error} ({detail[0][:300]})" if detail else error), None
    response = {
        "env": 0,  # the REPL environment in Kimina's answers; required by its client's model
        "messages": [message(d) for d in result.diagnostics],
        "sorries": [sorry(h) for h in result.holes],
        "time": round(result.elapsed, 3),
    }
    return None, response


def strict(verdict: Verdict, payload: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(error, response) of a strict verdict; `payload` is the `check --json` object."""
    messages = [message(d) for d in verdict.diagnostics]
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
            messages.append(message(d))
    response = {"env": 0, "messages": messages, "sorries": [], "time": round(verdict.elapsed, 3)}
    return error, {"response": response, "verdict": payload}
