"""Read the PROBLEMS file of `formalbench formalize`: JSONL, one informal problem a line.

Each line is an object with `id` and `informal` (text), and optionally `solution` (the
answer of a "find" problem), `category`, `source` and `reference` (a formal statement in
the run's assistant that candidates are compared with: BEq, GTED); any other field is kept in the
problem's metadata. Every malformed line is reported as `file:line: what is wrong`, all of
them at once, because fixing a file one error per run is tedious. The name `example` (when
no such file exists) is the small set shipped with the package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.core.formalization import Problem
from formalbench.core.ids import check_id

EXAMPLES = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "formalize"
SHIPPED = {"example": EXAMPLES / "problems.jsonl"}
_KNOWN = {"id", "informal", "solution", "category", "source", "metadata", "reference"}
_MAX_SHOWN = 5


def resolve_problems_path(spec: str) -> Path:
    path = Path(spec).expanduser()
    if path.exists():
        return path
    if spec in SHIPPED:
        return SHIPPED[spec]
    raise InputError(f"{spec}: no such file (and not a shipped problem set: {', '.join(SHIPPED)})")


def load_problems(spec: str) -> list[Problem]:
    """The problems of `spec`, in file order; InputError naming every bad line."""
    path = resolve_problems_path(spec)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a JSONL file of problems")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    problems: list[Problem] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            problem = _problem(line)
        except ValueError as exc:
            errors.append(f"{path}:{number}: {exc}")
            continue
        if problem.id in seen:
            errors.append(
                f"{path}:{number}: duplicate id {problem.id!r} (first on line {seen[problem.id]})"
            )
            continue
        seen[problem.id] = number
        problems.append(problem)
    if errors:
        more = len(errors) - _MAX_SHOWN
        shown = "; ".join(errors[:_MAX_SHOWN]) + (f" (and {more} more)" if more > 0 else "")
        raise InputError(shown)
    if not problems:
        raise InputError(f"{path}: no problem in the file")
    return problems


def _problem(line: str) -> Problem:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    raw_id = data.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise ValueError("missing `id` (a non-empty string)")
    problem_id = check_id(str(raw_id).strip())  # the rule every kind of run's ids follow
    if any(ch in problem_id for ch in "#/") or any(ch.isspace() for ch in problem_id):
        raise ValueError(f"id {problem_id!r} must not contain '#', '/' or spaces")
    informal = _text(data, "informal", required=True)
    given = data.get("metadata") or {}
    if not isinstance(given, dict):
        raise ValueError("`metadata` must be a JSON object")
    metadata: dict[str, Any] = dict(given)
    metadata.update({k: v for k, v in data.items() if k not in _KNOWN})
    return Problem(
        id=problem_id,
        informal=informal,
        solution=_text(data, "solution") or None,
        category=_text(data, "category") or None,
        source=_text(data, "source"),
        metadata=metadata,
        reference=_text(data, "reference") or None,
    )


def _text(data: dict[str, Any], key: str, *, required: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise ValueError(f"missing `{key}` (the problem in words)")
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f"`{key}` must be text, got {type(value).__name__}")
    if required and not value.strip():
        raise ValueError(f"`{key}` is empty")
    return value.strip()
