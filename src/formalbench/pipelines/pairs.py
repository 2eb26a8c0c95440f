"""`formalbench check --pairs FILE.jsonl`: verify many candidates in one process.

Users who check thousands of files paid the start-up of a process (and of an assistant) per
file. Here one process reads a JSON Lines file, one pair a line, and verifies the pairs
concurrently: the text layer runs in the event loop, the assistant's checks on the backend's
own pool (`workers` at once, as in `eval`), and with a verdict cache a pair already judged
under the same assistant and rules is answered from it (and two equal pairs in flight are
checked once). Results come back one per input line, in input order, as they are ready.

A line that cannot be checked (not JSON, a missing file, an original with no hole, an unknown
kind) gives an error result for that line; the batch goes on. See docs/check-pairs.md.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formalbench.backends.registry import BACKENDS, backend_for_path, language_of
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.errors import FormalbenchError, InputError
from formalbench.core.records import TaskKind

if TYPE_CHECKING:  # imported where used: a single `check` never loads asyncio
    import asyncio

#: The fields a line may have; a path field and its `_text` form exclude each other.
FIELDS = {"id", "candidate", "candidate_text", "original", "original_text", "kind"}


def read_source(path: str | Path, role: str) -> str:
    """The text of a source file, or an InputError naming the file and what is wrong."""
    p = Path(path)
    label = f"{role} {str(path)!r}"
    if not p.exists():
        raise InputError(f"{label}: no such file")
    if p.is_dir():
        raise InputError(f"{label}: is a directory, not a source file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    if b"\x00" in data:
        raise InputError(f"{label}: is a binary file, not source text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: is not valid UTF-8 (bad byte at offset {exc.start})") from None
    if not text.strip():
        raise InputError(f"{label}: is empty")
    return text.removeprefix("\ufeff")


def pick_backend(backend: str | None, *paths: str | None) -> str:
    """`backend` when given (validated), else the one the first path's suffix names."""
    if backend is not None:
        language_of(backend)  # validates the name
        return backend.strip().lower()
    named: dict[str, str] = {}  # backend -> the first path whose suffix names it
    for path in paths:
        if path is None:
            continue
        try:
            named.setdefault(backend_for_path(path), path)
        except InputError:
            continue
    if len(named) > 1:
        shown_mixed = "; ".join(f"{p!r} is {b}" for b, p in named.items())
        raise InputError(
            f"mixed proof assistants: {shown_mixed} (by suffix); give files of one assistant, "
            "or name it with --backend"
        )
    if named:
        return next(iter(named))
    shown = next((p for p in paths if p is not None), None)
    what = f"{shown!r}" if shown else "inline text"
    raise InputError(
        f"cannot tell the proof assistant of {what} from its suffix (.lean or .v); "
        f"give --backend ({', '.join(BACKENDS)})"
    )


def parse_kind(kind: str | None) -> TaskKind | None:
    """A task kind by name; None (or `auto`) reads it off the original."""
    if kind is None or kind.strip().lower() == "auto":
        return None
    try:
        return TaskKind(kind.strip().lower())
    except ValueError:
        choices = ", ".join(["auto", *(k.value for k in TaskKind)])
        raise InputError(f"kind {kind!r} is not one of {choices}") from None


@dataclass(frozen=True)
class Pair:
    """One line of the pairs file, its files read."""

    line: int
    id: str
    candidate: str | None  # the path as written (None: inline text)
    original: str | None
    candidate_text: str
    original_text: str
    kind: TaskKind | None
    backend: str


@dataclass(frozen=True)
class BadLine:
    """A line that cannot be checked, and why (one line of text)."""

    line: int
    id: str
    candidate: str | None
    original: str | None
    error: str


def _side(entry: dict[str, Any], name: str, base: Path) -> tuple[str | None, str]:
    """(path as written or None, text) of the `name` side of a line."""
    path, text = entry.get(name), entry.get(f"{name}_text")
    if (path is None) == (text is None):
        raise InputError(f"give exactly one of {name!r} (a path) and {name + '_text'!r}")
    if text is not None:
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{name}_text: must be non-empty text")
        return None, text
    if not isinstance(path, str) or not path.strip():
        raise InputError(f"{name}: must be a file path")
    return path, read_source(base / path, name)


