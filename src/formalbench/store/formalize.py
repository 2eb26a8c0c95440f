"""The store of a formalize run: problems, candidates with their trail, summaries, step state.

Each record is kept whole as JSON (the records are the schema; see core.formalization) with
the columns the pipeline and the dashboard filter on. Every `put_*` is one transaction, so a
killed run resumes from the last finished step; `step_done`/`mark_step` say which steps of
which problem are finished. A category's retrieved context is kept the same way, under the
pseudo problem id `*category:NAME` (one context per category, shared by its problems).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from formalbench.core.formalization import Candidate, Problem, ProblemSummary
from formalbench.store.db import open_component, transaction

SCHEMA_VERSION = 1
_CATEGORY_KEY = "*category:"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS fz_config (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fz_problems (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    problem TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fz_candidates (
    id TEXT PRIMARY KEY,
    problem_id TEXT NOT NULL REFERENCES fz_problems(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    compiled INTEGER NOT NULL,
    aligned INTEGER,
    candidate TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS fz_candidates_problem ON fz_candidates(problem_id);
CREATE TABLE IF NOT EXISTS fz_summaries (
    problem_id TEXT PRIMARY KEY REFERENCES fz_problems(id) ON DELETE CASCADE,
    summary TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS fz_steps (
    problem_id TEXT NOT NULL,
    step TEXT NOT NULL,
    value TEXT,
    PRIMARY KEY (problem_id, step)
);
"""


class FormalizeStore:
    """One SQLite file per formalize run (`<run dir>/formalize.sqlite`), thread-safe."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._conn = open_component(
            self.path, "formalize", SCHEMA_VERSION, _SCHEMA, readonly=readonly
        )
        self._lock = threading.Lock()

    # -- config -------------------------------------------------------------------------
    def config(self) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT config FROM fz_config WHERE id = 1").fetchone()
        return None if row is None else json.loads(row[0])

    def set_config(self, config: dict[str, Any]) -> None:
        text = json.dumps(config, sort_keys=True, ensure_ascii=False)
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO fz_config (id, config) VALUES (1, ?)"
                " ON CONFLICT (id) DO UPDATE SET config = excluded.config",
                (text,),
            )

    # -- problems -----------------------------------------------------------------------
    def add_problems(self, problems: Iterable[Problem]) -> int:
        """Register problems in order; one already there is kept as stored. Returns new ones."""
        added = 0
        with self._lock, transaction(self._conn):
            position = self._conn.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM fz_problems"
            ).fetchone()[0]
            for problem in problems:
                cursor = self._conn.execute(
                    "INSERT INTO fz_problems (id, position, problem) VALUES (?, ?, ?)"
                    " ON CONFLICT (id) DO NOTHING",
                    (problem.id, position, problem.model_dump_json()),
                )
                if cursor.rowcount:
                    added += 1
                    position += 1
        return added

    def put_problem(self, problem: Problem) -> None:
        """Replace a stored problem (e.g. once its category is labelled)."""
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "UPDATE fz_problems SET problem = ? WHERE id = ?",
                (problem.model_dump_json(), problem.id),
            )

    def problems(self) -> list[Problem]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT problem FROM fz_problems ORDER BY position"
            ).fetchall()
        return [Problem.model_validate_json(r[0]) for r in rows]

    def problem(self, problem_id: str) -> Problem | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT problem FROM fz_problems WHERE id = ?", (problem_id,)
            ).fetchone()
        return None if row is None else Problem.model_validate_json(row[0])

    # -- candidates ---------------------------------------------------------------------
    def put_candidate(self, candidate: Candidate) -> None:
        """Insert or replace a candidate with its whole trail, in one transaction."""
        alignment = candidate.alignment
        # unread judgements (alignment.error) are neither aligned nor misaligned
        aligned = None if alignment is None or alignment.error else int(alignment.aligned)
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO fz_candidates (id, problem_id, model, compiled, aligned, candidate)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                " compiled = excluded.compiled, aligned = excluded.aligned,"
                " candidate = excluded.candidate",
                (
                    candidate.id,
                    candidate.problem_id,
                    candidate.model,
                    int(candidate.compiled),
                    aligned,
                    candidate.model_dump_json(),
                ),
            )

    def candidates(self, problem_id: str | None = None) -> list[Candidate]:
        query = "SELECT candidate FROM fz_candidates"
        args: tuple[str, ...] = ()
        if problem_id is not None:
            query, args = query + " WHERE problem_id = ?", (problem_id,)
        with self._lock:
            rows = self._conn.execute(query + " ORDER BY rowid", args).fetchall()
        return [Candidate.model_validate_json(r[0]) for r in rows]

    def candidate(self, candidate_id: str) -> Candidate | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT candidate FROM fz_candidates WHERE id = ?", (candidate_id,)
            ).fetchone()
        return None if row is None else Candidate.model_validate_json(row[0])

    # -- summaries ----------------------------------------------------------------------
    def put_summary(self, summary: ProblemSummary) -> None:
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO fz_summaries (problem_id, summary) VALUES (?, ?)"
                " ON CONFLICT (problem_id) DO UPDATE SET summary = excluded.summary",
                (summary.problem_id, summary.model_dump_json()),
            )

    def summary(self, problem_id: str) -> ProblemSummary | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT summary FROM fz_summaries WHERE problem_id = ?", (problem_id,)
            ).fetchone()
        return None if row is None else ProblemSummary.model_validate_json(row[0])

    # -- step state (resume) ------------------------------------------------------------
    def mark_step(self, problem_id: str, step: str, value: Any = True) -> None:
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO fz_steps (problem_id, step, value) VALUES (?, ?, ?)"
                " ON CONFLICT (problem_id, step) DO UPDATE SET value = excluded.value",
                (problem_id, step, json.dumps(value)),
            )

    def step_done(self, problem_id: str, step: str) -> bool:
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM fz_steps WHERE problem_id = ? AND step = ?", (problem_id, step)
            ).fetchone()
        return row is not None

    def step_value(self, problem_id: str, step: str) -> Any:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM fz_steps WHERE problem_id = ? AND step = ?", (problem_id, step)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    # -- per-category state (retrieved context) -----------------------------------------
    def put_category_context(self, category: str, value: Any) -> None:
        self.mark_step(_CATEGORY_KEY + category, "context", value)

    def category_context(self, category: str) -> Any:
        """The stored context of `category`, or None when it was never retrieved."""
        return self.step_value(_CATEGORY_KEY + category, "context")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> FormalizeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
