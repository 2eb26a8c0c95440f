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
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from formalbench.core.records import Language

_LANG_TAGS = {
    Language.lean: {"lean", "lean4", "lean 4"},
    Language.coq: {"coq", "rocq", "v", "gallina", "ltac"},
}
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`\n]*?)[ \t]*$")


class FormatFailure(Exception):
    """The model's output holds no usable code (no fenced block, or an empty proof)."""


class HoleLike(Protocol):
    """What extraction needs of a hole: the declaration it belongs to."""

    decl: str | None


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
        if any(_find_decl(block.body, n, language) for n in names if n):
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
        found = _find_decl(code, hole.decl, language) if hole.decl else None
        if found is None and len(holes) == 1:
            last = _last_decl(code, language)
            found = _find_decl(code, last, language) if last else None
            if found is None:
                fills.append(_nonempty(proof_only(code, language), hole.decl))
                continue
        if found is None:
            raise FormatFailure(f"the answer has no proof for `{hole.decl or 'an unnamed goal'}`")
        fills.append(_nonempty(found, hole.decl))
    return fills


def declaration_proof(code: str, name: str, language: Language) -> str | None:
    """The proof script of declaration `name` in `code`, or None if it is not declared."""
    return _find_decl(code, name, language)


def proof_only(code: str, language: Language) -> str:
    """Normalise a proof-only answer into a tactic script."""
    if language == Language.coq:
        return _coq_strip_wrappers(code)
    text = code.strip()
    if text.startswith(":="):
        text = text[2:].strip()
    if re.match(r"by\b", text):
        return _lean_after_by(text[2:])
    return textwrap.dedent(code).strip()


def _nonempty(script: str, name: str | None) -> str:
    if not script.strip():
        raise FormatFailure(f"the answer's proof{f' of `{name}`' if name else ''} is empty")
    return script


# ---- masking: comments and strings become spaces so that searches skip them ----------


def mask(code: str, language: Language) -> str:
    """`code` with comments and string literals blanked (offsets and newlines kept)."""
    out = list(code)
    i, n = 0, len(code)
    opener, closer = ("(*", "*)") if language == Language.coq else ("/-", "-/")
    while i < n:
        if code.startswith(opener, i):
            depth, j = 1, i + 2
            while j < n and depth:
                if code.startswith(opener, j):
                    depth, j = depth + 1, j + 2
                elif code.startswith(closer, j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            _blank(out, i, j)
            i = j
        elif language == Language.lean and code.startswith("--", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            _blank(out, i, j)
            i = j
        elif code[i] == '"':
            j = i + 1
            while j < n and code[j] != '"':
                j += 2 if code[j] == "\\" and language == Language.lean else 1
            _blank(out, i, min(j + 1, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _blank(chars: list[str], start: int, end: int) -> None:
    for k in range(start, min(end, len(chars))):
        if chars[k] != "\n":
            chars[k] = " "


# ---- Coq ------------------------------------------------------------------------------

_COQ_DECL = (
    r"(?:Theorem|Lemma|Fact|Remark|Corollary|Proposition|Property|Example|Goal"
    r"|Definition|Fixpoint|Instance|Program\s+\w+)"
)
_COQ_END = re.compile(r"(Qed|Defined|Admitted|Abort|Save\b[^.]*)\.$")
_LEAN_DECL = r"(?:theorem|lemma|example|def|abbrev|instance)"


def _coq_sentences(code: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `code`, `end` just past its final dot."""
    masked = mask(code, Language.coq)
    spans, start = [], 0
    for m in re.finditer(r"(?<!\.)\.(?=\s|$)", masked):
        spans.append((start, m.end()))
        start = m.end()
    if masked[start:].strip():
        spans.append((start, len(code)))
    return spans


def _find_decl(code: str, name: str | None, language: Language) -> str | None:
    if not name:
        return None
    short = re.escape(name.rsplit(".", 1)[-1])
    masked = mask(code, language)
    if language == Language.coq:
        found = list(re.finditer(rf"\b{_COQ_DECL}\s+{short}(?![\w'])", masked))
        if not found:
            return None
        return _coq_proof_after(code, found[-1].start())  # the last declaration wins
    pattern = rf"(?m)^[ \t]*(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable|nonrec)\s+)*{_LEAN_DECL}\s+«?(?:[\w.]*\.)?{short}»?(?![\w'.!?])"
    matches = list(re.finditer(pattern, masked))
    if not matches:
        return None
    return _lean_proof_after(code, masked, matches[-1].end())


def _last_decl(code: str, language: Language) -> str | None:
    masked = mask(code, language)
    if language == Language.coq:
        names = re.findall(rf"\b{_COQ_DECL}\s+([\w']+)", masked)
    else:
        names = re.findall(
            rf"(?m)^[ \t]*(?:@\[[^\]]*\]\s*)?(?:\w+\s+)*?{_LEAN_DECL}\s+«?([\w.']+)", masked
        )
    return names[-1] if names else None


def _coq_proof_after(code: str, decl_start: int) -> str:
    """The script between the statement's final dot (or `Proof.`) and `Qed.`/`Defined.`;
    an `Admitted.` or `Abort.` ending is kept so that the verifier sees it."""
    sentences = [(s, e) for s, e in _coq_sentences(code) if e > decl_start]
    if not sentences:
        return ""
    body_start = sentences[0][1]
    rest = sentences[1:]
    if rest and re.match(r"Proof\b", mask(code[rest[0][0] : rest[0][1]], Language.coq).strip()):
        body_start = rest[0][1]
        rest = rest[1:]
    for s, e in rest:
        text = mask(code[s:e], Language.coq).strip()
        end = _COQ_END.search(text)
        if end and text == end.group(0):
            if end.group(1) in ("Qed", "Defined"):
                return textwrap.dedent(code[body_start:s]).strip()
            return textwrap.dedent(code[body_start:e]).strip()
        if end and re.search(r"[\s}\-+*]" + re.escape(end.group(0)) + "$", text):
            # a terminator glued to bullets or braces on the same sentence span
            cut = s + code[s:e].rfind(end.group(0))
            keep = cut if end.group(1) in ("Qed", "Defined") else e
            return textwrap.dedent(code[body_start:keep]).strip()
    return textwrap.dedent(code[body_start:]).strip()


def _coq_strip_wrappers(code: str) -> str:
    """A proof-only Coq answer without a leading `Proof.` or a trailing `Qed.`/`Defined.`."""
    text = code.strip()
    sentences = _coq_sentences(text)
    if not sentences:
        return text
    start, end = 0, len(text)
    if re.match(r"Proof\b", text[sentences[0][0] : sentences[0][1]].strip()):
        start = sentences[0][1]
    last = text[sentences[-1][0] : sentences[-1][1]].strip()
    if re.fullmatch(r"(?:Qed|Defined)\.", last) and sentences[-1][0] >= start:
        end = sentences[-1][0]
    return textwrap.dedent(text[start:end]).strip()


# ---- Lean -----------------------------------------------------------------------------


def _lean_proof_after(code: str, masked: str, pos: int) -> str | None:
    """The proof after the declaration's top-level `:=`, as a tactic script."""
    depth, i, assign = 0, pos, -1
    while i < len(masked):
        ch = masked[i]
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif depth == 0 and masked.startswith(":=", i):
            assign = i + 2
            break
        elif depth == 0 and ch == "\n" and i + 1 < len(masked) and masked[i + 1] not in " \t\n":
            return None  # a new command started before any `:=`
        i += 1
    if assign < 0:
        return None
    end = len(code)
    for m in re.finditer(r"(?m)^\S", masked[assign:]):
        end = assign + m.start()
        break
    body = code[assign:end].strip()
    if re.match(r"by\b", body):
        return _lean_after_by(body[2:])
    return _lean_term_as_tactic(body)


def _lean_after_by(rest: str) -> str:
    """Tactics after `by`: the inline first line, then the indented block re-based to 0."""
    first, _, tail = rest.partition("\n")
    block = textwrap.dedent(tail).strip("\n")
    first = first.strip()
    if not first:
        return block.rstrip()
    return f"{first}\n{block}".rstrip() if block.strip() else first


def _lean_term_as_tactic(term: str) -> str:
    term = textwrap.dedent(term).strip()
    if not term or re.match(r"calc\b", term):
        return term
    head, _, tail = term.partition("\n")
    if not tail:
        return f"exact {head}"
    return f"exact {head}\n" + textwrap.indent(textwrap.dedent(tail), "  ")
