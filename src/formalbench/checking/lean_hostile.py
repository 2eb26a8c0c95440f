"""Lean text that our lexer and Lean would read differently, and code run while elaborating.

The text layer is a pre-filter: where its reading of a candidate can differ from Lean's, the
candidate is refused rather than judged on a reading Lean does not share (a blank that
Python takes for one and Lean does not, U+00A0, U+3000 ..., is refused by the gate,
`core/hidden_chars.py`, before this layer). The cases here:

* Interpolated strings. Lean reads `{...}` inside the strings of `s!`, `m!`, `f!`,
  `throwError`, `logInfo`, `dbg_trace`, `panic!` ... as code; the lexer knows only the `x!"..."`
  forms. The braces of every string are therefore read as code too, and the forbidden words
  are looked for there.
* Code run at elaboration. `#eval`, `run_tac`, `run_cmd`, `run_elab`, `run_meta`, `elab`,
  `macro`, `syntax`, `initialize` ... run programs inside Lean: they can add declarations
  without the kernel (`addDecl` behind a tactic) or touch files. No proof needs them; they are
  refused wherever they stand in a command the candidate did not copy from the original (as
  the keyword of a command of their own, statement preservation judges them).
* A dangling `open X in` / `set_option o v in` at the very end would scope over the queries
  the checker appends (`#print axioms`, the identity queries): refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from formalbench.checking.decls import Decl
from formalbench.checking.preservation import context_changing
from formalbench.core.lexer import Token, tokenize, words
from formalbench.core.records import Finding, Language, Reason

META_WORDS = words(
    "#eval #eval! run_tac run_cmd run_elab run_meta elab elab_rules macro macro_rules syntax declare_syntax_cat initialize builtin_initialize addDecl addAndCompile evalExpr IO.FS IO.Process IO.appPath System.FilePath"
)
_META_PREFIXES = ("IO.FS.", "IO.Process.", "Lean.Environment.addDecl", "Lean.addDecl")
_BRACES = re.compile(r"(?<!\\)\{([^{}\"]*)\}")


def _meta_word(text: str) -> str | None:
    if text in META_WORDS:
        return text
    if text.startswith(_META_PREFIXES):
        return text
    return None


def _banned(text: str, banned: frozenset[str]) -> bool:
    return text in banned or text.rsplit(".", 1)[-1] in banned


def _braced_code(tok: Token) -> list[Token]:
    """The tokens of the `{...}` parts of a string literal, read as Lean code."""
    out: list[Token] = []
    for m in _BRACES.finditer(tok.text):
        out += tokenize(m.group(1), Language.lean)
    return out


def hostile_findings(
    decls: Sequence[Decl],
    forbidden: Iterable[str],
    exempt: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[Finding]:
    """Meta-programming words anywhere, and forbidden words inside string braces, in the
    commands not in `exempt` (those copied unchanged from the original)."""
    banned = frozenset(forbidden)
    findings: list[Finding] = []
    for d in decls:
        if d.index in exempt:
            continue
        for k, tok in enumerate(d.tokens):
            if k == d.head and context_changing(d):
                continue  # a `#eval` / `macro` command: statement preservation judges it
            inner = _braced_code(tok) if tok.kind == "string" and "{" in tok.text else []
            for t in [tok, *inner]:
                hit = _meta_word(t.text) if t.kind == "ident" else None
                if hit is None and t is not tok and _banned(t.text, banned):
                    hit = t.text
                if hit is None:
                    continue
                where = "inside a string's braces" if t is not tok else f"at line {tok.line}"
                findings.append(
                    Finding(
                        reason=Reason.forbidden_construct,
                        subject=hit,
                        line=tok.line,
                        column=tok.column,
                        message=f"`{hit}` {where}: code run while elaborating is not allowed",
                    )
                )
    last = decls[-1] if decls else None
    if last is not None and last.tokens[-1].text == "in" and last.index not in exempt:
        tok = last.tokens[-1]
        findings.append(
            Finding(
                reason=Reason.forbidden_construct,
                subject="in",
                line=tok.line,
                column=tok.column,
                message="the text ends with an `... in` prefix, which would scope over the "
                "checker's own queries",
            )
        )
    return findings
