"""Invisible and control characters in code: where a name can read as another one.

Why the gate refuses them. Coq 8.16 takes U+00A0 (NO-BREAK SPACE) for a letter-like
identifier part and the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) for letters, so
`classic<U+00A0>z` is one identifier that a reader, our lexer (Python's `\\s` takes U+00A0
for a blank) and a loosely read `Print Assumptions` answer all take for `classic`; Lean
takes any character inside «guillemets» (`«sorry<U+200B>»`). Every other character of the
table below is refused by both assistants wherever it stands as code (coqc: "Lexer: Undefined
token"; Lean: only space, tab, CR and LF are blanks), so refusing them in code costs no
genuine proof, and refusing the identifier cases closes the attack.

Strings and comments keep them: neither assistant reads a name there (the Coq standard
library's `Strings/String.v` has a BEL in a string), and a name that uses a string's
character must also write it in code, where it is refused. A byte order mark at the very
start of the text is what editors write and coqc skips: it is allowed there.

The table (`HIDDEN`) is every character of the Unicode general categories Cc (controls but
tab, LF and CR), Zs, Zl, Zp (blanks but the space) and Cf (format: zero-width, bidi
controls, the BOM, the soft hyphen), plus the other Default_Ignorable_Code_Points
(Unicode's DerivedCoreProperties: the combining grapheme joiner, variation selectors,
Hangul fillers, tags) and U+2800 BRAILLE PATTERN BLANK, which prints as a blank.
`tests/test_gate_hidden_chars.py` checks it against Python's `unicodedata`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # core/ids imports this module, and the lexer imports core/records (ids)
    from formalbench.core.lexer import Token

_RANGES = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\xa0\xad"
    "\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f"
    "\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
HIDDEN = re.compile(f"[{_RANGES}]")
_UNSEEN_CATEGORIES = ("Co", "Cn", "Cs")  # private use, unassigned, lone surrogates


def unseen(char: str) -> bool:
    """Whether a reader cannot see `char` for what it is: a table character (above) or one
    with no glyph of its own (private use, unassigned, a lone surrogate). The rule of ids
    (`core/ids.py`) and of what the review page marks `⟨U+XXXX⟩` (`dashboard/render.py`);
    the gate keeps the table alone (what the assistants themselves accept or refuse)."""
    return bool(HIDDEN.match(char)) or unicodedata.category(char) in _UNSEEN_CATEGORIES


@functools.cache
def unseen_pattern() -> re.Pattern[str]:
    """A regex matching every `unseen` character of the Basic Multilingual Plane and, above
    it, the table's own ranges and the private-use planes (built on first use: the BMP scan
    takes milliseconds, which the gate's import need not pay)."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x10000):
        if unseen(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    parts = [re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges]
    astral = "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    astral += "\U0001d173-\U0001d17a\U000e0000-\U000e0fff\U000f0000-\U0010ffff"
    return re.compile("[" + "".join(parts) + astral + "]")


_LITERAL_KINDS = frozenset({"string", "char", "comment", "doc"})
_BOM = "\ufeff"
MAX_REPORTED = 10  # distinct characters named in findings; a text full of them needs no more


class Hidden(NamedTuple):
    """One hidden character in code: the first place each distinct character occurs."""

    char: str
    line: int
    column: int

    @property
    def code_point(self) -> str:
        return f"U+{ord(self.char):04X}"

    @property
    def name(self) -> str:
        return unicodedata.name(self.char, "") or unicodedata.category(self.char)


def hidden_in_code(text: str, tokens: Iterable[Token]) -> list[Hidden]:
    """Each distinct table character of `text` that stands outside strings and comments.

    `tokens` are the text's tokens *with* comments (`tokenize(..., comments=True)`): their
    string, char and comment spans are where the characters are allowed."""
    first = HIDDEN.search(text)
    if first is None:
        return []  # the usual case: no lexing needed
    literal = [(t.offset, t.end) for t in tokens if t.kind in _LITERAL_KINDS]
    found: dict[str, Hidden] = {}
    index = 0
    for match in HIDDEN.finditer(text, first.start()):
        at = match.start()
        char = match.group()
        if char in found or (at == 0 and char == _BOM):
            continue
        while index < len(literal) and literal[index][1] <= at:
            index += 1
        if index < len(literal) and literal[index][0] <= at:
            continue
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1)
        found[char] = Hidden(char, line, column)
        if len(found) >= MAX_REPORTED:
            break
    return list(found.values())
