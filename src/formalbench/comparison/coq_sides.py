"""Each side of a Coq comparison elaborated in its own header only.

Two statements written for different headers cannot share one file: the candidate's
`Open Scope Z_scope` would make the reference's `a + b` an addition on `Z`, its imports
would add coercions and notations, its `Set Implicit Arguments` would change how the
reference's binders are read. So every statement is compiled, with the header commands it
came with and nothing else, as a definition `fb_statement_K : Type := (statement)` of a
library of its own header (`FbS<hash of the header>.v`, logical path `FbBeq`): the kernel
term is fixed there. A third file (`beq_coq`) then only `Require`s the libraries (no
`Import`: none of their notations, scopes, settings or hints is active) and speaks of the
statements by their fully qualified names, unfolded with `cbv delta [name]` (delta of that
one constant, no other reduction), the way the verifier's identity check compares an
original with a candidate.

Statements with the same header share a library (one coqc start per distinct header, not per
statement); none of them can name another (`fb_statement_*` is refused by `parse_statement`),
so sharing changes nothing. A library coqc refuses is compiled again without the statement
its first error points into, so each statement gets its own verdict (an error in the header
itself refuses every statement of that header).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import parse_messages
from formalbench.core.records import CheckStatus, Severity

LOGICAL = "FbBeq"  # the logical path of the statement libraries (`-Q FOLDER FbBeq`)
DEFINITION = "fb_statement_"


@dataclass(frozen=True)
class SideStatement:
    """What a library is built from: the header commands and the statement's type."""

    header: str
    term: str


@dataclass
class Sides:
    """The compiled libraries of a batch of statements, in `folder`."""

    folder: Path
    names: dict[int, str] = field(default_factory=dict)  # statement -> `FbS….fb_statement_K`
    errors: dict[int, str] = field(default_factory=dict)  # statement -> why coqc refused it

    def require(self) -> str:
        return require_line(self.names.values())

    def load_path(self) -> list[str]:
        return load_path(self.folder)


def require_line(names: Iterable[str]) -> str:
    """The command that loads the libraries of the constants `names` without importing
    anything of them."""
    libraries = sorted({n.split(".")[0] for n in names})
    return f"From {LOGICAL} Require {' '.join(libraries)}.\n" if libraries else ""


def load_path(folder: Path) -> list[str]:
    """coqc arguments under which `require_line` finds the libraries of `folder` from any
    working folder."""
    return ["-Q", str(folder.resolve()), LOGICAL]


_LIBRARY_PREFIX = re.compile(r"(?<![\w.'])(?:FbBeq\.)?FbS[0-9a-f]{16}\.")


def local_names(printed: str) -> str:
    """A printed term with the statement libraries' qualifiers dropped: a definition the
    statement came with reads `f` on both sides, as the two texts wrote it."""
    return _LIBRARY_PREFIX.sub("", printed)


def library_name(header: str) -> str:
    return "FbS" + hashlib.sha256(header.encode("utf-8")).hexdigest()[:16]


def library_text(header: str, terms: Sequence[tuple[int, str]]) -> tuple[str, dict[int, int]]:
    """The library of one header, and the statement each of its lines belongs to."""
    text = header if not header or header.endswith("\n") else header + "\n"
    owner: dict[int, int] = {}
    for k, term in terms:
        first = text.count("\n") + 1
        text += f"Definition {DEFINITION}{k} : Type := ({term}).\n"
        for line in range(first, text.count("\n") + 1):
            owner[line] = k
    return text, owner


def build_sides(
    backend: CoqBackend, statements: Sequence[SideStatement], folder: Path, timeout: float
) -> Sides:
    """Compile `statements` (already through the gate) into libraries in `folder`, one per
    distinct header; identical statements of one header share their definition."""
    sides = Sides(folder)
    groups: dict[str, dict[str, list[int]]] = {}
    for i, s in enumerate(statements):
        groups.setdefault(s.header, {}).setdefault(s.term, []).append(i)

    def one(header: str) -> None:
        terms = groups[header]
        library = library_name(header)
        pending = list(enumerate(terms))  # (k, term)
        while pending:
            text, owner = library_text(header, pending)
            outcome = backend.compile(folder, library, text, timeout, ["-Q", ".", LOGICAL])
            if outcome.status == CheckStatus.ok and not outcome.returncode:
                for k, term in pending:
                    for i in terms[term]:
                        sides.names[i] = f"{library}.{DEFINITION}{k}"
                return
            blamed, why = _blame(outcome.status, outcome.stderr, text, owner)
            refused = [(k, t) for k, t in pending if blamed is None or k == blamed]
            for _, term in refused:
                for i in terms[term]:
                    sides.errors[i] = why
            pending = [p for p in pending if p not in refused]

    with ThreadPoolExecutor(max_workers=max(1, min(len(groups), backend.workers))) as pool:
        list(pool.map(one, groups))
    return sides


def _blame(
    status: CheckStatus, stderr: str, text: str, owner: dict[int, int]
) -> tuple[int | None, str]:
    """The statement (its `K`) coqc's first error lies in, None for the header or no
    location, and the error in one line."""
    if status != CheckStatus.ok:
        return None, f"coqc ended with {status.value}: {' '.join(stderr.split())[:200]}"
    starts = [0] + [i + 1 for i, ch in enumerate(text.encode("utf-8")) if ch == 0x0A]
    errors = [m for m in parse_messages(stderr, starts) if m.severity == Severity.error]
    if not errors:
        return None, " ".join(stderr.split())[-200:] or "coqc failed without a message"
    first = errors[0]
    why = "Error: " + " ".join(first.text.split())[:300]
    return owner.get(first.line or 0), why
