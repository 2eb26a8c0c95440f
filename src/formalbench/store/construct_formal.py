"""The tables of the formal stages of a construct run (component `construct_formal`).

They live in `<run dir>/construct.sqlite`, beside the source stages' own tables, and make
the formal stages resumable at the grain of single steps:

- `cf_calls`: every model call the stages made (block split, translation, repair, review,
  rewrite, weakening judgement), keyed by a hash of what was asked (purpose, model, chat);
- `cf_compiles`: every compile, keyed by a hash of (assistant version, file text);
- `cf_problems`: each problem with its position and, once finished, its result.

The algorithms are deterministic given these answers, so a killed run replays what it
already did from the tables (no model call, no compile) and goes on from the first step that
had not finished. Every write is one transaction. Values are JSON text: the records they
hold belong to the pipeline (a store never imports a layer above it).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from formalbench.store.db import open_component, transaction

COMPONENT = "construct_formal"
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS cf_problems (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    problem TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    result TEXT
);
CREATE TABLE IF NOT EXISTS cf_calls (
    key TEXT PRIMARY KEY,
    problem_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cf_calls_problem ON cf_calls(problem_id);
CREATE TABLE IF NOT EXISTS cf_compiles (
    key TEXT PRIMARY KEY,
    result TEXT NOT NULL
);
"""


class ConstructFormalStore:
    """The formal stages' tables in one SQLite file; thread-safe."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._conn = open_component(
            self.path, COMPONENT, SCHEMA_VERSION, _SCHEMA, readonly=readonly
        )
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- problems -----------------------------------------------------------------------
    def add_problem(self, problem_id: str, problem: dict[str, Any]) -> None:
        """Register a problem. One stored with other text (the source stages changed it)
        loses its result, so it is constructed again; its remembered calls and compiles
        stay, keyed by what was asked, and serve whatever is asked again."""
        text = json.dumps(problem, ensure_ascii=False, sort_keys=True)
        with self._lock, transaction(self._conn):
            position = self._conn.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM cf_problems"
            ).fetchone()[0]
            self._conn.execute(
                "INSERT INTO cf_problems (id, position, problem) VALUES (?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET problem = excluded.problem,"
                " status = 'pending', result = NULL WHERE cf_problems.problem != excluded.problem",
                (problem_id, position, text),
            )

    def finish_problem(self, problem_id: str, status: str, result: dict[str, Any]) -> None:
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "UPDATE cf_problems SET status = ?, result = ? WHERE id = ?",
                (status, json.dumps(result, ensure_ascii=False), problem_id),
            )

    def result(self, problem_id: str) -> dict[str, Any] | None:
        """The stored result of a finished problem, None while it is not finished."""
        with self._lock:
            row = self._conn.execute(
                "SELECT result FROM cf_problems WHERE id = ? AND result IS NOT NULL",
                (problem_id,),
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def results(self) -> list[dict[str, Any]]:
        """The results of the finished problems, in the order they were registered."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT result FROM cf_problems WHERE result IS NOT NULL ORDER BY position"
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def statuses(self) -> dict[str, str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, status FROM cf_problems ORDER BY position"
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    # -- model calls --------------------------------------------------------------------
    def call(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM cf_calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put_call(self, key: str, problem_id: str, purpose: str, value: dict[str, Any]) -> None:
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO cf_calls (key, problem_id, purpose, value) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, problem_id, purpose, json.dumps(value, ensure_ascii=False)),
            )

    def call_counts(self) -> dict[str, int]:
        """How many stored calls each purpose has (for reports and tests)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT purpose, COUNT(*) FROM cf_calls GROUP BY purpose"
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    # -- compiles -----------------------------------------------------------------------
    def compile(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT result FROM cf_compiles WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def put_compile(self, key: str, result: dict[str, Any]) -> None:
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO cf_compiles (key, result) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET result = excluded.result",
                (key, json.dumps(result, ensure_ascii=False)),
            )

    def compile_count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM cf_compiles").fetchone()[0])
