"""Where the exercises of a run come from: the textbook (phase 1's extraction), or a JSONL
of extracted exercises (one `ExtractedExercise` a line: an extraction exported, edited by
hand, or made by another reader), so the model stages can run on any reader's output.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

from pydantic import ValidationError

from formalbench.core.construct import ExtractedExercise
from formalbench.core.errors import InputError


def reference_stats(exercises: list[ExtractedExercise]) -> dict[str, int]:
    refs = [r for e in exercises for r in e.refs]
    resolved = sum(r.resolved for r in refs)
    return {
        "exercises": len(exercises),
        "references": len(refs),
        "resolved_references": resolved,
        "unresolved_references": len(refs) - resolved,
    }


def load_exercises_jsonl(
    path: Path, *, pattern: str | None = None, limit: int | None = None
) -> tuple[list[ExtractedExercise], dict[str, int]]:
    """The exercises of a JSONL file (book order = file order), filtered like extraction."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({exc})") from None
    exercises: list[ExtractedExercise] = []
    seen: set[str] = set()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            exercise = ExtractedExercise.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {lineno}: not JSON ({exc.msg})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the record"
            raise InputError(
                f"{path}, line {lineno}: not an extracted exercise ({where}: {first['msg']})"
            ) from None
        if exercise.id in seen:
            raise InputError(f"{path}, line {lineno}: exercise id {exercise.id!r} repeated")
        seen.add(exercise.id)
        if pattern is None or any(
            fnmatch.fnmatchcase(name, pattern) for name in (exercise.id, exercise.source_idx)
        ):
            exercises.append(exercise)
    if limit is not None:
        exercises = exercises[:limit]
    return exercises, reference_stats(exercises)


def extract(
    source: str, *, depth: int, pattern: str | None, limit: int | None
) -> tuple[list[ExtractedExercise], dict[str, int]]:
    """The exercises and counts of `source` (see module doc)."""
    path = Path(source)
    if path.suffix == ".jsonl":
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        return load_exercises_jsonl(path, pattern=pattern, limit=limit)
    if not path.exists():
        raise InputError(f"{path}: no such textbook folder or archive")
    try:  # phase 1, imported only when a textbook is read
        from formalbench.pipelines.construct.extract import extract_textbook
    except ModuleNotFoundError as exc:
        if exc.name != "formalbench.pipelines.construct.extract":
            raise
        raise InputError(
            f"{path}: this formalbench has no textbook reader "
            "(formalbench.pipelines.construct.extract); give a JSONL of extracted exercises"
        ) from None
    extraction = extract_textbook(path, depth=depth, pattern=pattern, limit=limit)
    stats = {str(k): int(v) for k, v in dict(extraction.stats).items()}
    exercises = list(extraction.exercises)
    stats.setdefault("exercises", len(exercises))
    return exercises, stats
