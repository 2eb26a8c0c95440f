"""The run store: what an evaluation did, kept so that a killed run resumes where it stopped.

A run is its configuration, the versions it ran with, the tasks it covers, and one row per
attempt. Each attempt is committed in its own transaction, and `UNIQUE(run, task, solver,
sample)` means a resumed run can never record the same attempt twice: whatever a kill (even
SIGKILL) interrupts is either wholly in the file or not at all, and `done_samples` says
what is left to do.

Reopening a run with a configuration that would mix incompatible attempts (another solver,
model, backend, dataset...) is refused with the keys that differ; the number of samples may
grow (more samples per task is a natural continuation), never shrink.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from formalbench.core.records import Attempt, AttemptError, Task
from formalbench.store.db import StoreError, open_component, transaction

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    versions TEXT NOT NULL,
    n_attempts INTEGER NOT NULL DEFAULT 0,
    history TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS run_tasks (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    task_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    task TEXT NOT NULL,
    PRIMARY KEY (run_id, task_id)
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    solver TEXT NOT NULL,
    sample INTEGER NOT NULL,
    passed INTEGER,
    reasons TEXT NOT NULL,
    attempt TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (run_id, task_id, solver, sample),
    FOREIGN KEY (run_id, task_id) REFERENCES run_tasks(run_id, task_id) ON DELETE CASCADE
);
"""

# Config keys whose change would put incompatible attempts side by side in one run. Others
# (workers, timeouts of the harness, budgets, output paths) may change on a resume.
IDENTITY_KEYS: tuple[str, ...]
IDENTITY_KEYS = ("dataset", "selection", "solver", "model", "backend", "policy", "params")
IDENTITY_KEYS += ("temperature", "max_tokens", "tactics", "prompts", "replay")
# Version keys that decide verdicts: the proof assistant (and its library).
VERSION_IDENTITY_KEYS: tuple[str, ...] = ("backend",)
STATUSES = ("running", "finished", "failed", "interrupted")
# What `forget_retryable` takes back: failures of the machinery, not of the prover (the kinds
# of `Attempt.error` written by the solvers and the preflight, and the verdict reason of a
# crashed check).
RETRY_ERROR_TAGS: tuple[str, ...] = ("model", "backend", "environment")
RETRY_REASONS: tuple[str, ...] = ("backend_crash",)
_CHUNK = 200


def _error_kind(stored: Any) -> str | None:
    """The kind of a stored `Attempt.error` (JSON of an `AttemptError`, or the `tag: message`
    string of an older run), read as `Attempt` reads it."""
    if not isinstance(stored, str):
        return None
    if stored.startswith("{"):
        try:
            return str(AttemptError.model_validate_json(stored).kind)
        except ValueError:
            pass
    return str(AttemptError.parse(stored).kind)


class RunMismatchError(StoreError):
    """Reopening a run with a configuration that would mix incompatible attempts."""


@dataclass(frozen=True)
class RunInfo:
    id: str
    created: str
    updated: str
    status: str
    config: dict[str, Any]
    versions: dict[str, Any]
    n_attempts: int
    history: list[dict[str, Any]] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} must be JSON-serialisable ({exc})") from None


def config_conflicts(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    old_versions: Mapping[str, Any] | None = None,
    new_versions: Mapping[str, Any] | None = None,
) -> list[str]:
    """What in `new` would make its attempts incompatible with those recorded under `old`."""
    conflicts = [
        f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        for key in IDENTITY_KEYS
        if old.get(key) != new.get(key)
    ]
    before, after = old.get("samples"), new.get("samples")
    if isinstance(before, int) and isinstance(after, int) and after < before:
        conflicts.append(f"samples: {before} -> {after} (may grow, never shrink)")
    old_versions, new_versions = old_versions or {}, new_versions or {}
    conflicts += [
        f"versions.{key}: {old_versions.get(key)!r} -> {new_versions.get(key)!r}"
        for key in VERSION_IDENTITY_KEYS
        if key in old_versions and key in new_versions and old_versions[key] != new_versions[key]
    ]
    return conflicts


