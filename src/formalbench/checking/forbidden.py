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

Coq's switches that turn a kernel check off (`Unset Guard Checking`, `Unset Positivity
Checking`, `Unset Universe Checking`, the `bypass_check` attribute) are refused always, like
Lean's `debug.skipKernelTC` in the default list: with them a proof of False is accepted, and
no task needs them. They are not in the policy list because `VerifierPolicy` has no Coq entry
for multi-word commands; they are fixed here.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.checking.decls import Decl
from formalbench.checking.lexer import Token
from formalbench.core.records import Finding, Language, Reason


def _matches(text: str, plain: frozenset[str], exact: frozenset[str]) -> str | None:
    if text in exact or text in plain:
        return text
    last = text.rsplit(".", 1)[-1]
    if last != text and last in plain:
        return last
    return None


_COQ_KERNEL_SWITCHES = frozenset({"Guard", "Positivity", "Universe"})


def _coq_kernel_switch(tokens: list[Token], i: int) -> str | None:
    tok = tokens[i]
    if tok.text == "bypass_check":
        return "bypass_check"
    if (
        tok.text == "Unset"
        and i + 2 < len(tokens)
        and tokens[i + 1].text in _COQ_KERNEL_SWITCHES
        and tokens[i + 2].text == "Checking"
    ):
        return f"Unset {tokens[i + 1].text} Checking"
    return None


def forbidden_findings(
    decls: Iterable[Decl],
    forbidden: Iterable[str],
    exempt: set[int] = frozenset(),  # type: ignore[assignment]
    language: Language = Language.lean,
) -> list[Finding]:
    """One finding per forbidden token in the commands not in `exempt` (indices)."""
    items = list(forbidden)
    plain = frozenset(i for i in items if "." not in i)
    exact = frozenset(i for i in items if "." in i)
    findings: list[Finding] = []
    for d in decls:
        if d.index in exempt:
            continue
        for i, tok in enumerate(d.tokens):
            if tok.kind not in ("ident", "symbol"):
                continue
            hit = _matches(tok.text, plain, exact)
            if hit is None and language == Language.coq:
                hit = _coq_kernel_switch(d.tokens, i)
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
