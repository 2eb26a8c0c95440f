"""Byte-level view of a Coq source: positions, identifiers, comment-free text.

Coq reports every position in *bytes* of the UTF-8 file (`line L, characters A-B` counts bytes
from the start of line L; `-time` prints absolute byte offsets), while our records use
1-based lines and 0-based *character* columns. `SourceMap` converts between the two and
clamps anything that points past the end of the user's text (the backend appends its own
queries after it, and their positions must never leak into a result).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator


class SourceMap:
    """Converts byte offsets of a UTF-8 text to (line, character column) and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        # Coq counts lines by '\n' only; so do we (str.splitlines would split on more).
        self.line_starts = [0] + [m.end() for m in re.finditer(b"\n", self.data)]

    @property
    def size(self) -> int:
        return len(self.data)

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 0-based character column) of a byte offset, clamped to the text."""
        offset = max(0, min(offset, self.size))
        index = bisect.bisect_right(self.line_starts, offset) - 1
        start = self.line_starts[index]
        column = len(self.data[start:offset].decode("utf-8", errors="ignore"))
        return index + 1, column

    def last_position(self) -> tuple[int, int]:
        """Where the text ends, counted on its last non-empty line (for clamped messages)."""
        end = self.size
        while end > 0 and self.data[end - 1 : end] in (b"\n", b"\r"):
            end -= 1
        return self.position(end)


def blank_comments_and_strings(data: bytes) -> bytes:
    """`data` with the inside of (nested) comments and string literals replaced by spaces.

    Offsets are unchanged, so a match in the result points at the same bytes of the source.
    Delimiters are ASCII, so working on bytes is safe for UTF-8 text.
    """
    out = bytearray(data)
    depth = 0
    in_string = False
    i = 0
    n = len(data)
    while i < n:
        two = data[i : i + 2]
        if in_string:
            if two == b'""':  # Coq's escaped quote inside a string
                out[i : i + 2] = b"  "
                i += 2
                continue
            if data[i : i + 1] == b'"':
                in_string = False
            else:
                out[i] = 0x20 if data[i] != 0x0A else 0x0A
            i += 1
            continue
        if two == b"(*":
            depth += 1
            out[i : i + 2] = b"  "
            i += 2
            continue
        if depth and two == b"*)":
            depth -= 1
            out[i : i + 2] = b"  "
            i += 2
            continue
        if depth:
            out[i] = 0x20 if data[i] != 0x0A else 0x0A
        elif data[i : i + 1] == b'"':
            in_string = True
        i += 1
    return bytes(out)


# Words Coq's lexer always reserves; a declared name is never one of them, but a text scan
# could pick one up, and `Locate <keyword>.` would be a syntax error.
_KEYWORDS = frozenset(
    [
        "_",
        "as",
        "at",
        "cofix",
        "else",
        "end",
        "exists",
        "exists2",
        "fix",
        "for",
        "forall",
        "fun",
        "if",
        "IF",
        "in",
        "let",
        "match",
        "mod",
        "return",
        "SProp",
        "Prop",
        "Set",
        "Type",
        "then",
        "using",
        "where",
        "with",
        "struct",
        "Theorem",
        "Lemma",
    ]
)


def _ident_start(ch: str) -> bool:
    return ch == "_" or (ch.isascii() and ch.isalpha()) or unicodedata.category(ch)[0] == "L"


def _ident_part(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum() or ch in "_'"
    return unicodedata.category(ch)[0] in "LNM"


def is_ident(word: str) -> bool:
    """Whether `word` is a plain Coq identifier (letters, digits, `_`, `'`, subscripts)."""
    return (
        bool(word)
        and _ident_start(word[0])
        and all(_ident_part(c) for c in word[1:])
        and word not in _KEYWORDS
    )


_DECLARATION = re.compile(
    r"(?<![\w'.])(?:Theorem|Lemma|Fact|Remark|Corollary|Proposition|Property|Example|"
    r"Definition|Fixpoint|CoFixpoint|Axioms?|Conjectures?|Parameters?|Hypothes[ie]s|"
    r"Variables?|Instance|Let|Inductive|CoInductive|Record|Structure|Class)\s+"
    r"([^:]{0,300}?)\s*(?::=|:|\.(?:\s|$))",
    re.S,
)
_WORD = re.compile(r"[^\s()\[\]{}.,;:@|\"`!=<>]+")


def declared_names(text: str) -> list[str]:
    """Identifiers the source declares, found by text (comments and strings ignored).

    Used only to guess which names `Print Assumptions` will print, so that one run of coqc
    can also `Locate` them; a name missed here costs a second run, never a wrong answer.
    """
    clean = blank_comments_and_strings(text.encode("utf-8")).decode("utf-8", errors="ignore")
    names: dict[str, None] = {}
    for match in _DECLARATION.finditer(clean):
        for word in _WORD.findall(match.group(1)):
            if is_ident(word):
                names[word] = None
    return list(names)


_HOLE_TACTIC = re.compile(rb"(?<![\w'.])(admit|give_up)(?![\w'])")
_ADMITTED = re.compile(rb"^\s*(Admitted|Admit\s+Obligations(?:\s+of\s+\S+)?)\s*\.\s*$")


def hole_spans(clean: bytes, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Byte spans of the holes in the sentence `clean[start:end]` (comments blanked).

    A sentence that is `Admitted.` (or `Admit Obligations.`) is one hole; otherwise every
    `admit` / `give_up` tactic in it is one (both leave goals that only `Admitted` can close).
    """
    sentence = clean[start:end]
    if _ADMITTED.match(sentence):
        yield start, end
        return
    for match in _HOLE_TACTIC.finditer(sentence):
        yield start + match.start(), start + match.end()
