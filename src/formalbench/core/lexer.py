"""A text layer for Lean 4 and Coq that knows where comments and string literals are.

Every static check of the verifier works on tokens, never on raw text, so that a `sorry` in a
comment or in a string is not a hole while one inside a macro body is. The lexers follow the
assistants' own rules closely enough for that purpose:

* Lean: `--` line comments, nested `/- -/` block comments (doc `/--` and module `/-!` kinds
  included), strings with backslash escapes, raw strings `r#"..."#`, interpolated strings
  (`s!"..{x}.."`, whose `{...}` parts are code), char literals, identifiers made of letters,
  letter-like symbols (ℕ, ℝ, Greek but λ Π Σ), digits, subscripts, `'`, `!`, `?` (so `h'`,
  `exact?`, `x₁` are single tokens), dotted names and «guillemet» parts, `#commands`.
* Coq: nested `(* *)` comments (string literals inside them are skipped, as Coq does),
  strings with the `""` escape, qualified identifiers, and the sentence-ending `.` (a dot
  followed by a blank or the end of the text), which gets its own kind `end`.

Tokens carry 1-based lines and 0-based columns counted in characters, as the assistants do.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

from formalbench.core.records import Language

COMMENT_KINDS = frozenset({"comment", "doc"})


def words(text: str) -> frozenset[str]:
    """A set of keywords written as one space-separated string (keeps keyword tables short)."""
    return frozenset(text.split())


def plain_name(text: str) -> str:
    """A Lean name without its «» quotes: `«debug».skipKernelTC` -> `debug.skipKernelTC`.

    A quoted part may itself hold a dot (`«a.b»` is one part); dropping the quotes merges it
    with its neighbours, which is what a comparison against a forbidden or a used name wants:
    it errs towards a match, never away from one.
    """
    return text.replace("«", "").replace("»", "") if "«" in text else text


class Token(NamedTuple):
    """One lexeme. kind: ident, number, string, char, symbol, end (Coq), comment, doc."""

    kind: str
    text: str
    line: int
    column: int
    offset: int

    @property
    def end(self) -> int:
        return self.offset + len(self.text)

    @property
    def is_comment(self) -> bool:
        return self.kind in COMMENT_KINDS


# --- Lean ---------------------------------------------------------------------------------
_NOT_ID = "\u00b2\u00b3\u00b9\u00bc-\u00be\u2070-\u209f\u03bb\u03a0\u03a3"
_LEAN_FIRST = rf"(?:(?![{_NOT_ID}])[^\W\d]|[\u2100-\u214f])"
_LEAN_REST = (
    r"(?:(?![\u00b2\u00b3\u00b9\u00bc-\u00be\u2070-\u207f\u03bb\u03a0\u03a3])\w|['!?\u2100-\u214f])"
)
_LEAN_PART = rf"(?:«[^»\n]*»|{_LEAN_FIRST}{_LEAN_REST}*)"
_LEAN_SYMBOLS = sorted(
    words(":= :: => -> <-> <- <;> <|> <| |>. |> ... .. ++ && || == != <= >= @[ %[ ⁻¹ ^^^ >>= >>"),
    key=len,
    reverse=True,
)
_LEAN = re.compile(
    r"\s*(?:(?P<line>--[^\n]*)"
    r"|(?P<block>/-)"
    r"|(?P<raw>r#*\")"
    r"|(?P<string>\")"
    r"|(?P<char>'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])')"
    r"|(?P<hash>#[A-Za-z_][A-Za-z_0-9]*)"
    rf"|(?P<ident>{_LEAN_PART}(?:\.{_LEAN_PART})*)"
    r"|(?P<number>0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<symbol>" + "|".join(re.escape(s) for s in _LEAN_SYMBOLS) + r"|\S))",
)
_PLAIN = words("ident symbol number char")
_PLAIN_IN_BRACES = words("ident number char")
_LEAN_BLOCK_MARK = re.compile(r"/-|-/")
_LEAN_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*"', re.S)

# --- Coq ----------------------------------------------------------------------------------
_COQ_SYMBOLS = sorted(
    words(r":= => -> <-> <- /\ \/ <= >= <> :: ++ || && |- :> <=? <? =? .. %"),
    key=len,
    reverse=True,
)
_COQ = re.compile(
    r"\s*(?:(?P<block>\(\*)"
    r"|(?P<string>\"(?:[^\"]|\"\")*(?:\"|\Z))"
    r"|(?P<ident>[^\W\d][\w']*(?:\.[^\W\d][\w']*)*)"
    r"|(?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<end>\.(?=\s|\Z))"
    r"|(?P<symbol>" + "|".join(re.escape(s) for s in _COQ_SYMBOLS) + r"|\S))",
)
_COQ_BLOCK_MARK = re.compile(r"\(\*|\*\)|\"(?:[^\"]|\"\")*(?:\"|\Z)")


class _Lines:
    """Offset -> (line, column). Tokens come in order, so a cursor usually moves forward a
    line or two; a backward step falls back to binary search over the newline positions."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.index = 0

    def at(self, offset: int) -> tuple[int, int]:
        starts = self.starts
        index = self.index
        if starts[index] > offset:
            index = bisect_right(starts, offset) - 1
        else:
            last = len(starts) - 1
            while index < last and starts[index + 1] <= offset:
                index += 1
        self.index = index
        return index + 1, offset - starts[index]


