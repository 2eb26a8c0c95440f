"""Forbidden constructs: holes and escape hatches a finished proof must not contain.

The list comes from `VerifierPolicy.forbidden_for(language)` (Lean: `sorry`, `admit`,
`sorryAx`, `axiom`, `exact?`, `apply?`, CAM-Bench's `rw?`, `simp?` (with `simp?!`,
`simp_all?`, `dsimp?`), `aesop?`, `solve_by_elim?`, `library_search` and `opaque`,
`native_decide`, `debug.skipKernelTC`, `implemented_by`, `extern`, `unsafe`, `#exit`; Coq: `Admitted`, `admit`, `Abort`, `Axiom`,
`Parameter`, `Hypothesis`, ...). Matching is on code tokens, so comments and strings never
match, macro bodies and syntax quotations always do. A dotted entry matches the whole name;
a plain entry also matches as the last part of a qualified name (`_root_.sorryAx`).

Commands the candidate copied unchanged from the original's hole-free part are exempt: a task
may itself declare a `Parameter` or an `axiom` (miniF2F-Coq `amc12a_2016_p3` does), and that
is part of the statement, not an escape taken by the prover.

Coq's switches that turn a kernel check off (`Unset Guard Checking`, `Unset Positivity
Checking`, `Unset Universe Checking`, the `bypass_check` attribute) are refused always, like
Lean's `debug.skipKernelTC` in the default list: with them a proof of False is accepted, and
no task needs them. A policy that edits the forbidden list cannot open them. With coqc this
is an early refusal of what the kernel comparison refuses too (every object of the
candidate with a kernel check off is in its dump's `unsafe` list, and a target that rests on
one has a `guarded` / `positive` / `type_in_type` assumption by the kernel's constructor:
`checking/coq_compare`); without coqc
(`check --static-only`) it is the only check. Commands that reach the file system (`Load`,
`Extraction`, `Cd` ...) are the gate's (`core/gate.py`), which runs before this layer.

Names are compared without their «» quotes: Lean reads `«debug».skipKernelTC` and `«sorry»`
as `debug.skipKernelTC` and `sorry`.
"""

from __future__ import annotations

from collections.abc import Iterable

from formalbench.checking.decls import Decl
from formalbench.checking.lean_modifiers import aesop_phase
from formalbench.core.lexer import Token, plain_name
from formalbench.core.records import Finding, Language, Reason


def _matches(text: str, plain: frozenset[str], exact: frozenset[str]) -> str | None:
    text = plain_name(text)
    if text in exact or text in plain:
        return text
    last = text.rsplit(".", 1)[-1]
    if last != text and last in plain:
        return last
    return None


_COQ_KERNEL_SWITCHES = frozenset({"Guard", "Positivity", "Universe"})


def _coq_fixed(tokens: list[Token], i: int) -> str | None:
    """The always-refused Coq kernel switch that starts at token i, if any (see module doc)."""
    if tokens[i].text == "bypass_check":
        return "bypass_check"
    after = [t.text for t in tokens[i + 1 : i + 3]]
    if tokens[i].text == "Unset" and after[-1:] == ["Checking"]:
        return f"Unset {after[0]} Checking" if after[0] in _COQ_KERNEL_SWITCHES else None
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
                hit = _coq_fixed(d.tokens, i)
            if hit is None or (hit == "unsafe" and aesop_phase(d.tokens, i)):
                continue  # Aesop's rule phase `unsafe` is not Lean's modifier (lean_modifiers)
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
