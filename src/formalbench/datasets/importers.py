"""One function per public format: a parsed row (or a source file) in, a `Task` out.

Each importer raises `RowError` with a short reason for a row it cannot use; the loader adds
the file and line and decides whether to skip or stop. Nothing here touches the disk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from formalbench.core.records import Informal, Language, Task, TaskKind
from formalbench.datasets import amber, coq_tasks
from formalbench.datasets import text as tx

LANGUAGE_OF_SUFFIX: dict[str, Language] = {".lean": Language.lean, ".v": Language.coq}


class RowError(ValueError):
    """A row or file that cannot become a task; the message says why."""


class NoHoleError(RowError):
    """The text has nothing left to prove: no hole, and no unfinished proof to give one. A
    folder import skips such a file (a benchmark repository also holds finished helper
    files and tools); in a task list it is a load error, as docs/task-format.md says."""


def _field(row: Mapping[str, Any], name: str, *, required: bool = True) -> str:
    value = row.get(name)
    if value is None:
        if required:
            raise RowError(f"missing field {name!r}")
        return ""
    if not isinstance(value, str):
        raise RowError(f"field {name!r} must be a string, not {type(value).__name__}")
    return value


def _with_hole(formal: str, language: Language, what: str) -> str:
    fixed = tx.ensure_hole(formal, language)
    if fixed is None:
        hole = "sorry" if language == Language.lean else "Admitted."
        raise NoHoleError(f"{what} has no hole ({hole}) and no unfinished proof to give one")
    return fixed


def from_native(line: str) -> Task:
    """The project's own format: one `Task.model_dump_json()` a line."""
    try:
        task = Task.model_validate_json(line)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}"
            for err in exc.errors()[:3]
        )
        raise RowError(f"not a valid task record ({problems})") from None
    if not tx.has_hole(task.formal, task.language):
        hole = "sorry" if task.language == Language.lean else "Admitted. / admit."
        raise NoHoleError(
            f"task {task.id!r}: its proof is finished (`formal` has no hole: {hole}); "
            "a task must leave something to prove"
        )
    problem = amber.construction_problem(task.formal, task.language, task.kind, task.constructions)
    if problem is not None:
        raise RowError(f"task {task.id!r}: {problem}")
    return task


def from_statement_row(row: Mapping[str, Any], *, source: str) -> Task:
    """miniF2F / ProofNet rows (DeepSeek-Prover layout and the newer ProofNet-lean4 port).

    Both carry `name`, `header` and `formal_statement`; the first adds `split`, a
    docstring `informal_prefix` and `goal`, the second `source`, `informal_stmt` (often
    with the informal proof glued on) and `informal_proof`.
    """
    name = _field(row, "name").strip()
    if not name:
        raise RowError("field 'name' is empty")
    formal = _with_hole(_field(row, "formal_statement"), Language.lean, "formal_statement")
    labels: dict[str, str] = {}
    metadata: dict[str, Any] = {}
    informal_proof: str | None = None
    if "informal_prefix" in row:
        statement = (
            tx.docstring_text(_field(row, "informal_prefix"))
            or _field(row, "informal_prefix").strip()
        )
    else:
        statement, informal_proof = tx.split_informal_proof(
            _field(row, "informal_stmt", required=False)
        )
    if row.get("informal_proof"):
        informal_proof = _field(row, "informal_proof")
    if informal_proof:
        metadata["informal_proof"] = informal_proof
    if row.get("goal"):
        metadata["goal"] = _field(row, "goal")
    if row.get("formal_proof"):
        metadata["formal_proof"] = _field(row, "formal_proof")
    book = _field(row, "source", required=False)
    if book:
        labels["book"] = Path(book).stem
    if source == "miniF2F" and (category := tx.name_category(name)):
        labels["category"] = category
    split = _field(row, "split", required=False) or None
    return Task(
        id=name,
        language=Language.lean,
        formal=formal,
        header=_field(row, "header", required=False),
        source=source,
        informal=Informal(statement=statement),
        kind=tx.kind_of(formal, Language.lean),
        split=split,
        labels=labels,
        metadata=metadata,
    )


