"""What the dependency walk learned from the proof assistant, kept across runs.

Three tables, all keyed by the assistant's version so that another Coq never reuses them:

* `dep_decls`: a library declaration (fully qualified) -> its kind and the qualified names
  its type and, for a transparent definition, its body use. This is the shared library
  walk: 500 tasks over the same library ask coqc about `Rplus` once, ever.
* `dep_names`: in one import context (a hash of the `Require`/`Import` commands), a name
  as coqc printed it -> its qualified path.
* `dep_statements`: one task's statement (a hash of its text) -> what its own file
  contributes (the statement's names, its local declarations and theirs) as JSON.

The in-memory dictionaries in front of the tables are the per-run cache; writes are
batched in one transaction per step of the walk.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from formalbench.store.db import connect, ensure_schema, transaction

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS dep_decls (
    backend TEXT NOT NULL,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    refs TEXT NOT NULL,
    PRIMARY KEY (backend, name)
);
CREATE TABLE IF NOT EXISTS dep_names (
    context TEXT NOT NULL,
    name TEXT NOT NULL,
    qualified TEXT,
    PRIMARY KEY (context, name)
);
CREATE TABLE IF NOT EXISTS dep_statements (
    key TEXT PRIMARY KEY,
    payload TEXT NOT NULL
);
"""


class DepsCache:
    """Declarations, resolved names and statements; `path=None` keeps them in memory only."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._conn: sqlite3.Connection | None = None
        if path is not None:
            self._conn = connect(path)
            ensure_schema(self._conn, "deps", SCHEMA_VERSION, _SCHEMA)
        self._lock = threading.Lock()
        self._decls: dict[tuple[str, str], tuple[str, list[str]]] = {}
        self._names: dict[tuple[str, str], str | None] = {}
        self._statements: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> DepsCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- library declarations -------------------------------------------------------------
    def decl(self, backend: str, name: str) -> tuple[str, list[str]] | None:
        """(kind, qualified names used) of a library declaration, if known."""
        key = (backend, name)
        with self._lock:
            if key in self._decls:
                self.hits += 1
                return self._decls[key]
            row = None
            if self._conn is not None:
                row = self._conn.execute(
                    "SELECT kind, refs FROM dep_decls WHERE backend = ? AND name = ?", key
                ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
            value = (row[0], list(json.loads(row[1])))
            self._decls[key] = value
            return value

    def put_decls(self, backend: str, decls: dict[str, tuple[str, list[str]]]) -> None:
        with self._lock:
            for name, value in decls.items():
                self._decls[(backend, name)] = value
            if self._conn is None or not decls:
                return
            with transaction(self._conn) as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO dep_decls (backend, name, kind, refs) "
                    "VALUES (?, ?, ?, ?)",
                    [(backend, n, k, json.dumps(r)) for n, (k, r) in decls.items()],
                )

    # --- names resolved in an import context ----------------------------------------------
    def names(self, context: str, printed: list[str]) -> dict[str, str | None]:
        """The known resolutions among `printed` (a name absent from the result is unknown;
        None: coqc said it is no term)."""
        found: dict[str, str | None] = {}
        with self._lock:
            missing = []
            for name in printed:
                if (context, name) in self._names:
                    found[name] = self._names[(context, name)]
                else:
                    missing.append(name)
            if self._conn is not None and missing:
                for start in range(0, len(missing), 500):
                    chunk = missing[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._conn.execute(
                        f"SELECT name, qualified FROM dep_names WHERE context = ? "
                        f"AND name IN ({marks})",
                        [context, *chunk],
                    ).fetchall()
                    for name, qualified in rows:
                        self._names[(context, name)] = qualified
                        found[name] = qualified
        return found

    def put_names(self, context: str, resolved: dict[str, str | None]) -> None:
        with self._lock:
            for name, qualified in resolved.items():
                self._names[(context, name)] = qualified
            if self._conn is None or not resolved:
                return
            with transaction(self._conn) as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO dep_names (context, name, qualified) VALUES (?, ?, ?)",
                    [(context, n, q) for n, q in resolved.items()],
                )

    # --- statements -----------------------------------------------------------------------
    def statement(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if key in self._statements:
                return self._statements[key]
            if self._conn is None:
                return None
            row = self._conn.execute(
                "SELECT payload FROM dep_statements WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            value: dict[str, Any] = json.loads(row[0])
            self._statements[key] = value
            return value

    def put_statement(self, key: str, payload: dict[str, Any]) -> None:
        with self._lock:
            self._statements[key] = payload
            if self._conn is None:
                return
            with transaction(self._conn) as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO dep_statements (key, payload) VALUES (?, ?)",
                    (key, json.dumps(payload)),
                )
