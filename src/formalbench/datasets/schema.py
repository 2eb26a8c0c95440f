"""The JSON Schema of one line of the project's task format, generated from `core.records.Task`.

The schema file ships with the package (`datasets/task.schema.json`) so that people who
write datasets with other tools can validate them; it is generated, never edited by hand,
and a test fails when it drifts from the model. Regenerate with
`python -m formalbench.datasets.schema`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from formalbench.core.records import Task

SCHEMA_PATH = Path(__file__).resolve().parent / "task.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def task_json_schema() -> dict[str, Any]:
    """The schema of one JSONL line (a `Task` record) in JSON Schema 2020-12."""
    schema = Task.model_json_schema(mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://formalbench.dev/schemas/task.schema.json",
        **schema,
        "description": (
            "One benchmark task of formalbench's JSONL task format: one such object a line, "
            "as written by Task.model_dump_json(). See docs/task-format.md."
        ),
    }


def render_task_schema() -> str:
    """The schema file's exact text (stable key order, trailing newline)."""
    return json.dumps(task_json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_task_schema(path: Path = SCHEMA_PATH) -> Path:
    path.write_text(render_task_schema(), encoding="utf-8")
    return path


if __name__ == "__main__":  # pragma: no cover - maintainer entry point
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_PATH
    print(write_task_schema(target))
