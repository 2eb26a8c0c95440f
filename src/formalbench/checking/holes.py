"""Where the holes of a formal text are, and how to fill them with tactic scripts.

A hole is what a prover must replace: Lean `sorry` (or the `admit` tactic), a Lean
declaration whose proof is empty (`... := by` or `... :=` at its end, the form in which
DeepSeek-style JSONL ships statements), a Coq `Admitted.` proof, a Coq proof left open (a
`Proof.` with no end, as in many miniF2F-Coq files, or a statement with no proof at all), and
the Coq `admit` tactic. Holes come from the token stream, so a `sorry` in a comment or string
is none, while one in a macro body is (with `decl` None: it belongs to no named declaration).

Filling takes tactic scripts. A Lean term-mode hole becomes `by <script>` (parenthesised
where more of the term follows on the same line), a tactic hole becomes the script, and
multi-line scripts are re-indented to the block they land in. A Coq whole-proof hole becomes
`Proof.` / script / `Qed.` keeping an existing `Proof.` line once; an `admit.` becomes the
script, and once every `admit` of a proof is filled its closing `Admitted.` becomes `Qed.`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from formalbench.checking.decls import (
    COQ_CLOSERS,
    COQ_VALUE_KINDS,
    LEAN_NAMED,
    Decl,
    coq_head,
    sentences,
    split_decls,
)
from formalbench.checking.lean_modes import COMBINATORS, lean_mode
from formalbench.core.errors import InputError
from formalbench.core.lexer import Token, words
from formalbench.core.records import Language

_LEAN_HOLES = frozenset({"sorry", "admit"})
_NO_WRAP_AFTER = words(") ] ⟩ } , | :=")


@dataclass(frozen=True, slots=True)
class HoleSite:
    """One hole: `text[start:end]` is what a fill replaces (empty for an open proof)."""

    start: int
    end: int
    line: int
    column: int
    mode: str  # "term" | "tactic" (Lean sorry, Coq admit) | "proof" (Coq whole proof)
    decl: str | None  # the enclosing declaration's full name
    token: str = "sorry"  # sorry, admit, Admitted, Proof (a bare `Proof.` ...), "" (empty)
    indent: int = 0  # column for the continuation lines of a multi-line fill
    wrap: bool = False  # the fill must be parenthesised to keep the surrounding term intact
    after_by: bool = False  # Lean: the hole directly follows `by` on the same line
    closer: tuple[int, int] | None = None  # Coq: the `Admitted` that becomes `Qed` once filled
    opens: bool = False  # Coq: the fill must open the proof with `Proof.` (there is none)


def find_holes(text: str, language: Language) -> list[HoleSite]:
    """Every hole of `text`, in text order."""
    return holes_in(text, split_decls(text, language), language)


@lru_cache(maxsize=512)
def hole_decls(text: str, language: Language) -> tuple[list[Decl], frozenset[int]]:
    """The declarations of `text` and the indices of those holding a hole. Cached: a run
    verifies many candidates (samples, repair turns) against the same original."""
    decls = split_decls(text, language)
    starts = [h.start for h in holes_in(text, decls, language)]
    return decls, frozenset(d.index for d in decls if any(d.start <= s <= d.end for s in starts))


def holes_in(text: str, decls: Sequence[Decl], language: Language) -> list[HoleSite]:
    """The holes of `text` given its declarations (as `split_decls` returns them)."""
    holes: list[HoleSite] = []
    for d in decls:
        if language == Language.lean:
            holes.extend(_lean_holes(text, d))
        else:
            holes.extend(_coq_holes(d))
    holes.sort(key=lambda h: h.start)
    return holes


def target_names(original: str, language: Language) -> list[str]:
    """Names of the declarations of `original` that contain a hole: what a prover must prove."""
    names: list[str] = []
    for hole in find_holes(original, language):
        if hole.decl is not None and hole.decl not in names:
            names.append(hole.decl)
    return names


# --- Lean ---------------------------------------------------------------------------------
def _line_indent(text: str, offset: int) -> int:
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:offset]
    return len(line) - len(line.lstrip(" "))


def _lean_holes(text: str, d: Decl) -> list[HoleSite]:
    toks = d.tokens
    out: list[HoleSite] = []
    for k, tok in enumerate(toks):
        if tok.kind != "ident" or tok.text not in _LEAN_HOLES:
            continue
        mode = "tactic" if tok.text == "admit" else lean_mode(toks, k)
        prev = toks[k - 1] if k else None
        after_by = prev is not None and prev.text == "by" and prev.line == tok.line
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if mode == "term":
            wrap = nxt is not None and nxt.line == tok.line and nxt.text not in _NO_WRAP_AFTER
        else:
            wrap = prev is not None and prev.text in COMBINATORS
        indent = _line_indent(text, tok.offset) + 2 if mode == "term" or after_by else tok.column
        site = _site(tok, tok.end, mode, d.name, tok.text, indent=indent, wrap=wrap)
        out.append(replace(site, after_by=after_by))
    body = [t.text for t in d.body]
    if (d.kind in LEAN_NAMED or d.kind == "example") and body in ([":="], [":=", "by"]):
        mode = "tactic" if body[-1] == "by" else "term"
        indent = _line_indent(text, d.start) + 2
        out.append(_site(toks[-1], None, mode, d.name, "", indent=indent))
    return out


def _site(
    tok: Token, end: int | None, mode: str, decl: str | None, word: str, **kw: Any
) -> HoleSite:
    """A hole spanning from `tok` to `end`, or an empty one just after `tok` if `end` is None."""
    if end is None:
        return HoleSite(
            tok.end, tok.end, tok.line, tok.column + len(tok.text), mode, decl, word, **kw
        )
    return HoleSite(tok.offset, end, tok.line, tok.column, mode, decl, word, **kw)


# --- Coq ----------------------------------------------------------------------------------
def _coq_holes(d: Decl) -> list[HoleSite]:
    sents = sentences(d.tokens)
    statement, proof = sents[0], sents[1:]
    theorem_like = d.kind == "Theorem" or (proof and statement[-1].kind == "end")
    if not theorem_like or statement[-1].kind != "end" or d.body_start < len(statement) - 1:
        return []
    if proof and _proof_term(proof[-1]):
        return []  # `Proof <term>.` gives the whole proof and closes it (EqdepFacts.v)
    out: list[HoleSite] = []
    closing = proof[-1] if proof and proof[-1][coq_head(proof[-1])].text in COQ_CLOSERS else None
    closer = closing[coq_head(closing)] if closing else None
    admitted = (closer.offset, closer.end) if closer and closer.text == "Admitted" else None
    for sent in proof:
        for i, tok in enumerate(sent):
            if tok.kind == "ident" and tok.text in ("admit", "give_up"):
                dot = i + 1 < len(sent) and sent[i + 1].kind == "end"
                end = sent[i + 1].end if dot else tok.end
                out.append(
                    _site(tok, end, "tactic", d.name, tok.text, indent=tok.column, closer=admitted)
                )
    if out or (closer is not None and closer.text != "Admitted"):
        return out
    steps = proof[:-1] if closing is not None else proof
    bare = len(steps) == 1 and [t.text for t in steps[0]] == ["Proof", "."]
    # `Proof. Admitted.` / `Admitted.` / `Proof. tac. Admitted.`
    if closing is not None and closer is not None:
        first = steps[0][0] if bare else closer
        return [
            _site(
                first,
                closing[-1].end,
                "proof",
                d.name,
                "Proof" if bare else "Admitted",
                opens=not steps,
            )
        ]
    if bare:  # a `Proof.` left open
        return [_site(steps[0][0], steps[0][-1].end, "proof", d.name, "Proof")]
    last = (steps[-1] if steps else statement)[-1]
    return [_site(last, None, "proof", d.name, "", opens=not steps)]


def _proof_term(sent: list[Token]) -> bool:
    """`Proof <term>.`, not `Proof.`, `Proof using ...` or `Proof with ...`."""
    h = coq_head(sent)
    words_ = [t.text for t in sent[h:]]
    return words_[0] == "Proof" and len(words_) > 2 and words_[1] not in ("using", "with")


# --- filling ------------------------------------------------------------------------------
def _script_lines(fill: str, index: int) -> list[str]:
    lines = [ln.rstrip() for ln in textwrap.dedent(fill.expandtabs(2)).strip("\n").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if not lines or not any(lines):
        raise InputError(f"fill {index + 1} is empty: a hole needs a tactic script")
    return lines


def _indented(lines: Sequence[str], indent: int) -> str:
    pad = " " * indent
    return "\n".join(pad + ln if ln else "" for ln in lines)


def _lean_fill(hole: HoleSite, lines: list[str]) -> str:
    multi = len(lines) > 1
    if hole.token == "":
        if hole.mode == "tactic":
            return "\n" + _indented(lines, hole.indent)
        return " by\n" + _indented(lines, hole.indent) if multi else " by " + lines[0]
    if hole.mode == "tactic":
        if not multi:
            return lines[0]
        if hole.after_by:
            return "\n" + _indented(lines, hole.indent)
        if hole.wrap:
            return "(" + lines[0] + "\n" + _indented(lines[1:], hole.column + 1) + ")"
        return lines[0] + "\n" + _indented(lines[1:], hole.column)
    body = "by\n" + _indented(lines, hole.indent) if multi else "by " + lines[0]
    return f"({body})" if hole.wrap else body


def _coq_fill(hole: HoleSite, lines: list[str], end: str = "Qed") -> str:
    script = "\n".join(lines)
    if not script.rstrip().endswith((".", "}")):
        script += "."
    if hole.mode == "tactic":
        return script.replace("\n", "\n" + " " * hole.indent)
    if hole.token == "Proof" or (hole.opens and hole.token):
        return f"Proof.\n{script}\n{end}."
    if hole.token == "Admitted":
        return f"{script}\n{end}."
    opening = "Proof.\n" if hole.opens else ""
    return f"\n{opening}{script}\n{end}."


def _coq_values(text: str) -> set[str]:
    """Names of the Coq value definitions of `text` (`Definition answer : R. Admitted.`):
    their filled proof ends with `Defined.`, since a value closed by `Qed.` is opaque and the
    theorem about it could not use what it is (construction tasks, AMBER)."""
    return {d.name for d in split_decls(text, Language.coq) if d.name and d.kind in COQ_VALUE_KINDS}


def fill_holes(text: str, language: Language, fills: Sequence[str]) -> str:
    """`text` with its first `len(fills)` holes replaced, in order, by the given scripts."""
    holes = find_holes(text, language)
    if len(fills) > len(holes):
        raise InputError(f"{len(fills)} fills given but the text has {len(holes)} holes")
    edits: list[tuple[int, int, str]] = []
    filled_admits: dict[tuple[int, int], int] = {}
    values = _coq_values(text) if language == Language.coq else set()
    ends: dict[tuple[int, int], str] = {}
    for i, (hole, fill) in enumerate(zip(holes, fills, strict=False)):
        lines = _script_lines(fill, i)
        closing = "Defined" if hole.decl in values else "Qed"
        new = (
            _lean_fill(hole, lines)
            if language == Language.lean
            else _coq_fill(hole, lines, closing)
        )
        edits.append((hole.start, hole.end, new))
        if hole.mode == "tactic" and hole.closer:
            filled_admits[hole.closer] = filled_admits.get(hole.closer, 0) + 1
            ends[hole.closer] = closing
    for closer, count in filled_admits.items():
        total = sum(1 for h in holes if h.mode == "tactic" and h.closer == closer)
        if count == total:
            edits.append((closer[0], closer[1], ends[closer]))
    edits.sort()
    out: list[str] = []
    last = 0
    for start, end, new in edits:
        piece = text[last:start]
        if new.startswith("\n"):
            piece = piece.rstrip(" ")
        out.append(piece)
        out.append(new)
        last = end
    out.append(text[last:])
    return "".join(out)
