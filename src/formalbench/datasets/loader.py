"""`load_tasks`: any supported dataset (a JSONL file, a folder of sources, a shipped name) in,
tasks and a list of problems out.

The format is recognised from the data rather than named by the user: a JSONL file by the
fields of its first record, a folder by the `.lean` / `.v` files under it. A bad line never
costs the rest of the file: it is reported with its file and line, then skipped or made
fatal by `on_error`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from formalbench.backends.coq_project import project_file
from formalbench.core.errors import InputError
from formalbench.core.records import Task
from formalbench.datasets import coq_tasks
from formalbench.datasets import importers as imp
from formalbench.datasets.shipped import shipped_names, shipped_path
from formalbench.datasets.text import split_header

OnError = Literal["skip", "fail"]
SPLIT_FOLDERS = {"test": "test", "valid": "valid", "validation": "valid", "train": "train"}
_GENERIC_FOLDERS = {"src", "lean4", "lean4_files", "coq", "data", *SPLIT_FOLDERS}
_SKIP_FILES = {"lakefile.lean"}


@dataclass(frozen=True)
class Problem:
    """Something wrong with one line or file of a dataset; `line` is 1-based when known."""

    file: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.message}"


@dataclass
class LoadedDataset:
    """The tasks read from one dataset, in file order, and the problems met on the way."""

    source: str
    format: str
    tasks: list[Task] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # files of a folder import left out on purpose (nothing to prove in them), with why
    skipped: list[Problem] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set, repr=False)

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def _accept(self, task: Task, file: Path, line: int | None = None) -> None:
        """Keep a task under a unique id: two tasks with one id would share attempts in a run.

        Our own format must have unique ids (a repeat is a problem). Public sets do reuse
        names for different problems (ProofNet's `exercise_3_3` is in two books), so there
        a repeat is kept as `name-2`, `name-3`... with the published name in metadata.
        """
        if task.id in self._ids:
            if self.format == "native":
                self.problems.append(Problem(str(file), f"duplicate task id {task.id!r}", line))
                return
            number = 2
            while f"{task.id}-{number}" in self._ids:
                number += 1
            metadata = {**task.metadata, "published_id": task.id}
            task = task.model_copy(update={"id": f"{task.id}-{number}", "metadata": metadata})
        self._ids.add(task.id)
        self.tasks.append(task)


def load_tasks(
    spec: str | Path, *, on_error: OnError = "fail", project_given: bool = False
) -> LoadedDataset:
    """Read a dataset named by a path (JSONL file, source file, folder) or a shipped name.

    Raises InputError for a missing, unreadable, empty or unrecognised dataset, and, with
    `on_error="fail"`, for the first malformed line (naming file:line and what is wrong).
    A task's `coq_project` field must stay inside the dataset's folder (see
    `_anchor_projects`) unless `project_given`: the user named the project on the command
    line (`--coq-project`), which overrides the field.
    """
    if on_error not in ("skip", "fail"):
        raise InputError(f"on_error must be 'skip' or 'fail', not {on_error!r}")
    path = Path(spec).expanduser()
    if not path.exists():
        shipped = shipped_path(str(spec))
        if shipped is None:
            raise InputError(
                f"{spec}: no such file or directory, and not a shipped dataset "
                f"(shipped: {', '.join(shipped_names())})"
            )
        path = shipped
    if path.is_dir():
        loaded = _load_directory(path)
    elif path.suffix == ".jsonl":
        loaded = _load_jsonl(path)
    elif path.suffix == ".json":
        loaded = _load_json_list(path)
    elif path.suffix in imp.LANGUAGE_OF_SUFFIX:
        loaded = LoadedDataset(source=str(path), format="source-files")
        _add_source_file(loaded, path, split=None, source=path.parent.name)
    else:
        raise InputError(
            f"{path}: not a dataset (expected a .jsonl or .json file, a .lean/.v file or a folder)"
        )
    _anchor_projects(loaded, path if path.is_dir() else path.parent, project_given)
    if not loaded.tasks and loaded.problems:
        raise InputError(
            f"{loaded.source}: no usable task ({len(loaded.problems)} "
            f"problem{'s' if len(loaded.problems) > 1 else ''}, the first: {loaded.problems[0]})"
        )
    if on_error == "fail" and loaded.problems:
        more = len(loaded.problems) - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise InputError(f"{loaded.problems[0]}{extra}")
    return loaded


def _anchor_projects(loaded: LoadedDataset, folder: Path, project_given: bool) -> None:
    """A task's relative `coq_project` names a folder beside the dataset, wherever the
    command runs: make it absolute against the dataset's folder.

    A dataset is data (issue 29 item 4): a field that leaves the dataset's folder (`..`, an
    absolute path elsewhere, a symlink out) would make formalbench read and pass to coqc a
    folder its author chose anywhere on the user's machine (`/`, `/proc`). It is refused in
    one line unless the user gave the project on the command line (`project_given`: the
    field is overridden then). Projects found beside source files are formalbench's own
    finding (`_coq_project_of`), not a field, and stay as found."""
    if loaded.format == "source-files":
        return
    home = folder.resolve()
    for i, task in enumerate(loaded.tasks):
        if not task.coq_project:
            continue
        written = Path(task.coq_project).expanduser()
        try:
            where = (written if written.is_absolute() else folder / written).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise InputError(
                f"{loaded.source}: task {task.id}: coq_project {task.coq_project!r}: {exc}"
            ) from None
        if not project_given and not where.is_relative_to(home):
            raise InputError(
                f"{loaded.source}: task {task.id}: coq_project {task.coq_project!r} leaves the "
                f"dataset's folder {home}; give the project on the command line "
                "(--coq-project DIR) if you trust it"
            )
        loaded.tasks[i] = task.model_copy(update={"coq_project": str(where)})


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if b"\x00" in data[:8192]:
        raise InputError(f"{path}: binary file, expected text")
    return data


def _read_text(path: Path) -> str:
    try:
        return _read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _detect(row: dict[str, Any]) -> str | None:
    if {"id", "language", "formal"} <= row.keys():
        return "native"
    if "lean4_file" in row:
        return "putnambench"
    if imp.is_cambench_row(row):
        return "cambench"
    if {"name", "formal_statement"} <= row.keys():
        return "statements"
    return None


def _statement_source(path: Path) -> str:
    name = path.name.lower()
    if "minif2f" in name:
        return "miniF2F"
    if "proofnet" in name:
        return "ProofNet"
    return path.stem


def _load_jsonl(path: Path) -> LoadedDataset:
    content = _read_bytes(path).removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark
    if not content.strip():
        raise InputError(f"{path}: empty file, expected one JSON record a line")
    loaded = LoadedDataset(source=str(path), format="")
    source = _statement_source(path)
    for number, raw in enumerate(content.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            loaded.problems.append(Problem(str(path), f"not UTF-8 text (byte {exc.start})", number))
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            loaded.problems.append(Problem(str(path), f"not valid JSON ({exc.msg})", number))
            continue
        if not isinstance(row, dict):
            kind = type(row).__name__
            loaded.problems.append(
                Problem(str(path), f"expected a JSON object, got {kind}", number)
            )
            continue
        if not loaded.format:
            detected = _detect(row)
            if detected is None:
                keys = ", ".join(sorted(row)[:8])
                raise InputError(
                    f"{path}:{number}: unknown record layout (fields: {keys}); expected a task "
                    "record (id, language, formal), miniF2F/ProofNet (name, formal_statement), "
                    "PutnamBench (name, lean4_file) or CAM-Bench (id, formal_statement, "
                    "source book / exercise, type tags)"
                )
            loaded.format = detected
        try:
            if loaded.format == "native":
                task = imp.from_native(line)
            elif loaded.format == "putnambench":
                task = imp.from_putnam_row(row)
            elif loaded.format == "cambench":
                task = imp.from_cambench_row(row)
            else:
                task = imp.from_statement_row(row, source=source)
        except imp.RowError as exc:
            loaded.problems.append(Problem(str(path), str(exc), number))
            continue
        loaded._accept(task, path, number)
    if not loaded.format:  # every line was malformed
        loaded.format = "unknown"
    return loaded


def _load_json_list(path: Path) -> LoadedDataset:
    """A JSON file holding a list of records (CAM-Bench publishes its problems so), or an
    object whose one list-valued field holds them; read as JSONL with entry numbers."""
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else data
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: expected a JSON list of problem records")
    loaded = LoadedDataset(source=str(path), format="")
    for number, row in enumerate(data, start=1):
        where = f"entry {number}"
        if not isinstance(row, dict):
            loaded.problems.append(Problem(str(path), f"{where}: expected a JSON object", None))
            continue
        if not loaded.format:
            if not imp.is_cambench_row(row):
                keys = ", ".join(sorted(row)[:8])
                raise InputError(
                    f"{path}: {where}: unknown record layout (fields: {keys}); a .json file "
                    "must hold CAM-Bench records (id, formal_statement, ...)"
                )
            loaded.format = "cambench"
        try:
            task = imp.from_cambench_row(row)
        except imp.RowError as exc:
            loaded.problems.append(Problem(str(path), f"{where}: {exc}", None))
            continue
        loaded._accept(task, path, number)
    return loaded


def _load_directory(root: Path) -> LoadedDataset:
    files = sorted(
        p
        for p in root.rglob("*")
        if p.suffix in imp.LANGUAGE_OF_SUFFIX
        and p.name not in _SKIP_FILES
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.is_file()
    )
    if not files:
        raise InputError(f"{root}: no .lean or .v files in this folder")
    loaded = LoadedDataset(source=str(root), format="source-files")
    name = root.resolve()
    while name.name in _GENERIC_FOLDERS and name.parent != name:
        name = name.parent
    for path in files:
        split = SPLIT_FOLDERS.get(path.parent.name.lower())
        _add_source_file(loaded, path, split=split, source=name.name, root=root)
    if not loaded.tasks and loaded.skipped and not loaded.problems:
        raise InputError(
            f"{root}: no file with a hole (sorry / Admitted) to prove; "
            f"{len(loaded.skipped)} finished file(s) skipped, e.g. {loaded.skipped[0]}"
        )
    return loaded


def _add_source_file(
    loaded: LoadedDataset, path: Path, *, split: str | None, source: str, root: Path | None = None
) -> None:
    content = _read_text(path)
    if not _has_body(content, path):
        return  # an aggregator of imports (e.g. MiniF2F/Test.lean), not a problem
    if path.suffix == ".lean":
        toolchain, revision = _lean_project_versions(path, root)
    else:  # the Coq the folder says it was written for (PutnamBench-Coq: coq-8.18)
        toolchain, revision = _coq_written_for(path.parent, root), None
    try:
        task = imp.from_source_file(
            path,
            content,
            split=split,
            source=source,
            toolchain=toolchain,
            library_revision=revision,
        )
    except imp.NoHoleError as exc:
        if root is None:  # the one file asked for: an error, not a skip
            loaded.problems.append(Problem(str(path), str(exc)))
        else:
            loaded.skipped.append(Problem(str(path), str(exc)))
        return
    except imp.RowError as exc:
        loaded.problems.append(Problem(str(path), str(exc)))
        return
    project = _coq_project_of(path, root) if path.suffix == ".v" else None
    if project is not None:
        task = task.model_copy(update={"coq_project": project})
    loaded._accept(task, path)


def _has_body(content: str, path: Path) -> bool:
    """False for a file that only imports (nothing to prove in it)."""
    _, formal = split_header(content, imp.LANGUAGE_OF_SUFFIX[path.suffix])
    return bool(formal.strip())


def _lean_project_versions(path: Path, root: Path | None) -> tuple[str | None, str | None]:
    """The toolchain and Mathlib revision of the Lake project a file sits in, if any."""
    stop = (root or path.parent).resolve()
    folder = path.parent.resolve()
    while True:
        toolchain_file = folder / "lean-toolchain"
        if toolchain_file.is_file():
            return _project_versions(folder)
        if folder in (stop, stop.parent) or folder.parent == folder:
            return None, None
        folder = folder.parent


def _coq_project_of(path: Path, root: Path | None) -> str | None:
    """The folder of the `_CoqProject` a Coq file sits in (up to the parent of the folder
    imported: `theories/` is usually one below it), so its tasks check under its load path."""
    stop = (root or path.parent).resolve()
    folder = path.parent.resolve()
    while True:
        if project_file(folder) is not None:  # _RocqProject or _CoqProject
            return str(folder)
        if folder == stop.parent or folder.parent == folder:
            return None
        folder = folder.parent


def _coq_written_for(folder: Path, root: Path | None) -> str | None:
    return _written_for_cached(folder.resolve(), (root or folder).resolve())


@functools.lru_cache(maxsize=64)
def _written_for_cached(folder: Path, root: Path) -> str | None:
    """Read once per folder, not once per file (PutnamBench-Coq holds 412)."""
    return coq_tasks.written_for(folder, root)


@functools.lru_cache(maxsize=64)
def _project_versions(folder: Path) -> tuple[str | None, str | None]:
    """Read once per project, not once per file (a miniF2F folder holds 488 files)."""
    toolchain_file = folder / "lean-toolchain"
    toolchain = toolchain_file.read_text(encoding="utf-8", errors="replace").strip() or None
    return toolchain, _mathlib_revision(folder / "lake-manifest.json")


def _mathlib_revision(manifest: Path) -> str | None:
    try:
        packages = json.loads(manifest.read_text(encoding="utf-8")).get("packages", [])
    except (OSError, ValueError, AttributeError):
        return None
    for package in packages:
        if isinstance(package, dict) and package.get("name") == "mathlib":
            rev = package.get("rev")
            return rev if isinstance(rev, str) else None
    return None
