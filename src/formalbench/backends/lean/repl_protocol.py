"""The wire format of the community Lean REPL (leanprover-community/repl).

Requests: one JSON object, then a blank line. The REPL reads lines until a blank one and
glues them together *without* the line breaks, so a raw newline inside a JSON string silently
changes the Lean text ("by\\nsorry" becomes "bysorry"); `encode_request` therefore always
writes the object on one line, with newlines escaped.

Replies: a pretty-printed JSON object followed by a blank line. `{"message": ...}` is an
error reply (unknown environment, a Lean exception). Some REPL builds print other text on
stdout before a reply, so `ReplyReader` looks for a JSON object that starts a line and ends
right before a blank line, and keeps whatever came before it as noise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from formalbench.backends.lean.messages import message_to_diagnostic, sorry_to_hole
from formalbench.core.records import Diagnostic, Hole

_OBJECT_START = re.compile(rb"\n\{")


def encode_request(request: Mapping[str, Any]) -> bytes:
    """One request as the REPL wants it: a single line of JSON and a blank line."""
    return json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def split_requests(text: str) -> list[dict[str, Any]]:
    """Read a stream of requests the way the REPL does (lines joined up to a blank line).

    Used to replay recorded sessions and by the test stand-in; it reproduces what the REPL
    makes of a request with a raw line break in it.
    """
    requests: list[dict[str, Any]] = []
    pending: list[str] = []
    for line in [*text.split("\n"), ""]:
        if line.strip():
            pending.append(line.rstrip())
            continue
        if pending:
            query = "".join(pending)
            pending = []
            if query.startswith(("#", "--")):  # the REPL skips comment lines
                continue
            requests.append(json.loads(query))
    return requests


def split_responses(text: str) -> list[dict[str, Any]]:
    """All replies in a recorded REPL output (pretty JSON objects separated by blank lines)."""
    reader = ReplyReader()
    reader.feed(text.encode())
    replies: list[dict[str, Any]] = []
    while (reply := reader.pop()) is not None:
        replies.append(reply)
    tail = reader.rest().strip()
    if tail:  # a last reply without its blank line (a truncated recording)
        replies.append(json.loads(tail))
    return replies


class ReplyReader:
    """Incremental reader of REPL replies from a byte stream."""

    def __init__(self) -> None:
        self._buf = b""
        self.noise: list[str] = []

    def feed(self, data: bytes) -> None:
        self._buf += data

    def rest(self) -> str:
        return self._buf.decode("utf-8", errors="replace")

    def pop(self) -> dict[str, Any] | None:
        """The next complete reply, or None until more bytes arrive."""
        buf = self._buf
        search_from = 0
        while (end := buf.find(b"}\n\n", search_from)) >= 0:
            end += 1
            starts = [0] if buf.startswith(b"{") else []
            starts += [m.start() + 1 for m in _OBJECT_START.finditer(buf, 0, end)]
            for start in starts:
                try:
                    obj = json.loads(buf[start:end])
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    if buf[:start].strip():
                        self.noise.append(buf[:start].decode("utf-8", errors="replace"))
                    self._buf = buf[end + 2 :]
                    return obj
            search_from = end
        return None


def reply_error(reply: Mapping[str, Any]) -> str | None:
    """The text of an error reply (`{"message": ...}` without an `env`), else None."""
    if "message" in reply and "env" not in reply and "proofState" not in reply:
        return str(reply["message"])
    return None


def reply_diagnostics(reply: Mapping[str, Any], line_offset: int = 0) -> list[Diagnostic]:
    """The messages of a reply as Diagnostics, lines moved by `line_offset`."""
    messages = reply.get("messages") or []
    return [message_to_diagnostic(m, line_offset) for m in messages if isinstance(m, Mapping)]


def reply_holes(reply: Mapping[str, Any], line_offset: int = 0) -> list[Hole]:
    """The sorries of a reply (with goal and proof state) as Holes."""
    sorries = reply.get("sorries") or []
    return [sorry_to_hole(s, line_offset) for s in sorries if isinstance(s, Mapping)]