def from_putnam_row(row: Mapping[str, Any]) -> Task:
    """A row of PutnamBench's merged JSONL: the whole Lean file plus informal text and tags.

    A `..._solution := sorry` abbreviation makes it a construction (`evaluation`) task; the
    answer PutnamBench leaves in a comment under it moves to `metadata.reference_solution`.
    """
    name = _field(row, "name").strip()
    if not name:
        raise RowError("field 'name' is empty")
    header, formal = tx.split_header(_field(row, "lean4_file"), Language.lean)
    formal, answers = tx.split_leaked_solutions(formal)
    formal = _with_hole(formal, Language.lean, "lean4_file")
    solution = _field(row, "informal_solution", required=False).strip()
    if solution in ("", "None.", "None"):
        solution = ""
    tags = row.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise RowError("field 'tags' must be a list of strings")
    labels = {"domain": ",".join(tags)} if tags else {}
    if match := re.match(r"putnam_(\d{4})_([ab])(\d+)", name):
        labels["year"] = match.group(1)
    kind = (
        TaskKind.evaluation if row.get("has_solution_abbrev") else tx.kind_of(formal, Language.lean)
    )
    metadata: dict[str, Any] = {"reference_solution": answers[0]} if answers else {}
    return Task(
        id=name,
        language=Language.lean,
        formal=formal,
        header=header,
        source="PutnamBench",
        informal=Informal(
            statement=_field(row, "informal_statement", required=False).strip()
            or tx.docstring_text(formal),
            solution=solution or None,
        ),
        kind=kind,
        labels=labels,
        metadata=metadata,
    )


def from_source_file(
    path: Path,
    content: str,
    *,
    split: str | None = None,
    source: str = "",
    toolchain: str | None = None,
    library_revision: str | None = None,
) -> Task:
    """One Lean (.lean) or Coq (.v) file with holes: one task named after the file stem."""
    language = LANGUAGE_OF_SUFFIX.get(path.suffix)
    if language is None:
        raise RowError(f"unknown source suffix {path.suffix!r} (expected .lean or .v)")
    try:  # an AMBER-style task says its kind and constructions in a marker comment
        content, marker = amber.read_marker(content, language)
        marked_kind = amber.marker_kind(marker)
    except amber.MarkerError as exc:
        raise RowError(str(exc)) from None
    header, formal = tx.split_header(content, language)
    metadata: dict[str, Any] = {}
    if language == Language.lean:
        formal, answers = tx.split_leaked_solutions(formal)
        if answers:
            metadata["reference_solution"] = answers[0]
    formal = _with_hole(formal, language, "the file")
    statement = tx.docstring_text(formal) if language == Language.lean else ""
    kind = marked_kind or tx.kind_of(formal, language)
    constructions = amber.marker_constructions(marker)
    if problem := amber.construction_problem(formal, language, kind, constructions):
        raise RowError(problem)
    labels = (
        {"category": c}
        if (c := tx.name_category(path.stem)) and "minif2f" in source.lower()
        else {}
    )
    postulates: list[str] = []
    if language == Language.coq:
        # what the statement declares for itself: its libraries, its own global assumptions,
        # and a contest's year and problem read from the file name (PutnamBench-Coq)
        labels = {**coq_tasks.contest_labels(path.stem), **labels}
        labels.update(coq_tasks.library_labels(header + formal))
        postulates = coq_tasks.top_level_postulates(header + formal)
    return Task(
        id=path.stem,
        language=language,
        formal=formal,
        header=header,
        source=source,
        informal=Informal(statement=marker.get("informal") or statement),
        kind=kind,
        constructions=constructions,
        split=split,
        labels=labels,
        toolchain=toolchain,
        library_revision=library_revision,
        postulates=postulates,
        metadata=metadata,
    )


