"""The store of a construct run (`<run dir>/construct.sqlite`, component `construct`).

What phase 2 keeps: the run's settings, the extracted exercises with the extraction's counts,
every model step of every exercise (output, prompt hash, model, tokens, and whether the reply
was a format failure), the `ConstructProblem` each exercise ends the source stages with, and
the numbers the formal stages (phase 3, tables of their own in the same file) report back.

Records are kept whole as JSON (the records of `core.construct` are the schema) beside the
columns the funnel counts on. Each write is one transaction, so a run killed at any moment
resumes from the last finished step: a step stored is never asked again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from formalbench.core.construct import ConstructProblem, ExtractedExercise
from formalbench.core.records import Record, TokenUsage
from formalbench.store.db import open_component, transaction

COMPONENT = "construct"
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cs_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cs_exercises (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    exercise TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cs_steps (
    exercise_id TEXT NOT NULL REFERENCES cs_exercises(id) ON DELETE CASCADE,
    step TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (exercise_id, step)
);
CREATE TABLE IF NOT EXISTS cs_problems (
    id TEXT PRIMARY KEY REFERENCES cs_exercises(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    usable INTEGER NOT NULL,
    failed_step TEXT,
    problem TEXT NOT NULL
);
"""


class StepRecord(Record):
    """One model step of one exercise, as stored: enough to audit it and to skip it on resume."""

    step: str  # e.g. `clean`, `naturalize:NMUS/NM`, `review:OI`
    output: dict[str, Any] | None = None  # the validated reply; None on a format failure
    error: str | None = None  # the format failure, when the reply never validated
    raw: str = ""  # the last reply as the model sent it
    attempts: int = 1
    prompt: str = ""  # template name
    prompt_hash: str = ""
    model: str = ""
    tokens: TokenUsage = TokenUsage()

    @property
    def ok(self) -> bool:
        return self.error is None


class ConstructStore:
    """One SQLite file per construct run; safe to share between the tasks of one process."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._conn = open_component(
            self.path, COMPONENT, SCHEMA_VERSION, _SCHEMA, readonly=readonly
        )
        self._lock = threading.Lock()

    # -- run metadata (settings, extraction counts, formal-stage figures) ---------------
    def meta(self, key: str) -> Any:
        with self._lock:
            row = self._conn.execute("SELECT value FROM cs_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO cs_meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, text),
            )

    # -- exercises ----------------------------------------------------------------------
    def put_exercises(self, exercises: Iterable[ExtractedExercise], stats: dict[str, int]) -> int:
        """Store the extraction whole (exercises in book order and its counts), in one
        transaction: a kill leaves the extraction either all there or not at all."""
        count = 0
        with self._lock, transaction(self._conn):
            for position, exercise in enumerate(exercises):
                self._conn.execute(
                    "INSERT INTO cs_exercises (id, position, exercise) VALUES (?, ?, ?)"
                    " ON CONFLICT (id) DO UPDATE SET position = excluded.position,"
                    " exercise = excluded.exercise",
                    (exercise.id, position, exercise.model_dump_json()),
                )
                count += 1
            self._conn.execute(
                "INSERT INTO cs_meta (key, value) VALUES ('extraction', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (json.dumps(stats, sort_keys=True),),
            )
        return count

    def exercises(self) -> list[ExtractedExercise]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT exercise FROM cs_exercises ORDER BY position"
            ).fetchall()
        return [ExtractedExercise.model_validate_json(r[0]) for r in rows]

    def extraction_stats(self) -> dict[str, int] | None:
        value = self.meta("extraction")
        return None if value is None else {str(k): int(v) for k, v in value.items()}

    # -- steps --------------------------------------------------------------------------
    def put_step(self, exercise_id: str, record: StepRecord) -> None:
        status = "ok" if record.ok else "format_failure"
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO cs_steps (exercise_id, step, status, record) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (exercise_id, step) DO UPDATE SET status = excluded.status,"
                " record = excluded.record",
                (exercise_id, record.step, status, record.model_dump_json()),
            )

    def step(self, exercise_id: str, step: str) -> StepRecord | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT record FROM cs_steps WHERE exercise_id = ? AND step = ?",
                (exercise_id, step),
            ).fetchone()
        return None if row is None else StepRecord.model_validate_json(row[0])

    def steps(self, exercise_id: str | None = None) -> list[tuple[str, StepRecord]]:
        """(exercise id, step) pairs in the order they were stored."""
        query = "SELECT exercise_id, record FROM cs_steps"
        args: tuple[str, ...] = ()
        if exercise_id is not None:
            query, args = query + " WHERE exercise_id = ?", (exercise_id,)
        with self._lock:
            rows = self._conn.execute(query + " ORDER BY rowid", args).fetchall()
        return [(r[0], StepRecord.model_validate_json(r[1])) for r in rows]

    def step_counts(self) -> dict[str, int]:
        """How many steps ended `ok` and how many as `format_failure`."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT status, COUNT(*) FROM cs_steps GROUP BY status"
            ).fetchall()
        return {status: count for status, count in rows}

    # -- problems (the source stages' result per exercise) ------------------------------
    def put_problem(self, problem: ConstructProblem, failed_step: str | None = None) -> None:
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO cs_problems (id, position, usable, failed_step, problem)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " usable = excluded.usable, failed_step = excluded.failed_step,"
                " problem = excluded.problem",
                (
                    problem.id,
                    problem.index,
                    int(problem.usable),
                    failed_step,
                    problem.model_dump_json(),
                ),
            )

    def problem(self, exercise_id: str) -> ConstructProblem | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT problem FROM cs_problems WHERE id = ?", (exercise_id,)
            ).fetchone()
        return None if row is None else ConstructProblem.model_validate_json(row[0])

    def problems(self) -> list[tuple[ConstructProblem, str | None]]:
        """Every finished exercise, in book order, with the step it failed at (or None)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT problem, failed_step FROM cs_problems ORDER BY position"
            ).fetchall()
        return [(ConstructProblem.model_validate_json(r[0]), r[1]) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ConstructStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
