"""Build candidate files: the task's own text with proofs put in, never the model's text.

Whatever a model restates is dropped by `extract`; here the proofs it gave go back into the
original file, through `fill_holes` (hole by hole) or, for a declaration whose hole is only
a part of a given proof, by replacing that declaration's proof as a whole. Either way every
statement and every declaration around it stays the task's.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from formalbench.checking.decls import sentences, split_decls
from formalbench.checking.holes import HoleSite, fill_holes, find_holes
from formalbench.core.records import Language
from formalbench.solvers.extract import FormatFailure, fills_from_code, pick_block
from formalbench.solvers.proofs import declaration_proof, mask

_SENTINEL = "formalbench_placeholder_7f3a"
MARKERS = {Language.lean: "/- YOUR PROOF HERE -/", Language.coq: "(* YOUR PROOF HERE *)"}


def whole_body(text: str, language: Language, hole: HoleSite) -> bool:
    """True when the hole is the entire proof of its declaration (`:= sorry`, `:= by sorry`,
    `Proof. Admitted.`, a proof left open), so a declaration's proof can fill it directly."""
    if language == Language.coq:
        return hole.mode == "proof"
    if hole.token == "":
        return True
    head = text[: hole.start]
    assign = head.rfind(":=")
    if assign < 0 or head[assign + 2 :].strip() not in ("", "by"):
        return False
    tail = text[hole.end :]
    nxt = re.search(r"(?m)^\S", tail)
    return not tail[: nxt.start() if nxt else len(tail)].strip()


def from_answer(original: str, language: Language, output: str) -> str:
    """The candidate file for a whole-proof answer: its code block's proofs in `original`."""
    holes = find_holes(original, language)
    if not holes:
        raise FormatFailure("the task has no hole to fill")
    block = pick_block(output, language, [h.decl for h in holes if h.decl])
    return from_code(original, language, block.body)


def from_code(original: str, language: Language, code: str) -> str:
    """The candidate file for answer code (a block's body, or an agent's run / submit)."""
    holes = find_holes(original, language)
    if not holes:
        raise FormatFailure("the task has no hole to fill")
    per_decl: dict[str | None, int] = {}
    for h in holes:
        per_decl[h.decl] = per_decl.get(h.decl, 0) + 1
    simple = all(per_decl[h.decl] == 1 and whole_body(original, language, h) for h in holes) or (
        len(holes) == 1 and not (holes[0].decl and declaration_proof(code, holes[0].decl, language))
    )
    if simple:
        fills = fills_from_code(code, language, holes)
        return fill_holes(
            original, language, [_with_requires(f, code, original, language) for f in fills]
        )
    # some holes sit inside given proofs: each declaration gets the answer's whole proof
    decls = list(dict.fromkeys(h.decl for h in holes))
    if None in decls:
        raise FormatFailure("the task has a hole outside any named declaration")
    reps: dict[str, str] = {}
    for name in decls:
        assert name is not None
        proof = declaration_proof(code, name, language)
        if proof is None or not proof.strip():
            raise FormatFailure(f"the answer has no proof for `{name}`")
        reps[name] = _with_requires(proof, code, original, language)
    return replace_proofs(original, language, reps)


_COQ_REQUIRE = re.compile(
    r"(?m)^[ \t]*((?:From\s+[\w.]+\s+)?Require\s+(?:Import\s+|Export\s+)?[^.]*(?:\.[\w][^.]*)*\.)(?=\s|$)"
)


def _with_requires(fill: str, code: str, original: str, language: Language) -> str:
    """A Coq fill preceded by the `Require` commands the answer added above its proofs.

    Models often import what their proof needs (`Require Import Lra.`); the statement part
    of their answer is dropped, so those lines would be lost. Coq accepts `Require` inside a
    proof, so they move there, and the task's header stays as it is.
    """
    if language != Language.coq:
        return fill
    have = " ".join(original.split())
    extra = [
        r
        for r in dict.fromkeys(
            " ".join(m.group(1).split()) for m in _COQ_REQUIRE.finditer(mask(code, language))
        )
        if r not in have and r not in " ".join(fill.split())
    ]
    return "\n".join([*extra, fill]) if extra else fill


def replace_proofs(original: str, language: Language, proofs: dict[str, str]) -> str:
    """`original` with the whole proof of each named declaration replaced by a script."""
    edits: list[tuple[int, int, str]] = []
    for decl in split_decls(original, language):
        if decl.name not in proofs:
            continue
        script = textwrap.dedent(proofs[decl.name]).strip()
        if language == Language.lean:
            if decl.body_start >= len(decl.tokens) or decl.tokens[decl.body_start].text != ":=":
                raise FormatFailure(f"`{decl.name}` has no `:=` proof to replace")
            start = decl.tokens[decl.body_start].offset
            line_start = original.rfind("\n", 0, decl.start) + 1
            base = len(original[line_start : decl.start]) + 2
            new = ":= by\n" + textwrap.indent(script, " " * base)
        else:
            statement = sentences(decl.tokens)[0]
            start = statement[-1].end
            if not script.endswith((".", "}")):
                script += "."
            new = f"\nProof.\n{script}\nQed."
        edits.append((start, decl.end, new))
    missing = set(proofs) - {d.name for d in split_decls(original, language)}
    if missing:
        raise FormatFailure(f"no declaration {sorted(missing)[0]} in the task")
    out, last = [], 0
    for start, end, new in sorted(edits):
        out += [original[last:start], new]
        last = end
    out.append(original[last:])
    return "".join(out)


def with_placeholder(text: str, language: Language, solved: Sequence[str]) -> tuple[str, str]:
    """`text` with the holes before it filled by `solved` and the next hole shown as a
    placeholder comment; returns (that text, the placeholder)."""
    marker = MARKERS[language]
    sentinel = _SENTINEL + ("." if language == Language.coq else "")
    filled = fill_holes(text, language, [*solved, sentinel])
    return filled.replace(sentinel, marker, 1), marker