# ---- CAM-Bench (optpku/CAM-Bench) ------------------------------------------------------
# The published JSON has, per problem: an id, the formal statement (a whole Lean file), the
# natural-language statement, the benchmark name, the source book / chapter / exercise and
# type tags (README of optpku/CAM-Bench); the construction records of the paper (App. A.1,
# C.1) add `source` ("book/Numerical Optimization_Chp16"), `source_idx` ("Exercise
# 16.24-(a)"), `index` and `problem_finally`. The key spellings are not fixed by a schema,
# so keys are compared lower-cased with spaces and hyphens read as underscores, and each
# field is taken from the first of these names present.
CAMBENCH_KEYS: dict[str, tuple[str, ...]] = {
    "id": ("id", "problem_id", "name", "index"),
    "formal": ("formal_statement", "formal", "lean_code", "lean", "lean4_code"),
    "informal": (
        "informal_statement",
        "natural_language_statement",
        "nl_statement",
        "informal",
        "problem_finally",
        "problem",
    ),
    "book": ("source_book", "book"),
    "chapter": ("chapter", "source_chapter"),
    "exercise": ("exercise", "source_exercise", "exercise_id", "source_idx"),
    "tags": ("type_tags", "tags", "problem_type", "type", "types"),
    "benchmark": ("benchmark", "benchmark_source"),
}
_CAMBENCH_ONLY = frozenset(
    {"source_book", "source_idx", "type_tags", "natural_language_statement", "nl_statement"}
)


def _norm_keys(row: Mapping[str, Any]) -> dict[str, Any]:
    return {re.sub(r"[\s\-]+", "_", str(k).strip().lower()): v for k, v in row.items()}


def _pick(row: Mapping[str, Any], field: str) -> Any:
    for key in CAMBENCH_KEYS[field]:
        if row.get(key) not in (None, ""):
            return row[key]
    return None


def is_cambench_row(row: Mapping[str, Any]) -> bool:
    """A CAM-Bench record: a formal statement and something only CAM-Bench records carry
    (its benchmark name, a source book, an exercise index, type tags)."""
    keys = _norm_keys(row)
    if _pick(keys, "formal") is None:
        return False
    benchmark = str(_pick(keys, "benchmark") or "").replace("-", "").lower()
    source = keys.get("source")
    return (
        benchmark == "cambench"
        or bool(_CAMBENCH_ONLY & keys.keys())
        or isinstance(source, Mapping)
        or ("chapter" in keys and "exercise" in keys)
    )


def _text_of(value: Any, field: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise RowError(f"field {field!r} must be a string, not {type(value).__name__}")
    return value.strip()


def from_cambench_row(row: Mapping[str, Any]) -> Task:
    """One CAM-Bench problem: the Lean file with its `sorry`s as the task, the source
    exercise and type tags as labels (`book`, `chapter`, `exercise`, `category`)."""
    keys = _norm_keys(row)
    raw_id = _pick(keys, "id")
    if raw_id is None:
        raise RowError(f"missing field 'id' (one of {', '.join(CAMBENCH_KEYS['id'])})")
    task_id = _text_of(raw_id, "id")
    if not task_id:
        raise RowError("field 'id' is empty")
    formal_text = _pick(keys, "formal")
    if formal_text is None:
        raise RowError("missing field 'formal_statement'")
    header, formal = tx.split_header(_text_of(formal_text, "formal_statement"), Language.lean)
    formal = _with_hole(formal, Language.lean, "formal_statement")
    informal = _pick(keys, "informal")
    labels: dict[str, str] = {}
    source = keys.get("source")
    nested = _norm_keys(source) if isinstance(source, Mapping) else {}
    for field in ("book", "chapter", "exercise"):
        value = _pick(nested, field) if nested else None
        value = value if value is not None else _pick(keys, field)
        if value is not None:
            labels[field] = _text_of(value, field)
    if isinstance(source, str) and source.strip() and "book" not in labels:
        # the construction records' "book/Numerical Optimization_Chp16"
        book = source.strip().removeprefix("book/")
        name, sep, chapter = book.rpartition("_Chp")
        labels["book"] = name if sep else book
        if sep and "chapter" not in labels:
            labels["chapter"] = chapter
    tags = _pick(keys, "tags")
    if isinstance(tags, str):
        tags = [t.strip() for t in re.split(r"[,;]", tags) if t.strip()]
    if tags is not None and (
        not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)
    ):
        raise RowError("field 'type_tags' must be a list of strings (or one string)")
    if tags:
        labels["category"] = ",".join(tags)
    return Task(
        id=task_id,
        language=Language.lean,
        formal=formal,
        header=header,
        source="CAM-Bench",
        informal=Informal(statement=_text_of(informal, "informal_statement") if informal else ""),
        kind=tx.kind_of(formal, Language.lean),
        labels=labels,
    )
