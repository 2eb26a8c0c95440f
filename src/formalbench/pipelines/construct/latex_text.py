"""Low-level LaTeX text helpers shared by the readers: comments, control words, arguments.

Arguments are read by `ArgReader`: braced and bracketed arguments by delimiter matching,
unbraced ones (a token, a control sequence) by pylatexenc's `LatexWalker`; finding where a
control word starts is a plain scan. Comments and verbatim bodies are blanked out (replaced
by spaces, newlines kept) so that positions and line numbers of the original file stay valid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pylatexenc.latexwalker import (
    LatexGroupNode,
    LatexWalker,
    LatexWalkerError,
    get_default_latex_context_db,
)
from pylatexenc.macrospec import LatexContextDb, MacroSpec

CONTROL_WORD = re.compile(r"\\([A-Za-z@]+|.)", re.DOTALL)  # a star is an argument
_COMMENT = re.compile(r"(?<!\\)((?:\\\\)*)%[^\n]*")
_CONTEXT = LatexContextDb()  # no macro specs: an unbraced argument is one token, as in TeX
_CONTEXT.add_context_category("none", macros=[], environments=[], specials=[])
_FULL_CONTEXT = get_default_latex_context_db()  # built once: it costs ~1 ms to build
VERBATIM_ENVS = ("verbatim", "lstlisting", "minted", "comment", "programlisting")


def blank_comments(text: str) -> str:
    """`text` with `%` comments and verbatim bodies replaced by spaces (same length, same lines)."""
    text = _COMMENT.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text)
    for env in VERBATIM_ENVS:
        start = 0
        opener = "\\begin{" + env + "}"
        while (i := text.find(opener, start)) >= 0:
            j = text.find("\\end{" + env + "}", i)
            j = len(text) if j < 0 else j
            body = text[i + len(opener) : j]
            text = text[: i + len(opener)] + re.sub(r"[^\n]", " ", body) + text[j:]
            start = j + 1
    return text


@dataclass
class Args:
    """Arguments of one macro or environment call, as source strings (None: optional, absent)."""

    values: list[str | None]
    end: int  # position just after the last argument


class ArgReader:
    """Reads macro/environment arguments from one text.

    A braced argument `{...}` (the common case) is delimited by a brace-matching scan; every
    other form (an unbraced token such as `\\vect x` or `\\frac12`, a control symbol) is read
    by pylatexenc's walker. The walker parses a whole group's content when asked for a group,
    which made reading the arguments of every macro call of a book cost about 80 s; the scan
    gives the same extents at a fraction of that (docs/decisions.md, construct-extract).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._walker: LatexWalker | None = None
        self._full: LatexWalker | None = None

    def read(self, pos: int, spec: str) -> Args:
        """Read arguments following `pos` per a spec: `{` mandatory, `[` optional, `*` a star."""
        text, values, p = self.text, [], pos
        for c in spec:
            q = _skip_space(text, p)
            if c == "*":
                star = q < len(text) and text[q] == "*"
                values.append("*" if star else None)
                p = q + 1 if star else p
            elif c == "[":
                end = _match(text, q, "[", "]") if q < len(text) and text[q] == "[" else -1
                values.append(text[q + 1 : end] if end >= 0 else None)
                p = end + 1 if end >= 0 else p
            elif q < len(text) and text[q] == "{":
                end = _match(text, q, "{", "}")
                if end < 0:
                    values.append(None)
                    break
                values.append(text[q + 1 : end])
                p = end + 1
            else:
                token = self._token(q)
                values.append(token)
                p = q + len(token) if token else p
        values.extend([None] * (len(spec) - len(values)))
        return Args(values, p)

    def parse(self, pos: int, spec: str) -> Args:
        """Read arguments by a full pylatexenc parse (`MacroSpec.parse_args`): for the book's
        declarations (`\\newcommand`, `\\newtheorem`), few and short, where the walker's own
        reading of nested groups, comments and unbraced tokens is worth its cost."""
        walker = self._full_walker()
        try:
            argd, apos, alen = MacroSpec("_", spec).parse_args(
                w=walker, pos=pos, parsing_state=walker.make_parsing_state()
            )
        except LatexWalkerError:
            return Args([None] * len(spec), pos)
        values: list[str | None] = []
        for node in argd.argnlist:
            if node is None:
                values.append(None)
                continue
            src = self.text[node.pos : node.pos + node.len]
            group = node.isNodeType(LatexGroupNode) and src[:1] in "{[" and len(src) >= 2
            values.append(src[1:-1] if group else src)
        return Args(values, apos + alen if alen else pos)

    def _full_walker(self) -> LatexWalker:
        if self._full is None:
            self._full = LatexWalker(self.text, latex_context=_FULL_CONTEXT, tolerant_parsing=True)
        return self._full

    def _token(self, pos: int) -> str | None:
        """One unbraced argument (a character or a control sequence), read by the walker."""
        if pos >= len(self.text) or self.text[pos] in "}]":
            return None
        if self._walker is None:
            self._walker = LatexWalker(self.text, latex_context=_CONTEXT, tolerant_parsing=True)
        try:
            node = self._walker.get_latex_expression(pos)[0]
        except LatexWalkerError:
            return None
        start, length = int(node.pos), int(node.len)
        return self.text[start : start + length] if start == pos and length else None


def _skip_space(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\n\r":
        pos += 1
    return pos


_DELIMS = {"{": re.compile(r"\\.|[{}]", re.DOTALL), "[": re.compile(r"\\.|[{}\[\]]", re.DOTALL)}


def _match(text: str, pos: int, opener: str, closer: str) -> int:
    """Position of the delimiter closing the one at `pos`; `\\{`-style escapes skipped.

    Brackets inside braces do not count (`[a={]}]` is one optional argument).
    """
    depth = braces = 0
    for m in _DELIMS[opener].finditer(text, pos):
        ch = m.group(0)
        if ch == "{" and opener == "[":
            braces += 1
        elif ch == "}" and opener == "[":
            braces -= 1
        elif braces or len(ch) > 1:
            continue
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1


def find_env_end(text: str, env: str, start: int) -> tuple[int, int]:
    """(position of the matching `\\end{env}`, position after it), nesting of `env` counted."""
    opener, closer = "\\begin{" + env + "}", "\\end{" + env + "}"
    depth, pos = 1, start
    while True:
        j = text.find(closer, pos)
        if j < 0:
            return len(text), len(text)
        i = text.find(opener, pos)
        if 0 <= i < j:
            depth += 1
            pos = i + len(opener)
            continue
        depth -= 1
        if depth == 0:
            return j, j + len(closer)
        pos = j + len(closer)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1
