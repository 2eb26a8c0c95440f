"""Real (command, output) pairs of Lean, read from the quoted test files in
`tests/fixtures/lean_real/`.

Each fixture is a verbatim excerpt of a public Lean file whose `#guard_msgs`/`#check_msgs`
blocks are checked against real Lean by its project's CI (the Lean 4 repository, Mathlib, the
Lean reference manual, lean-by-example), with its source (repository, path, commit) on the
first line. A pair is one `/-- info: … -/` block with a single info message, followed by
`#guard_msgs in` and a `#check`/`#print` command, with the options in force for it: those set by
`set_option … in` around the block and by a plain `set_option` earlier in the same section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lean_real"
_SOURCE = re.compile(r"^-- source: (?P<repo>\S+) (?P<path>\S+)(?: @ (?P<commit>[0-9a-f]{40}))?")
_OPTION = re.compile(r"set_option\s+(?P<name>[\w.]+)\s+(?P<value>\S+)")
_GUARD = re.compile(
    r"^#(?:guard|check)_msgs(?:\s*\([^)]*\))?\s+in\b\s*(?P<rest>.*?)\s*(?:--.*)?$"
)  # a trailing comment (lean-by-example's `--#` display marker) is not the command


@dataclass(frozen=True)
class Pair:
    """One command Lean ran and the one info message it printed."""

    fixture: str
    repo: str
    path: str
    commit: str | None
    command: str
    output: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """`axioms`, `print`, `check` or `other`."""
        if self.command.startswith("#print axioms"):
            return "axioms"
        if self.command.startswith("#print"):
            return "print"
        if self.command.startswith("#check"):
            return "check"
        return "other"

    @property
    def pp_all(self) -> bool:
        return self.options.get("pp.all") == "true"


def _strip_in_prefixes(text: str, options: dict[str, str]) -> str:
    """`set_option a b in set_option c d in CMD` -> CMD, recording the options."""
    while m := re.match(r"\s*set_option\s+([\w.]+)\s+(\S+)\s+in\b\s*", text):
        options[m.group(1)] = m.group(2)
        text = text[m.end() :]
    return text.strip()


def read_pairs(path: Path) -> list[Pair]:
    """The pairs of one fixture file (see the module docstring)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    src = _SOURCE.match(lines[0])
    assert src, f"{path.name}: first line must name the source"
    scopes: list[dict[str, str]] = [{}]
    pending: dict[str, str] = {}
    pairs: list[Pair] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("section") or stripped.startswith("namespace"):
            scopes.append(dict(scopes[-1]))
        elif stripped.startswith("end") and len(scopes) > 1:
            scopes.pop()
        elif (m := _OPTION.match(stripped)) and stripped.endswith(" in"):
            pending[m["name"]] = m["value"]
        elif m := _OPTION.match(stripped):
            scopes[-1][m["name"]] = m["value"]
        elif stripped.startswith("/--"):
            j = i
            while "-/" not in lines[j]:
                j += 1
            doc = "\n".join(lines[i : j + 1])
            body = doc.removeprefix("/--").rsplit("-/", 1)[0].strip("\n ")
            options = {**scopes[-1], **pending}
            pending = {}
            k = j + 1
            guard = _GUARD.match(lines[k].strip()) if k < len(lines) else None
            if body.startswith("info:") and "\n---\n" not in body and guard:
                command = guard["rest"]
                k += 1
                while (
                    k < len(lines)
                    and lines[k].strip()
                    and (
                        not command.strip()
                        or command.rstrip().endswith(" in")
                        or lines[k][0] == " "
                    )
                ):
                    command += "\n" + lines[k]
                    k += 1
                command = _strip_in_prefixes(command, options)
                output = body.removeprefix("info:").strip()
                pairs.append(
                    Pair(
                        path.name, src["repo"], src["path"], src["commit"], command, output, options
                    )  # fmt: skip
                )
            i = k
            continue
        i += 1
    return pairs


def all_pairs() -> list[Pair]:
    """Every pair of every fixture file."""
    return [p for f in sorted(FIXTURES.glob("*.lean")) for p in read_pairs(f)]
