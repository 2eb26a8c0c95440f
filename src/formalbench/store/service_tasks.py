"""Tasks registered with `formalbench serve` (`POST /tasks`), so that a training loop sends a
task's text once and then names it by `task_id` in every `/verify` item.

The id is derived from the text (a sha256 prefix), so registering the same task twice gives the
same id, and an id can never name a different text than the one it was made from; the table
lives in the service's store file beside the verdict cache, so ids outlive a restart of the
service when the store is a file.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from formalbench.store.db import connect, ensure_schema, transaction

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS service_tasks (
    task_id TEXT PRIMARY KEY,
    original TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
"""
ID_PREFIX = "task-"


def task_id_of(original: str) -> str:
    """The id of a task text: `task-` and 24 hex digits of the text's sha256."""
    return ID_PREFIX + hashlib.sha256(original.encode("utf-8")).hexdigest()[:24]


class TaskStore:
    """Registered task texts by id, in their own connection (a file, or `:memory:`)."""

    def __init__(self, path: str | Path) -> None:
        self._conn = connect(path)
        self._lock = threading.Lock()
        ensure_schema(self._conn, "service_tasks", SCHEMA_VERSION, _SCHEMA)

    def register(self, original: str) -> str:
        """Keep `original` and return its id (the same id for the same text, every time)."""
        task_id = task_id_of(original)
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO service_tasks (task_id, original) VALUES (?, ?)"
                " ON CONFLICT (task_id) DO NOTHING",
                (task_id, original),
            )
        return task_id

    def get(self, task_id: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT original FROM service_tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM service_tasks").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
