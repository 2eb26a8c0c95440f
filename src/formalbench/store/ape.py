"""The store of an APE run (`ape.sqlite` in the run folder): commits walked, candidate tasks
with the filter that dropped them, compile validation, instructions and evaluation results.

Each commit's tasks are written in one transaction together with the commit's "done" mark,
so a killed walk resumes at the first unfinished commit and never counts a commit twice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from formalbench.store.db import open_component, transaction

STORE_NAME = "ape.sqlite"  # the store's file in the run folder
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS ape_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ape_commits (
    sha TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    type TEXT NOT NULL,
    candidates INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ape_tasks (
    id TEXT PRIMARY KEY,
    commit_sha TEXT NOT NULL REFERENCES ape_commits(sha),
    position INTEGER NOT NULL,
    dropped_at TEXT,
    task TEXT
);
CREATE TABLE IF NOT EXISTS ape_results (
    task_id TEXT NOT NULL,
    step TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (task_id, step)
);
"""


class ApeStore:
    """Thread-safe access to one run's `ape.sqlite`."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        """`readonly`: an existing store read without writing anything (`ape export` of a
        run on read-only storage); a file that is not an ape store is refused either way."""
        self.path = Path(path)
        self.conn = open_component(self.path, "ape", SCHEMA_VERSION, _SCHEMA, readonly=readonly)
        self._lock = threading.Lock()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ApeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # meta
    def get_meta(self, key: str) -> Any:
        row = self.conn.execute("SELECT value FROM ape_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        with self._lock, transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO ape_meta (key, value) VALUES (?, ?)",
                (key, json.dumps(value)),
            )

    # commits and tasks
    def done_commits(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT sha FROM ape_commits")}

    def put_commit(
        self,
        sha: str,
        position: int,
        kind: str,
        tasks: Iterable[tuple[str, str | None, dict | None]],
    ) -> None:
        """One commit and its candidate tasks (id, dropped_at, record) in one transaction."""
        rows = list(tasks)
        with self._lock, transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO ape_commits (sha, position, type, candidates)"
                " VALUES (?, ?, ?, ?)",
                (sha, position, kind, len(rows)),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO ape_tasks (id, commit_sha, position, dropped_at, task)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (tid, sha, position, dropped, None if rec is None else json.dumps(rec))
                    for tid, dropped, rec in rows
                ],
            )

    def commit_count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM ape_commits").fetchone()[0]

    def drop_counts(self) -> dict[str | None, int]:
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT dropped_at, COUNT(*) FROM ape_tasks GROUP BY dropped_at"
            )
        }

    def kept_tasks(self) -> Iterator[dict]:
        """Tasks that passed every mining filter, newest commit first."""
        for (text,) in self.conn.execute(
            "SELECT task FROM ape_tasks WHERE dropped_at IS NULL ORDER BY position, id"
        ):
            yield json.loads(text)

    # per-step results (validation, synthesis, evaluation)
    def put_result(self, task_id: str, step: str, result: Any) -> None:
        with self._lock, transaction(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO ape_results (task_id, step, result) VALUES (?, ?, ?)",
                (task_id, step, json.dumps(result)),
            )

    def get_result(self, task_id: str, step: str) -> Any:
        row = self.conn.execute(
            "SELECT result FROM ape_results WHERE task_id = ? AND step = ?", (task_id, step)
        ).fetchone()
        return None if row is None else json.loads(row[0])

    def results(self, step: str) -> dict[str, Any]:
        return {
            r[0]: json.loads(r[1])
            for r in self.conn.execute(
                "SELECT task_id, result FROM ape_results WHERE step = ?", (step,)
            )
        }