def parse_line(raw: str, number: int, base: Path, backend: str | None) -> Pair | BadLine:
    """One line of the pairs file; paths are relative to `base` (the file's folder)."""
    entry: Any = None
    ident = f"line {number}"
    try:
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"not a JSON object ({exc.msg} at column {exc.colno})") from None
        if not isinstance(entry, dict):
            raise InputError("not a JSON object")
        if "id" in entry:
            if not isinstance(entry["id"], str | int) or isinstance(entry["id"], bool):
                raise InputError("id: must be a string or a number")
            ident = str(entry["id"])
        unknown = sorted(set(entry) - FIELDS)
        if unknown:
            raise InputError(f"unknown field(s) {', '.join(unknown)}; known: {sorted(FIELDS)}")
        kind = entry.get("kind")
        if kind is not None and not isinstance(kind, str):
            raise InputError("kind: must be a string")
        cand_path, cand_text = _side(entry, "candidate", base)
        orig_path, orig_text = _side(entry, "original", base)
        name = pick_backend(backend, cand_path, orig_path)
        return Pair(
            number, ident, cand_path, orig_path, cand_text, orig_text, parse_kind(kind), name
        )
    except InputError as exc:
        where = entry if isinstance(entry, dict) else {}
        cand, orig = where.get("candidate"), where.get("original")
        return BadLine(
            number,
            ident,
            cand if isinstance(cand, str) else None,
            orig if isinstance(orig, str) else None,
            str(exc),
        )


def read_pairs(path: str | Path, backend: str | None = None) -> Iterator[Pair | BadLine]:
    """The pairs of a JSON Lines file, read lazily (blank lines are skipped); the file itself
    missing or unreadable is an InputError for the whole batch."""
    p = Path(path)
    label = f"--pairs {str(path)!r}"
    if not p.is_file():
        raise InputError(f"{label}: {'is a directory' if p.is_dir() else 'no such file'}")
    try:
        handle = p.open(encoding="utf-8", errors="strict")
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    return _lines(handle, p.parent, backend, label)


def _lines(handle: Any, base: Path, backend: str | None, label: str) -> Iterator[Pair | BadLine]:
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline()
            except UnicodeDecodeError:
                raise InputError(f"{label}: line {number + 1} is not valid UTF-8") from None
            if not raw:
                return
            number += 1
            if raw.strip():
                yield parse_line(raw, number, base, backend)


def _head(item: Pair | BadLine) -> dict[str, Any]:
    return {
        "line": item.line,
        "id": item.id,
        "candidate": item.candidate,
        "original": item.original,
    }


def error_result(item: Pair | BadLine, message: str) -> dict[str, Any]:
    """The result line of a pair that could not be checked."""
    return {**_head(item), "passed": False, "error": message}


async def _check_one(pair: Pair, verifier: StrictVerifier, timeout: float | None) -> dict[str, Any]:
    try:
        try:
            targets = verifier.targets(pair.original_text)
        except InputError as exc:
            raise InputError(f"original: {exc}") from None
        kind = pair.kind if pair.kind is not None else verifier.task_kind(pair.original_text)
        verdict = await verifier.averify(
            pair.original_text, pair.candidate_text, kind=kind, timeout=timeout
        )
    except FormalbenchError as exc:
        return error_result(pair, str(exc))
    return {
        **_head(pair),
        "targets": targets,
        "kind": kind.value,
        **verdict.model_dump(mode="json"),
    }


async def check_pairs(
    items: Iterable[Pair | BadLine],
    verifier_for: Callable[[str], StrictVerifier],
    *,
    timeout: float | None = None,
    window: int = 16,
) -> AsyncIterator[dict[str, Any]]:
    """One result per item, in input order, with up to `window` pairs in flight.

    `verifier_for(backend name)` gives the verifier of a backend (built once by the caller);
    an error building it is that line's error. The window bounds memory for huge files while
    keeping the backend's pool busy (it should exceed the backend's workers)."""
    import asyncio

    async def resolved(result: dict[str, Any]) -> dict[str, Any]:
        return result

    pending: deque[asyncio.Task[dict[str, Any]]] = deque()
    source = iter(items)
    exhausted = False
    while True:
        while not exhausted and len(pending) < window:
            item = next(source, None)
            if item is None:
                exhausted = True
                break
            if isinstance(item, BadLine):
                job = resolved(error_result(item, item.error))
            else:
                try:
                    job = _check_one(item, verifier_for(item.backend), timeout)
                except FormalbenchError as exc:
                    job = resolved(error_result(item, str(exc)))
            pending.append(asyncio.ensure_future(job))
        if not pending:
            return
        try:
            yield await pending[0]
        except BaseException:
            for task in pending:
                task.cancel()
            raise
        pending.popleft()
