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
no task needs them. So are the Coq commands that reach the file system or load code outside
the throw-away directory the backend compiles in: every form of `Extraction` (`Extraction
"f.ml" x`, `Separate`/`Recursive Extraction`, `Extraction Library`, and `Require Extraction`
with them, which writes nothing but serves only them), `Cd "dir"`, `Load`, `Redirect`,
`Declare ML Module`, `Add ML Path`, `Add [Rec] LoadPath` and `Print Universes "file"`. A
policy that edits the forbidden list must not be able to open these: they are a sandbox
matter, not a matter of proof style. None of them is in the policy list, whose entries are
single tokens; they are fixed here.

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
_COQ_ALWAYS = {  # a word that is refused wherever it stands -> what the finding names
    "bypass_check": "bypass_check",
    "Extraction": "Extraction",
    "Load": "Load",
    "Redirect": "Redirect",
    "LoadPath": "Add LoadPath",
}


# What the findings for commands that reach outside the throw-away directory are named: a
# candidate with one is never given to the assistant, not even with `compile_always`.
UNSAFE_TO_RUN = frozenset(
    {
        "Extraction",
        "Load",
        "Redirect",
        "Add LoadPath",
        "Cd",
        "Declare ML Module",
        "Add ML Path",
        "Print Universes to a file",
    }
)


def _coq_fixed(tokens: list[Token], i: int) -> str | None:
    """The always-refused Coq construct that starts at token i, if any (see module doc)."""
    text = tokens[i].text
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if text in _COQ_ALWAYS:
        return _COQ_ALWAYS[text]
    after = [t.text for t in tokens[i + 1 : i + 3]]
    if text == "Unset" and after[-1:] == ["Checking"] and after[0] in _COQ_KERNEL_SWITCHES:
        return f"Unset {after[0]} Checking"
    if text == "Cd" and nxt is not None and nxt.kind == "string":
        return "Cd"
    if text == "ML" and nxt is not None and nxt.text in ("Module", "Path"):
        return "Declare ML Module" if nxt.text == "Module" else "Add ML Path"
    if text == "Universes":  # `Print [Sorted] Universes [Subgraph (...)] "file".`
        for tok in tokens[i + 1 :]:
            if tok.kind == "end":
                break
            if tok.kind == "string":
                return "Print Universes to a file"
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
