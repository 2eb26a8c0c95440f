"""Text surgery shared by the importers: header split, holes, docstrings, answer leaks.

Public formats disagree on small things (a statement ending in `:= by` with no proof, a Coq
file that stops at `Proof.`, the answer of a "find" problem left in a comment). Importers
normalise them here so that every task reaches a prover in the same shape: a header of
imports kept apart, and a formal text with at least one hole for the prover to fill.
"""

from __future__ import annotations

import re

from formalbench.checking.construction import task_kind
from formalbench.core.records import Language, TaskKind

# Leading lines that set up the environment rather than state the problem. `open X in` and
# `set_option ... in` scope over the next declaration only, so they belong to the formal text.
_LEAN_HEADER = re.compile(r"(import|open|set_option|universe)\b(?!.*\bin\s*$)")
_COQ_HEADER = re.compile(
    r"(From\s+\S+\s+)?(Require|Import|Export)\b|(Local\s+|Global\s+)?(Open|Close)\s+Scope\b"
    r"|(Set|Unset)\s+[A-Z]"
)
_LEAN_HOLE = re.compile(r"\bsorry\b")
_COQ_HOLE = re.compile(r"\b(Admitted|admit)\s*\.")
_SOLUTION_COMMENT = re.compile(
    r"^((?:noncomputable\s+)?(?:abbrev|def)\s+\S+_solution\b[^\n]*?:=\s*sorry[ \t]*\n)"
    r"--[ \t]?([^\n]*)\n",
    re.M,
)
_DOCSTRING = re.compile(r"/--(.*?)-/", re.S)


def split_header(text: str, language: Language) -> tuple[str, str]:
    """Split a source file into (header, formal) so that `header + formal == text`.

    The header is the run of leading lines that only import, open or configure (blank
    lines and line comments in between are kept with it). A Coq sentence spread over
    several lines stays whole.
    """
    pattern = _LEAN_HEADER if language == Language.lean else _COQ_HEADER
    lines = text.splitlines(keepends=True)
    end = 0  # index of the first line that is not header
    header_end = 0  # lines[:header_end] is the header (ends after the last header sentence)
    in_sentence = False
    while end < len(lines):
        stripped = lines[end].strip()
        if in_sentence:
            in_sentence = not stripped.endswith(".")
        elif not stripped or _is_line_comment(stripped, language):
            pass
        elif pattern.match(stripped):
            in_sentence = language == Language.coq and not stripped.endswith(".")
        else:
            break
        end += 1
        if not in_sentence:
            header_end = end
    # Blank lines between the header and the first declaration go with the header.
    while header_end < len(lines) and not lines[header_end].strip():
        header_end += 1
    if not any(pattern.match(line.strip()) for line in lines[:header_end]):
        return "", text
    return "".join(lines[:header_end]), "".join(lines[header_end:])


def _is_line_comment(stripped: str, language: Language) -> bool:
    if language == Language.lean:
        return stripped.startswith("--")
    return stripped.startswith("(*") and stripped.endswith("*)")


def has_hole(formal: str, language: Language) -> bool:
    pattern = _LEAN_HOLE if language == Language.lean else _COQ_HOLE
    return bool(pattern.search(_strip_comments(formal, language)))


def _strip_comments(text: str, language: Language) -> str:
    if language == Language.lean:
        text = re.sub(r"/-.*?-/", " ", text, flags=re.S)
        return re.sub(r"--[^\n]*", " ", text)
    return re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)


def ensure_hole(formal: str, language: Language) -> str | None:
    """Give an unproved statement its hole; None when the text has none and cannot get one.

    Lean statements published without a proof end in `:= by` or `:=`; they get `sorry`.
    A Coq file that stops after `Proof.` gets `Admitted.` so the assistant accepts it.
    """
    if has_hole(formal, language):
        return formal
    body = formal.rstrip()
    if language == Language.lean:
        if body.endswith(":= by") or body.endswith(" by"):
            return f"{body}\n  sorry\n"
        if body.endswith(":="):
            return f"{body} sorry\n"
        return None
    if re.search(r"\bProof\s*\.\Z", body):
        return f"{body}\nAdmitted.\n"
    return None


def docstring_text(text: str) -> str:
    """The prose of the last `/-- ... -/` docstring in `text` (empty string when there is none)."""
    found = _DOCSTRING.findall(text)
    return found[-1].strip() if found else ""


def split_leaked_solutions(formal: str) -> tuple[str, list[str]]:
    """Take out the answer comments PutnamBench writes under each `..._solution := sorry`.

    The comment holds the intended answer: left in, any prover would read it. It is returned
    so that importers can keep it as reference metadata.
    """
    answers: list[str] = []

    def cut(match: re.Match[str]) -> str:
        answers.append(match.group(2).strip())
        return match.group(1)

    return _SOLUTION_COMMENT.sub(cut, formal), answers


def kind_of(formal: str, language: Language) -> TaskKind:
    """`evaluation` when a definition is left as a hole (a value to construct), else `proof`.

    The verifier decides the same question when it applies the construction rules, so both
    ask `checking.construction.task_kind`: a task is never imported as one kind and checked
    as another.
    """
    return task_kind(formal, language)


def name_category(name: str) -> str | None:
    """miniF2F-style category from a problem name: `mathd_algebra_478` -> `mathd_algebra`."""
    parts = name.split("_")
    if len(parts) < 2:
        return None
    if parts[0] == "mathd" and len(parts) > 2:
        return f"{parts[0]}_{parts[1]}"
    return parts[0]


def split_informal_proof(statement: str) -> tuple[str, str | None]:
    """ProofNet's newer port glues the informal proof onto the statement; separate them."""
    match = re.search(r"\\begin\{proof\}(.*?)(\\end\{proof\}|\Z)", statement, re.S)
    if not match:
        return statement.strip(), None
    return statement[: match.start()].strip(), match.group(1).strip()