def _nested_end(text: str, pos: int, marks: re.Pattern[str], opener: str, closer: str) -> int:
    """End offset of a nested comment whose opener ends at `pos` (the text end if unclosed)."""
    depth = 1
    for m in marks.finditer(text, pos):
        mark = m.group()
        if mark == opener:
            depth += 1
        elif mark == closer:
            depth -= 1
            if depth == 0:
                return m.end()
    return len(text)


def _lean_string_end(text: str, pos: int) -> int:
    """End of a plain string whose opening quote is at `pos - 1`."""
    m = _LEAN_STRING_BODY.match(text, pos)
    return m.end() if m else len(text)


def _lean_raw_end(text: str, pos: int, hashes: int) -> int:
    closing = '"' + "#" * hashes
    found = text.find(closing, pos)
    return len(text) if found < 0 else found + len(closing)


def _lex_lean(text: str, lines: _Lines, pos: int, out: list[Token], in_braces: bool) -> int:
    """Append tokens from `pos`; inside `{...}` of an interpolated string, stop at its `}`."""
    depth = 0
    match = _LEAN.match
    append = out.append
    plain = _PLAIN_IN_BRACES if in_braces else _PLAIN
    starts = lines.starts
    last = len(starts) - 1
    n = len(text)
    while pos < n:
        m = match(text, pos)
        if m is None:  # only blanks are left
            return n
        kind = m.lastgroup or "symbol"
        start = m.start(kind)
        pos = m.end()
        if kind not in plain:
            if kind == "block":
                pos = _nested_end(text, pos, _LEAN_BLOCK_MARK, "/-", "-/")
                kind = "doc" if text.startswith(("/--", "/-!"), start) else "comment"
            elif kind == "line":
                kind = "comment"
            elif kind == "raw":
                pos = _lean_raw_end(text, pos, pos - start - 2)
                kind = "string"
            elif kind == "string":
                prev = out[-1] if out else None
                if prev and prev.kind == "ident" and prev.text.endswith("!") and prev.end == start:
                    pos = _lex_interpolated(text, lines, start, out)
                    continue
                pos = _lean_string_end(text, pos)
            elif kind == "hash":
                kind = "ident"
            elif m.group(kind) == "{":
                depth += 1
            elif m.group(kind) == "}":
                if depth == 0:
                    return start
                depth -= 1
        index = lines.index
        while index < last and starts[index + 1] <= start:
            index += 1
        lines.index = index
        append(Token(kind, text[start:pos], index + 1, start - starts[index], start))
    return pos


def _lex_interpolated(text: str, lines: _Lines, start: int, out: list[Token]) -> int:
    """Tokens of `s!"a{x}b"`: string pieces, and the code between braces as ordinary tokens."""
    pos = start + 1
    piece = start
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch == '"':
            pos += 1
            break
        if ch == "{":
            line, col = lines.at(piece)
            out.append(Token("string", text[piece : pos + 1], line, col, piece))
            pos = _lex_lean(text, lines, pos + 1, out, in_braces=True)
            piece = pos
        pos += 1
    pos = min(pos, n)
    if piece < pos:
        line, col = lines.at(piece)
        out.append(Token("string", text[piece:pos], line, col, piece))
    return pos


def _lex_coq(text: str, lines: _Lines) -> list[Token]:
    out: list[Token] = []
    match = _COQ.match
    pos = 0
    n = len(text)
    while pos < n:
        m = match(text, pos)
        if m is None:  # only blanks are left
            break
        kind = m.lastgroup
        start = m.start(kind or 0)
        pos = m.end()
        if kind == "block":
            pos = _nested_end(text, pos, _COQ_BLOCK_MARK, "(*", "*)")
            kind = "comment"
        line, col = lines.at(start)
        out.append(Token(kind or "symbol", text[start:pos], line, col, start))
    return out


def tokenize(text: str, language: Language, *, comments: bool = False) -> list[Token]:
    """The tokens of `text`; comments are left out unless `comments` is true."""
    lines = _Lines(text)
    if language == Language.lean:
        tokens: list[Token] = []
        _lex_lean(text, lines, 0, tokens, in_braces=False)
    else:
        tokens = _lex_coq(text, lines)
    if comments:
        return tokens
    return [t for t in tokens if not t.is_comment]


def strip_comments(text: str, language: Language) -> str:
    """`text` with every comment blanked out; newlines stay, so positions do not move."""
    parts: list[str] = []
    last = 0
    for tok in tokenize(text, language, comments=True):
        if tok.is_comment:
            parts.append(text[last : tok.offset])
            parts.append(re.sub(r"[^\n]", " ", tok.text))
            last = tok.end
    parts.append(text[last:])
    return "".join(parts)
