"""Verdicts remembered by what decides them, so re-verifying an identical candidate is free.

The key is a sha256 over (backend version, verifier policy, task kind, original text,
candidate text): the same candidate for the same task under the same assistant and rules
gets the same verdict. Verdicts that depend on the moment rather than the text (a timeout,
an out-of-memory kill, a crashed assistant) are not kept: a retry may well succeed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from formalbench.core.records import Reason, Verdict
from formalbench.store.db import connect, ensure_schema, transaction

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    verdict TEXT NOT NULL,
    created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
"""
TRANSIENT_REASONS = frozenset(
    {Reason.timeout, Reason.out_of_memory, Reason.backend_crash, Reason.environment}
)


def verdict_key(
    backend_version: str, policy: BaseModel | Any, kind: str, original: str, candidate: str
) -> str:
    """The cache key: sha256 of the five things a verdict depends on, as canonical JSON."""
    if isinstance(policy, BaseModel):
        policy = policy.model_dump(mode="json")
    payload = json.dumps(
        [backend_version, policy, str(kind), original, candidate],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class VerdictCache:
    """A table of verdicts by key, in its own file or in a store's open connection.

    Given a path it owns its connection; given a connection (one from `store.db.connect`,
    e.g. to share a run's file) the caller keeps it open and must not use it from another
    thread at the same time. `hits` / `misses` count this object's lookups.
    """

    def __init__(self, target: str | Path | sqlite3.Connection) -> None:
        if isinstance(target, sqlite3.Connection):
            self._conn, self._owned = target, False
        else:
            self._conn, self._owned = connect(target), True
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        ensure_schema(self._conn, "verdict_cache", SCHEMA_VERSION, _SCHEMA)

    key = staticmethod(verdict_key)

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT verdict FROM verdicts WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return Verdict.model_validate_json(row[0])

    def put(self, key: str, verdict: Verdict) -> bool:
        """Remember a verdict; False when it is transient (timeout, OOM, crash) and not kept."""
        if TRANSIENT_REASONS.intersection(verdict.reasons):
            return False
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO verdicts (key, verdict) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET verdict = excluded.verdict",
                (key, verdict.model_dump_json()),
            )
        return True

    def get_or_compute(self, key: str, compute: Callable[[], Verdict]) -> Verdict:
        """The cached verdict, or `compute()`'s, which is then kept (unless transient)."""
        cached = self.get(key)
        if cached is not None:
            return cached
        verdict = compute()
        self.put(key, verdict)
        return verdict

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._conn.close()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
