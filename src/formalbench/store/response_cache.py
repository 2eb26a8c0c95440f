"""A SQLite cache of model responses, so that a rerun or a resumed run costs nothing.

Entries are keyed by a sha256 of the canonical JSON of the request (provider spec, messages,
n, temperature, max_tokens, stop, seed). The store knows nothing about model classes: it holds
requests and completions as plain JSON, and the `llm` layer turns them back into records.

The table may live in its own file or in a run's database (`store.db`: WAL, busy timeout,
a schema version per component). Why one connection behind a lock: `sqlite3` connections are
not safe to share between threads on their own, and one serialised connection per process is
plenty for a cache whose reads and writes take well under a millisecond; other processes are
handled by SQLite itself. The first answer stored for a key wins: a later `put` of the same
key is ignored, so every reader sees the same response whatever the interleaving.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from formalbench.store.db import connect, database_path, ensure_schema, transaction

KEY_VERSION = 1
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS response_cache (
    key        TEXT PRIMARY KEY,
    spec       TEXT NOT NULL,
    request    TEXT NOT NULL,
    response   TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


def canonical_request(
    spec: str | None,
    messages: Sequence[Mapping[str, Any]],
    *,
    n: int = 1,
    temperature: float = 1.0,
    max_tokens: int | None = None,
    stop: Sequence[str] | None = None,
    seed: int | None = None,
    response_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The request as a plain dict with every value normalised (1 == 1.0, () == [] == None).

    `response_schema` (the JSON Schema a structured reply must follow) is part of the
    request: the same chat asked for two shapes is two entries.
    `spec=None` leaves the provider out: replay files use that form, so a recording made from
    one model can be replayed under another name.
    """
    request: dict[str, Any] = {
        "v": KEY_VERSION,
        "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in messages],
        "n": int(n),
        "temperature": float(temperature),
        "max_tokens": None if max_tokens is None else int(max_tokens),
        "stop": list(stop) if stop else None,
        "seed": None if seed is None else int(seed),
    }
    if response_schema is not None:  # absent otherwise: keys of plain requests are unchanged
        request["response_schema"] = json.loads(json.dumps(response_schema, sort_keys=True))
    if spec is not None:
        request["spec"] = spec
    return request


def request_key(request: Mapping[str, Any]) -> str:
    """A stable sha256 of a canonical request: key order and whitespace do not matter."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Model responses on disk. Safe from many threads of one process and from many processes."""

    def __init__(self, target: str | Path | sqlite3.Connection) -> None:
        """Open (creating) the cache in file `target`, or in a connection from `store.db`.

        A connection passed in stays the caller's: it is not closed here, and must not be used
        from another thread while this cache uses it.
        """
        if isinstance(target, sqlite3.Connection):
            self._conn, self._owned = target, False
            self.path = Path(database_path(target))
        else:
            self.path = Path(target)
            self._conn, self._owned = connect(self.path), True
        self._lock = threading.Lock()
        ensure_schema(self._conn, "response_cache", SCHEMA_VERSION, _SCHEMA)

    def get(self, key: str) -> list[dict[str, Any]] | None:
        """The completions stored for `key` (plain dicts), or None on a miss."""
        with self._lock:
            row = self._conn.execute(
                "SELECT response FROM response_cache WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def put(
        self,
        key: str,
        request: Mapping[str, Any],
        completions: Sequence[Mapping[str, Any]],
    ) -> bool:
        """Store the completions of one request in one transaction; False if `key` was there."""
        spec = str(request.get("spec", ""))
        payload = (
            key,
            spec,
            json.dumps(request, sort_keys=True, ensure_ascii=False),
            json.dumps(list(completions), ensure_ascii=False),
            time.time(),
        )
        with self._lock, transaction(self._conn):
            cur = self._conn.execute(
                "INSERT INTO response_cache (key, spec, request, response, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING",
                payload,
            )
        return cur.rowcount == 1

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM response_cache").fetchone()[0])

    def specs(self) -> dict[str, int]:
        """How many entries each provider spec has: what a cache holds, at a glance."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT spec, COUNT(*) FROM response_cache GROUP BY spec ORDER BY spec"
            ).fetchall()
        return {spec: count for spec, count in rows}

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
