"""Split a Lean source into its header (imports, `open`, `set_option`) and its body.

The REPL elaborates a header once and hands back an environment number; later bodies are
sent with `"env": n` and pay only their own elaboration. Two sources whose header commands
are the same share the environment even when their comments and blank lines differ, so the
header is keyed by its commands alone; each command remembers its line in the source so
that messages about the header, and every message about the body, point at the user's lines.

A command that scopes over the next one (`open Foo in`, `set_option x y in`) belongs to the
body, and so does a doc comment (`/-- ... -/`), which attaches to the next declaration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER_COMMAND = re.compile(r"^(import|open|set_option)\s")
_SCOPED = re.compile(r"\sin(\s|$)")  # `... in` ends the line or a command follows
_CONTINUATION = re.compile(r"^\s+[^\s\-/][^:=()]*$")  # indented names continuing an `open`


@dataclass(frozen=True)
class SourceSplit:
    """A source cut in two. `body` starts on line `body_offset + 1` of the source."""

    header_lines: tuple[tuple[int, str], ...]  # (line in the source, command text)
    body: str
    body_offset: int
    _key: str = field(default="", repr=False)

    @property
    def header_key(self) -> str:
        """The header as sent to the REPL: its commands, one a line, comments left out."""
        return self._key

    def header_line(self, line: int | None) -> int | None:
        """Map a line of `header_key` (from 1) to its line in the source."""
        if line is None or not self.header_lines:
            return line
        index = min(max(line, 1), len(self.header_lines)) - 1
        return self.header_lines[index][0]


def _comment_depth(line: str, depth: int) -> tuple[int, str]:
    """Advance a nested block-comment depth over one line; return it and the code outside."""
    code: list[str] = []
    i = 0
    while i < len(line):
        pair = line[i : i + 2]
        if depth == 0 and pair == "--":
            break
        if pair == "/-":
            depth += 1
            i += 2
            continue
        if depth > 0 and pair == "-/":
            depth -= 1
            i += 2
            continue
        if depth == 0:
            code.append(line[i])
        i += 1
    return depth, "".join(code)


def split_header(source: str) -> SourceSplit:
    """Cut `source` after its last leading header command (see the module docstring)."""
    lines = source.split("\n")
    commands: list[tuple[int, str]] = []
    depth = 0
    last_open = False
    for number, line in enumerate(lines, start=1):
        if depth == 0 and line.lstrip().startswith("/--"):
            break  # a doc comment belongs to the declaration after it
        depth, code = _comment_depth(line, depth)
        text = code.rstrip()
        if not text.strip():
            continue  # blank line or comment among the header commands
        if depth > 0:
            break  # a comment opened after a command: leave the whole line to the body
        if _HEADER_COMMAND.match(text.lstrip()) and not _SCOPED.search(text):
            commands.append((number, text))
            last_open = text.lstrip().startswith("open")
            continue
        if last_open and _CONTINUATION.match(text):
            commands.append((number, text))
            continue
        break
    offset = commands[-1][0] if commands else 0
    body = "\n".join(lines[offset:])
    key = "\n".join(text for _, text in commands)
    return SourceSplit(tuple(commands), body, offset, key)
