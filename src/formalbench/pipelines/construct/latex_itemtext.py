"""The text of an item and the references it makes.

Text stays LaTeX: comments are already blanked by the reader; wrapper environments of the
conventions (fcla's `para`) are dropped, the book's macros expanded, `\\input`s left by an
expansion inlined, spaces tidied. References are read from the expanded text, so that a
macro such as `\\propref` counts as the `\\ref*` it expands to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from formalbench.core.construct import Reference
from formalbench.pipelines.construct.latex_conventions import LatexConventions
from formalbench.pipelines.construct.latex_macros import MacroTable, expand
from formalbench.pipelines.construct.latex_text import CONTROL_WORD, ArgReader

_SPACES = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n\s*\n(\s*\n)+")
MAX_INPUT_DEPTH = 5


class ItemText:
    def __init__(
        self,
        conv: LatexConventions,
        macros: MacroTable,
        resolve: Callable[[str], Path | None],
        read: Callable[[Path], str],
    ) -> None:
        self.conv = conv
        self.macros = macros
        self._resolve = resolve  # a file name as \input writes it -> its path, if it exists
        self._read = read  # a path -> its text, comments blanked
        names = sorted(conv.refs, key=len, reverse=True)
        self._ref_pattern = re.compile(r"\\(" + "|".join(names) + r")(?![A-Za-z@])")

    def clean(self, body: str, depth: int = 0) -> str:
        """Item text from a body whose comments are blanked: unwrapped, expanded, tidied."""
        for env in self.conv.unwrap_envs:
            body = body.replace("\\begin{" + env + "}", "").replace("\\end{" + env + "}", "\n")
        text = self._inline_inputs(expand(body, self.macros), depth)
        text = _SPACES.sub(" ", text)
        text = "\n".join(line.strip() for line in text.split("\n"))
        return _BLANK_LINES.sub("\n\n", text).strip()

    def title(self, title: str | None) -> str | None:
        if not title:
            return None
        return " ".join(expand(title, self.macros).replace("{", "").replace("}", "").split())

    def _inline_inputs(self, text: str, depth: int) -> str:
        """Text with each `\\input{file}` (from an expanded macro) replaced by the file's text."""
        if "\\input" not in text or depth > MAX_INPUT_DEPTH:
            return text
        out, i, reader = [], 0, ArgReader(text)
        for m in CONTROL_WORD.finditer(text):
            if m.group(1) != "input" or m.start() < i:
                continue
            a = reader.read(m.end(), "{")
            path = self._resolve((a.values[0] or "").strip())
            if path is None:
                continue
            out += [text[i : m.start()], self.clean(self._read(path), depth + 1)]
            i = a.end
        return "".join(out) + text[i:]

    def refs(self, text: str) -> list[Reference]:
        """The references `text` makes, in order (a `\\cref{a,b}` makes two)."""
        refs: list[Reference] = []
        reader: ArgReader | None = None
        covered = 0  # end of the last reference: `\\hyperref[k]{Proposition~\\ref*{k}}` is one
        for m in self._ref_pattern.finditer(text):
            if m.start() < covered:
                continue
            rule = self.conv.refs[m.group(1)]
            reader = reader or ArgReader(text)
            a = reader.read(m.end(), rule.args)
            keys = a.values[rule.key_arg]
            if keys is None:
                continue
            covered = a.end
            kind = rule.kind
            if rule.kind_arg is not None:
                kind = (a.values[rule.kind_arg] or "").strip() or kind
            raw = text[m.start() : a.end]
            for key in keys.split(","):
                if key.strip():
                    label = rule.label.format(key=key.strip(), kind=kind or "")
                    refs.append(Reference(raw=raw, key=label, kind=kind))
        return refs
