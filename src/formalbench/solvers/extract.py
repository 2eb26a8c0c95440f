"""Take the proof out of a model's answer, and only the proof.

Models answer in many shapes: one fenced block or several, the whole file back, the
theorem restated (sometimes subtly changed, sometimes renamed), or just the tactics. The
benchmark's statement is fixed, so whatever the shape, this module keeps only proof
scripts; the solver inserts them into the task's own text with `fill_holes`. A restated
theorem therefore never reaches the verifier: its statement is dropped here.

Block choice: blocks tagged for the task's assistant (or untagged) are preferred; among
them the last one that declares a target wins, else the last one (models tend to refine
their answer as they go). An answer without a fenced block is a formatting failure
(`FormatFailure`), which the solver records on the attempt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from formalbench.core.records import Language
from formalbench.solvers.proofs import declaration_proof, last_declaration, proof_only

_LANG_TAGS = {
    Language.lean: {"lean", "lean4", "lean 4"},
    Language.coq: {"coq", "rocq", "v", "gallina", "ltac"},
}
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\n]*?)[ \t]*$")


class FormatFailure(Exception):
    """The model's output holds no usable code (no fenced block, or an empty proof)."""


class HoleLike(Protocol):
    """What extraction needs of a hole: the declaration it belongs to (read only, so a
    frozen `HoleSite` is one)."""

    @property
    def decl(self) -> str | None: ...


@dataclass(frozen=True)
class CodeBlock:
    tag: str  # the fence's info string, lower-cased ("" when untagged)
    body: str
    closed: bool  # False when the output stopped inside the block (token limit)


def code_blocks(text: str) -> list[CodeBlock]:
    """Every fenced block of `text`, in order; an unterminated last block is kept."""
    blocks: list[CodeBlock] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, tag = opening.group(1), opening.group(2).strip().lower()
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            closing = _FENCE.match(lines[i])
            if (
                closing
                and not closing.group(2)
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
            ):
                closed = True
                break
            body.append(lines[i])
            i += 1
        blocks.append(CodeBlock(tag=tag, body="\n".join(body), closed=closed))
        i += 1
    return blocks


def pick_block(output: str, language: Language, names: Sequence[str] = ()) -> CodeBlock:
    """The block that holds the answer; `FormatFailure` when there is none."""
    blocks = code_blocks(output)
    if not blocks:
        raise FormatFailure("the model output has no fenced code block")
    tags = _LANG_TAGS[language]
    preferred = [b for b in blocks if b.tag in tags or not b.tag] or blocks
    for block in reversed(preferred):
        if any(declaration_proof(block.body, n, language) for n in names if n):
            return block
    return preferred[-1]


def extract_fills(
    output: str, language: Language, holes: Sequence[HoleLike], *, whole_answer: bool = True
) -> list[str]:
    """One proof script per hole, taken from the model's `output`.

    With `whole_answer` the model may have answered with whole declarations: a hole takes
    the proof of the declaration of its name. A single hole also accepts a proof-only
    answer, or the proof of a renamed restatement (its last declaration). Without
    `whole_answer` (the sequential solver asks for one hole's proof) the block is the proof.
    """
    if not holes:
        raise FormatFailure("the task has no hole to fill")
    names = [h.decl for h in holes if h.decl]
    block = pick_block(output, language, names if whole_answer else ())
    return fills_from_code(block.body, language, holes, whole_answer=whole_answer)


def fills_from_code(
    code: str, language: Language, holes: Sequence[HoleLike], *, whole_answer: bool = True
) -> list[str]:
    """`extract_fills` for code already taken out of its block (an agent's submission)."""
    if not holes:
        raise FormatFailure("the task has no hole to fill")
    if not whole_answer:
        return [_nonempty(proof_only(code, language), None)]
    fills: list[str] = []
    for hole in holes:
        found = declaration_proof(code, hole.decl, language) if hole.decl else None
        if found is None and len(holes) == 1:
            last = last_declaration(code, language)
            found = declaration_proof(code, last, language) if last else None
            if found is None:
                fills.append(_nonempty(proof_only(code, language), hole.decl))
                continue
        if found is None:
            raise FormatFailure(f"the answer has no proof for `{hole.decl or 'an unnamed goal'}`")
        fills.append(_nonempty(found, hole.decl))
    return fills


def _nonempty(script: str, name: str | None) -> str:
    if not script.strip():
        raise FormatFailure(f"the answer's proof{f' of `{name}`' if name else ''} is empty")
    return script
