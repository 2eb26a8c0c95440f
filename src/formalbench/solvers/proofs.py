"""Find the proof of a declaration in answer code, as a tactic script.

Models answer with whole declarations; the statement is dropped and the proof kept. This
needs a little of each language's lexical structure: comments and strings are blanked out
first (`mask`) so that a dot or a keyword inside them is never mistaken for code; Coq
sentences end at a dot followed by white space; a Lean proof runs from the declaration's
top-level `:=` to the next line that starts at column 0. A Lean term proof becomes
`exact <term>`, so every fill is a tactic script.
"""

from __future__ import annotations

import re
import textwrap

from formalbench.core.records import Language


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


def coq_sentences(code: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `code`, `end` just past its final dot."""
    masked = mask(code, Language.coq)
    spans, start = [], 0
    for m in re.finditer(r"(?<!\.)\.(?=\s|$)", masked):
        spans.append((start, m.end()))
        start = m.end()
    if masked[start:].strip():
        spans.append((start, len(code)))
    return spans


def declaration_proof(code: str, name: str | None, language: Language) -> str | None:
    """The proof script of declaration `name` in `code`, or None if it is not declared."""
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


def last_declaration(code: str, language: Language) -> str | None:
    """The name of the last declaration in `code` (a renamed restatement, say)."""
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
    sentences = [(s, e) for s, e in coq_sentences(code) if e > decl_start]
    if not sentences:
        return ""
    value = _coq_inline_value(code, sentences[0][0], sentences[0][1])
    if value is not None:
        return value
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


def _coq_inline_value(code: str, start: int, end: int) -> str | None:
    """`exact (v).` for a definition given with its value, `Definition answer : R := v.`: the
    task's `Definition answer : R. Admitted.` takes it as a proof (construction tasks)."""
    masked = mask(code[start:end], Language.coq)
    if not re.match(r"\s*(?:#\[[^\]]*\]\s*)?(?:Local\s+)?Definition\b", masked):
        return None
    depth = 0
    for i, ch in enumerate(masked):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and masked.startswith(":=", i):
            value = code[start + i + 2 : end].strip().removesuffix(".").strip()
            return f"exact ({value})." if value else None
    return None


def _coq_strip_wrappers(code: str) -> str:
    """A proof-only Coq answer without a leading `Proof.` or a trailing `Qed.`/`Defined.`."""
    text = code.strip()
    sentences = coq_sentences(text)
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