class RunStore:
    """Runs, their tasks and attempts in one SQLite file (usually `<run dir>/run.sqlite`).

    Safe to share between threads (one connection behind a lock) and between processes
    (SQLite's own locking, waited on for up to `db.BUSY_TIMEOUT_S`).
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self._conn = open_component(self.path, "runs", SCHEMA_VERSION, _SCHEMA, readonly=readonly)
        self._lock = threading.Lock()

    # -- runs ---------------------------------------------------------------------------
    def open_run(
        self,
        config: Mapping[str, Any],
        versions: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
    ) -> str:
        """The id of the run to write to: the stored one when this is a resume, else a new one.

        Without `run_id`, the run already in this store with the same identity is resumed
        (a run folder holds one run); a store whose runs all differ refuses with the keys
        that differ (RunMismatchError), so a changed command never mixes its attempts into
        an old run. `samples` may grow; the stored config then takes the new value.
        """
        config, versions = dict(config), dict(versions or {})
        config_text, versions_text = _json(config, "run config"), _json(versions, "versions")
        with self._lock, transaction(self._conn):
            existing = self._select_runs(run_id)
            if not existing:
                new_id = run_id or self._new_id(config_text)
                now = _now()
                self._conn.execute(
                    "INSERT INTO runs (id, created, updated, status, config, versions)"
                    " VALUES (?, ?, ?, 'running', ?, ?)",
                    (new_id, now, now, config_text, versions_text),
                )
                return new_id
            problems: list[str] = []
            for run in existing:  # newest first
                conflicts = config_conflicts(run.config, config, run.versions, versions)
                if not conflicts:
                    self._resume(run, config, versions)
                    return run.id
                problems.append(f"run {run.id}: " + "; ".join(conflicts))
        raise RunMismatchError(
            f"{self.path}: the configuration differs from the stored run ({' | '.join(problems)});"
            " use another --run-dir for a different configuration"
        )

    def _new_id(self, config_text: str) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        return f"run-{stamp}-{hashlib.sha256(config_text.encode()).hexdigest()[:8]}"

    def _resume(self, run: RunInfo, config: dict[str, Any], versions: dict[str, Any]) -> None:
        """Adopt the new config (same identity, maybe more samples), keeping the old in history."""
        event: dict[str, Any] = {"resumed": _now()}
        if run.config != config:
            event["previous_config"] = run.config
        if run.versions != versions:
            event["previous_versions"] = run.versions
        self._conn.execute(
            "UPDATE runs SET status = 'running', updated = ?, config = ?, versions = ?,"
            " history = ? WHERE id = ?",
            (
                event["resumed"],
                _json(config, "config"),
                _json(versions, "versions"),
                _json([*run.history, event], "history"),
                run.id,
            ),
        )

    def _select_runs(self, run_id: str | None = None) -> list[RunInfo]:
        query = (
            "SELECT id, created, updated, status, config, versions, n_attempts, history FROM runs"
        )
        rows = (
            self._conn.execute(query + " WHERE id = ?", (run_id,)).fetchall()
            if run_id is not None
            else self._conn.execute(query + " ORDER BY created DESC, id DESC").fetchall()
        )
        return [
            RunInfo(
                r[0], r[1], r[2], r[3], json.loads(r[4]), json.loads(r[5]), r[6], json.loads(r[7])
            )
            for r in rows
        ]

    def runs(self) -> list[RunInfo]:
        """Every run in the store, newest first."""
        with self._lock:
            return self._select_runs()

    def get_run(self, run_id: str) -> RunInfo:
        with self._lock:
            found = self._select_runs(run_id)
        if not found:
            raise StoreError(f"{self.path}: no run {run_id!r}")
        return found[0]

    def set_status(self, run_id: str, status: str) -> None:
        if status not in STATUSES:
            raise StoreError(f"unknown run status {status!r} (one of {', '.join(STATUSES)})")
        with self._lock, transaction(self._conn):
            cursor = self._conn.execute(
                "UPDATE runs SET status = ?, updated = ? WHERE id = ?", (status, _now(), run_id)
            )
        if cursor.rowcount == 0:
            raise StoreError(f"{self.path}: no run {run_id!r}")

    # -- tasks --------------------------------------------------------------------------
    def add_tasks(self, run_id: str, tasks: Iterable[Task]) -> int:
        """Register the run's tasks (in order); returns how many were new.

        Registering a task again is a no-op, but a task whose content changed under the same
        id is refused: its old attempts would be scored against a statement they never saw.
        """
        added = 0
        with self._lock, transaction(self._conn):
            if not self._conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                raise StoreError(f"{self.path}: no run {run_id!r}")
            position = self._conn.execute(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM run_tasks WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            for task in tasks:
                text = task.model_dump_json()
                row = self._conn.execute(
                    "SELECT task FROM run_tasks WHERE run_id = ? AND task_id = ?", (run_id, task.id)
                ).fetchone()
                if row is not None:
                    if Task.model_validate_json(row[0]) != task:
                        raise RunMismatchError(
                            f"{self.path}: task {task.id!r} of run {run_id} differs from the "
                            "stored one (the dataset changed); use a new run"
                        )
                    continue
                self._conn.execute(
                    "INSERT INTO run_tasks (run_id, task_id, position, task) VALUES (?, ?, ?, ?)",
                    (run_id, task.id, position, text),
                )
                position += 1
                added += 1
        return added

    def tasks(self, run_id: str) -> list[Task]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT task FROM run_tasks WHERE run_id = ? ORDER BY position", (run_id,)
            ).fetchall()
        return [Task.model_validate_json(r[0]) for r in rows]

    # -- attempts -----------------------------------------------------------------------
    def record_attempt(self, run_id: str, attempt: Attempt) -> bool:
        """Commit one attempt atomically; False (and nothing written) when it is already there."""
        return self.record_attempts(run_id, [attempt]) == 1

    def record_attempts(self, run_id: str, attempts: Sequence[Attempt]) -> int:
        """Commit several attempts in one transaction; returns how many were new."""
        now = _now()
        rows = [
            (
                run_id,
                a.task_id,
                a.solver,
                a.sample,
                None if a.verdict is None else int(a.verdict.passed),
                json.dumps([] if a.verdict is None else [str(r) for r in a.verdict.reasons]),
                a.model_dump_json(),
                now,
            )
            for a in attempts
        ]
        try:
            with self._lock, transaction(self._conn):
                new = 0
                for row in rows:
                    cursor = self._conn.execute(
                        "INSERT INTO attempts (run_id, task_id, solver, sample, passed, reasons,"
                        " attempt, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                        " ON CONFLICT (run_id, task_id, solver, sample) DO NOTHING",
                        row,
                    )
                    new += cursor.rowcount
                if new:
                    self._conn.execute(
                        "UPDATE runs SET n_attempts = n_attempts + ?, updated = ? WHERE id = ?",
                        (new, now, run_id),
                    )
        except sqlite3.IntegrityError:
            missing = sorted({a.task_id for a in attempts} - {t.id for t in self.tasks(run_id)})
            raise StoreError(
                f"{self.path}: run {run_id!r} has no task {', '.join(missing) or '?'}"
                " (open_run and add_tasks before recording attempts)"
            ) from None
        return new

    def done_samples(self, run_id: str, solver: str | None = None) -> set[tuple[str, int]]:
        """(task_id, sample) pairs already recorded: what a resumed run must not redo."""
        query = "SELECT task_id, sample FROM attempts WHERE run_id = ?"
        args: tuple[Any, ...] = (run_id,)
        if solver is not None:
            query, args = query + " AND solver = ?", (run_id, solver)
        with self._lock:
            return {(r[0], r[1]) for r in self._conn.execute(query, args)}

    def forget_retryable(
        self,
        run_id: str,
        *,
        solver: str | None = None,
        error_tags: Sequence[str] = RETRY_ERROR_TAGS,
        reasons: Sequence[str] = RETRY_REASONS,
    ) -> int:
        """Delete the attempts that failed for a reason outside the prover (`--retry-errors`),
        so that a resumed run makes them again; returns how many were deleted.

        Those are attempts whose `error` is of a kind in `error_tags` (a model call or the
        proof assistant could not be run, or the task's library was missing) and attempts whose verdict has one of `reasons`
        (the assistant crashed on the check). The rows, the run's attempt count and a
        history entry change in one transaction.
        """
        kinds = set(error_tags)
        wanted = set(reasons)
        query = (
            "SELECT id, json_extract(attempt, '$.error'), reasons FROM attempts WHERE run_id = ?"
        )
        args: tuple[Any, ...] = (run_id,)
        if solver is not None:
            query, args = query + " AND solver = ?", (run_id, solver)
        with self._lock, transaction(self._conn):
            found = self._select_runs(run_id)
            if not found:
                raise StoreError(f"{self.path}: no run {run_id!r}")
            ids = [
                row[0]
                for row in self._conn.execute(query, args)
                if _error_kind(row[1]) in kinds or wanted.intersection(json.loads(row[2]))
            ]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                self._conn.execute(f"DELETE FROM attempts WHERE id IN ({marks})", chunk)
            if ids:
                now = _now()
                event = {"retry_errors": now, "forgotten_attempts": len(ids)}
                self._conn.execute(
                    "UPDATE runs SET n_attempts = MAX(n_attempts - ?, 0), updated = ?,"
                    " history = ? WHERE id = ?",
                    (len(ids), now, _json([*found[0].history, event], "history"), run_id),
                )
        return len(ids)

    def attempts(self, run_id: str, *, task_id: str | None = None) -> Iterator[Attempt]:
        """The run's attempts in task order, then solver and sample; read in small chunks."""
        query = (
            "SELECT a.id FROM attempts a JOIN run_tasks t"
            " ON t.run_id = a.run_id AND t.task_id = a.task_id WHERE a.run_id = ?"
        )
        args: tuple[Any, ...] = (run_id,)
        if task_id is not None:
            query, args = query + " AND a.task_id = ?", (run_id, task_id)
        with self._lock:
            ids = [
                r[0]
                for r in self._conn.execute(
                    query + " ORDER BY t.position, a.solver, a.sample", args
                )
            ]
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            with self._lock:
                texts = dict(
                    self._conn.execute(
                        f"SELECT id, attempt FROM attempts WHERE id IN ({marks})", chunk
                    )
                )
            for attempt_id in chunk:
                yield Attempt.model_validate_json(texts[attempt_id])

    def counts(self, run_id: str) -> dict[str, int]:
        """Tasks, attempts, passed attempts and attempts with no verdict, for progress lines."""
        with self._lock:
            tasks = self._conn.execute(
                "SELECT COUNT(*) FROM run_tasks WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            total, passed, unverified = self._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(passed = 1), 0), COALESCE(SUM(passed IS NULL), 0)"
                " FROM attempts WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return {"tasks": tasks, "attempts": total, "passed": passed, "unverified": unverified}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
