"""The one place where a Coq text is prepared for the toolchain it runs on.

Rocq 9 renamed the standard library's logical root: `From Stdlib Require ...`, `Stdlib.Arith`
(and `Corelib.` for the prelude), where Coq 8 says `From Coq Require ...`, `Coq.Arith`. Rocq 9
still accepts the old root (a deprecated alias, a warning only), so a Coq 8 text needs nothing
there; a Rocq 9 text on Coq 8 gets its root renamed here: `From Stdlib`/`From Corelib` to
`From Coq`, and a qualified name's leading `Stdlib.`/`Corelib.` to `Coq.`. Nothing else is
touched: comments and strings are left as they are (found by `coq_source`'s lexer), and so is
every other word, so what a statement says does not change.

Every replacement keeps the text's length (the new root is padded with spaces, before a
qualified name and after the root in a `From` clause), so every byte offset coqc reports, and
every hole and sentence span, means the same place in the original text. A text that uses
`Stdlib`/`Corelib` as a name of its own (a `Module Stdlib`, a bare `Stdlib` anywhere but after
`From`) keeps its qualified names: they may be its own; its `From` clauses are still mapped.

`prepare_for` is applied to every text a Coq process reads (`CoqBackend.compile`, the warm
session's `exchange`), and `CoqBackend.check` records its list of changes in the result, so a
verdict says what was changed.

`prepare_task` is the other half, once per task before a run: the header changes a statement
written for another Coq needs on this toolchain (a warning turned off, an import line; the
rules and why are in `backends/coq_prepare.py`), recorded in the task's
`metadata.preparation`. Unlike the mapping above it changes lengths (it adds header lines),
which is why it is made on the task, before any prover sees it, and never on a text in flight.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from formalbench.backends.coq_prepare import ToolchainFacts, facts_for
from formalbench.backends.coq_prepare import prepare_task as _prepare_task
from formalbench.backends.coq_source import blank_comments_and_strings
from formalbench.core.records import Task

if TYPE_CHECKING:
    from formalbench.toolchains.toolchain import Toolchain

_NEW_ROOTS = ("Stdlib", "Corelib")
# on the UTF-8 bytes: coqc's offsets are byte offsets, and so is the length kept
_FROM = re.compile(rb"\bFrom(\s+)(Stdlib|Corelib)(?=\s)")
_QUALIFIED = re.compile(rb"(?<![\w.'])(Stdlib|Corelib)\.(?=[A-Za-z_])")
_BARE = re.compile(rb"(?<![\w.'])(Stdlib|Corelib)(?![\w']|\.[A-Za-z_])")  # `Module Stdlib.`


class HasVersion(Protocol):
    def version(self) -> str: ...


def _major(version: str) -> int | None:
    found = re.match(r"\s*(\d+)", version)
    return int(found.group(1)) if found else None


def _line(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def prepare_for(toolchain: HasVersion, text: str) -> tuple[str, list[str]]:
    """`text` as it must be given to `toolchain`'s Coq, and the changes made (one line each,
    `line N: From Stdlib -> From Coq`); the text itself and no change where none is needed."""
    major = _major(toolchain.version())
    if major is None or major >= 9 or not any(root in text for root in _NEW_ROOTS):
        return text, []
    data = text.encode("utf-8")
    clean = blank_comments_and_strings(data)
    out = bytearray(data)
    changes: list[str] = []
    from_roots = set()
    for match in _FROM.finditer(clean):
        start, end = match.span(2)
        from_roots.add(start)
        out[start:end] = b"Coq".ljust(end - start)
        root = match.group(2).decode()
        changes.append(f"line {_line(data, start)}: From {root} -> From Coq")
    if any(m.start(1) not in from_roots for m in _BARE.finditer(clean)):
        if _QUALIFIED.search(clean):
            changes.append(
                "qualified Stdlib./Corelib. names left as written: the text uses the name "
                "itself, so they may be its own"
            )
        return out.decode("utf-8"), changes
    for match in _QUALIFIED.finditer(clean):
        start, end = match.span(1)
        out[start : end + 1] = b"Coq.".rjust(end + 1 - start)
        changes.append(f"line {_line(data, start)}: {match.group(1).decode()}. -> Coq.")
    return out.decode("utf-8"), changes


def names_for(toolchain: HasVersion, names: Iterable[str]) -> set[str]:
    """Fully qualified names (an explicit axiom allow-list: `--allow-axiom`, a task's
    `allowed_axioms`) as the toolchain's kernel prints them, the names given kept: on Coq 8 a
    `Stdlib.`/`Corelib.` root is `Coq.`; on Rocq 9 a `Coq.` name is what Rocq itself reads
    it as, the same path under `Stdlib.` or `Corelib.` (its prelude; Rocq resolves the old
    root to whichever holds the name, and a path is in one of them only). So a task written
    for either names the same axiom on both, as its text does (`prepare_for`)."""
    major = _major(toolchain.version())
    out = set(names)
    for name in names:
        root, _, rest = name.partition(".")
        if not rest:
            continue
        if major is not None and major < 9 and root in _NEW_ROOTS:
            out.add(f"Coq.{rest}")
        elif major is not None and major >= 9 and root == "Coq":
            out.update(f"{new}.{rest}" for new in _NEW_ROOTS)
    return out


def prepare_task(toolchain: Toolchain, task: Task) -> Task:
    """`task` with its header prepared for `toolchain` (the same task when nothing is
    needed); what was done is in `metadata.preparation`."""
    return _prepare_task(task, toolchain_facts(toolchain))


def toolchain_facts(toolchain: Toolchain) -> ToolchainFacts:
    """What the header rules ask of a toolchain: its Coq version, its library packages, the
    modules it can load (read once per toolchain, version and root)."""
    key = (toolchain.name, toolchain.version(), str(toolchain.root))
    if key not in _FACTS:
        _FACTS[key] = _facts(toolchain)
    return _FACTS[key]


_FACTS: dict[tuple[str, str, str], ToolchainFacts] = {}


def _facts(toolchain: Toolchain) -> ToolchainFacts:
    with tempfile.TemporaryDirectory(prefix="formalbench-where-") as work:
        try:
            done = toolchain.run([toolchain.program("coqc"), "-where"], cwd=work, timeout=120)
            where = done.stdout.strip() if done.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            where = ""
    folders = []
    if where:
        inside = Path(where) / "user-contrib"
        folders.append(toolchain.root / inside.relative_to("/") if toolchain.root else inside)
    return facts_for(toolchain.name, toolchain.version(), toolchain.libraries(), folders)
