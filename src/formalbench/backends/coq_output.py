"""Reading what coqc writes: located messages on stderr, `-time` sentence lines on stdout.

coqc prints each message as a block

    File "./Candidate.v", line 3, characters 58-70:
    Error:
    In environment
    n : nat
    ...

(`Warning:` likewise, tagged `[name,category]` at its end), plus a few messages without a
location (`Error: There are pending proofs ...`, `Fatal error: out of memory`). With `-time`
it prints one `Chars A - B [sentence] T secs (...)` line per executed sentence, A and B
absolute byte offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from formalbench.core.records import Severity

_HEADER = re.compile(
    r'^File "(?P<file>[^"]*)", line (?P<line>\d+), characters (?P<a>\d+)-(?P<b>\d+):'
)
_LEVEL = re.compile(r"^(?P<level>Error|Warning|Fatal error|Anomaly)\s*:\s?(?P<rest>.*)$")
_TAG = re.compile(r"\s*\[(?P<name>[\w-]+),[\w,-]+\]\s*$")
_TIME = re.compile(r"^Chars (\d+) - (\d+) \[.*\] [\d.]+ secs")

# OCaml 4's runtime (Coq 8.16) says `out of memory`; OCaml 5's (Rocq 9.2) says `allocation
# failure during minor GC` when RLIMIT_AS refuses the heap more room.
_EXHAUSTED = re.compile(
    r"(?:not enough memory|out of memory|stack overflow|allocation failure during \w+ GC)\.?",
    re.IGNORECASE,
)


def is_exhaustion(message: CoqMessage) -> bool:
    """Whether coqc gave up for lack of memory or stack (not a fault of the proof text)."""
    return message.severity == Severity.error and bool(_EXHAUSTED.fullmatch(message.text))


@dataclass
class CoqMessage:
    """One message as coqc printed it; `start`/`end` are absolute byte offsets in the file."""

    severity: Severity
    text: str
    file: str | None = None
    line: int | None = None
    start: int | None = None
    end: int | None = None
    tag: str | None = None  # a warning's name, e.g. notation-overridden


def _severity(level: str) -> Severity:
    return Severity.warning if level == "Warning" else Severity.error


def parse_messages(stderr: str, line_starts: list[int]) -> list[CoqMessage]:
    """Split coqc's stderr into messages; `line_starts` (byte offsets) locate `line L`.

    A message runs until the next `File "..."` header or the next unlocated `Error:` line;
    its text keeps every line, without the `Error:` prefix and the warning tag.
    """
    messages: list[CoqMessage] = []
    location: tuple[str, int, int | None, int | None] | None = None
    current: CoqMessage | None = None
    body: list[str] = []

    def flush() -> None:
        nonlocal current, body
        if current is not None:
            text = "\n".join(body).strip()
            tag = _TAG.search(text)
            if tag and current.severity == Severity.warning:
                current.tag = tag.group("name")
                text = text[: tag.start()].rstrip()
            current.text = text
            messages.append(current)
        current, body = None, []

    for raw in stderr.splitlines():
        header = _HEADER.match(raw)
        if header:
            flush()
            line = int(header["line"])
            base = line_starts[line - 1] if 0 < line <= len(line_starts) else None
            start = base + int(header["a"]) if base is not None else None
            end = base + int(header["b"]) if base is not None else None
            location = (header["file"], line, start, end)
            continue
        level = _LEVEL.match(raw)
        if level:
            flush()
            current = CoqMessage(severity=_severity(level["level"]), text="")
            if location is not None:
                current.file, current.line, current.start, current.end = location
            location = None
            body = [level["rest"]] if level["rest"].strip() else []
            continue
        if current is not None:
            body.append(raw)
    flush()
    return messages


def sentence_spans(stdout: str, limit: int) -> list[tuple[int, int]]:
    """Byte spans of the executed sentences that lie inside the first `limit` bytes."""
    spans = []
    for line in stdout.splitlines():
        match = _TIME.match(line)
        if match:
            start, end = int(match[1]), int(match[2])
            if end <= limit:
                spans.append((start, end))
    return spans


def is_time_line(line: str) -> bool:
    return _TIME.match(line) is not None
