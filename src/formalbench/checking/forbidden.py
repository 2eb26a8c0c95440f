"""Forbidden constructs: holes and escape hatches a finished proof must not contain.

The list comes from `VerifierPolicy.forbidden_for(language)` (Lean: `sorry`, `admit`,
`sorryAx`, `axiom`, `exact?`, `apply?`, `native_decide`, `debug.skipKernelTC`,
`implemented_by`, `extern`, `unsafe`, `#exit`; Coq: `Admitted`, `admit`, `Abort`, `Axiom`,
`Parameter`, `Hypothesis`, ...). Matching is on code tokens, so comments and strings never
match, macro bodies and syntax quotations always do. A dotted entry matches the whole name;
a plain entry also matches as the last part of a qualified name (`_root_.sorryAx`).

Commands the candidate copied unchanged from the original's hole-free part are exempt: a task
may itself declare a `Parameter` or an `axiom` (miniF2F-Coq `amc12a_2016_p3` does), and that
is part of the statement, not an escape taken by the prover.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.checking.decls import Decl
from formalbench.core.records import Finding, Reason


def _matches(text: str, plain: frozenset[str], exact: frozenset[str]) -> str | None:
    if text in exact or text in plain:
        return text
    last = text.rsplit(".", 1)[-1]
    if last != text and last in plain:
        return last
    return None


def forbidden_findings(
    decls: Iterable[Decl],
    forbidden: Iterable[str],
    exempt: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[Finding]:
    """One finding per forbidden token in the commands not in `exempt` (indices)."""
    items = list(forbidden)
    plain = frozenset(i for i in items if "." not in i)
    exact = frozenset(i for i in items if "." in i)
    findings: list[Finding] = []
    for d in decls:
        if d.index in exempt:
            continue
        for tok in d.tokens:
            if tok.kind not in ("ident", "symbol"):
                continue
            hit = _matches(tok.text, plain, exact)
            if hit is None:
                continue
            where = f" in `{d.name}`" if d.name else ""
            findings.append(
                Finding(
                    reason=Reason.forbidden_construct,
                    subject=hit,
                    line=tok.line,
                    column=tok.column,
                    message=f"forbidden `{hit}`{where} at line {tok.line}, column {tok.column}",
                )
            )
    return findings
