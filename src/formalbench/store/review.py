"""Review decisions of a formalize run, kept in the run's own `formalize.sqlite`.

Why versions: a reviewer may have the same problem open in two tabs (or two reviewers may
share a run). Each decision names the version it was based on; the store accepts it only
if that is still the current version, inside one `BEGIN IMMEDIATE` transaction, so the later
of two writes from the same starting point is refused (`ReviewConflict`) instead of silently
replacing the first. Every accepted decision is a new row: the history is never overwritten.

The listing queries (`page`, `counts`, `neighbours`) read the formalize component's tables
(`fz_problems`, `fz_candidates`) with SQL instead of loading every record, so that the
dashboard's list stays fast at thousands of problems; they need those tables to exist (open a
`FormalizeStore` on the file first).

Texts are stored once (`rv_texts`, keyed by their SHA-256, zstd-compressed): a reviewer who
re-posts a long file many times, or accepts a text that another decision already holds, adds
a row of a few hundred bytes, not another copy of the file. Schema version 1 kept the text
inside each decision's JSON; such a file is moved to version 2 when it is opened.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.store.db import StoreError, connect, ensure_schema, transaction

SCHEMA_VERSION = 2
_TEXTS = """
CREATE TABLE IF NOT EXISTS rv_texts (
    sha256 TEXT PRIMARY KEY,
    body BLOB NOT NULL
);"""
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS rv_decisions (
    problem_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    decision TEXT NOT NULL,
    checked TEXT,
    code_sha256 TEXT,
    PRIMARY KEY (problem_id, version)
);"""
    + _TEXTS
    + """
CREATE TABLE IF NOT EXISTS rv_current (
    problem_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rv_current_status ON rv_current(status);
"""
)
_PREVIEW_CHARS = 240


class ReviewConflict(StoreError):
    """A decision based on a version that is no longer the current one."""

    def __init__(self, problem_id: str, based_on: int, current: ReviewDecision | None) -> None:
        self.problem_id = problem_id
        self.based_on = based_on
        self.current = current
        now = current.version if current else 0
        who = f" ({current.status.value} by {current.reviewer} at {current.at})" if current else ""
        super().__init__(
            f"problem {problem_id!r}: the decision was based on version {based_on}, "
            f"but the current version is {now}{who}"
        )


@dataclass(frozen=True)
class ProblemFilter:
    status: ReviewStatus | None = None
    category: str | None = None
    text: str | None = None  # case-insensitive substring of the id or the informal statement


@dataclass(frozen=True)
class ProblemRow:
    """One line of the problem list."""

    id: str
    category: str | None
    preview: str
    status: ReviewStatus
    reviewer: str | None
    at: str | None
    candidates: int = 0
    compiled: int = 0
    aligned: int = 0


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ReviewStore:
    """Versioned review decisions in a formalize run's database, thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn = connect(self.path)
        self._lock = threading.Lock()
        _migrate_from_1(self._conn)
        ensure_schema(self._conn, "review", SCHEMA_VERSION, _SCHEMA)

    # -- decisions ----------------------------------------------------------------------
    def decide(
        self, decision: ReviewDecision, *, based_on: int, checked: dict[str, Any] | None = None
    ) -> ReviewDecision:
        """Store `decision` as version `based_on + 1`, or raise ReviewConflict.

        `at` is filled with the current time when empty; `checked` is what the assistant said
        of the decided text when the reviewer re-checked it (kept for the export's trail).
        """
        if not decision.reviewer.strip():
            raise StoreError(f"problem {decision.problem_id!r}: a decision needs a reviewer name")
        if decision.status == ReviewStatus.unreviewed:
            raise StoreError(f"problem {decision.problem_id!r}: decide accepted or rejected")
        with self._lock, transaction(self._conn):
            row = self._conn.execute(
                "SELECT version FROM rv_current WHERE problem_id = ?", (decision.problem_id,)
            ).fetchone()
            current = row[0] if row else 0
            if current != based_on:
                raise ReviewConflict(
                    decision.problem_id, based_on, self._current(current, decision)
                )
            stored = decision.model_copy(
                update={"version": current + 1, "at": decision.at or now_iso()}
            )
            self._conn.execute(
                "INSERT INTO rv_decisions (problem_id, version, decision, checked, code_sha256)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    stored.problem_id,
                    stored.version,
                    stored.model_copy(update={"code": None}).model_dump_json(),
                    None if checked is None else json.dumps(checked, sort_keys=True),
                    _put_text(self._conn, stored.code),
                ),
            )
            self._conn.execute(
                "INSERT INTO rv_current (problem_id, version, status, reviewer, at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (problem_id) DO UPDATE SET"
                " version = excluded.version, status = excluded.status,"
                " reviewer = excluded.reviewer, at = excluded.at",
                (
                    stored.problem_id,
                    stored.version,
                    stored.status.value,
                    stored.reviewer,
                    stored.at,
                ),
            )
        return stored

    def _current(self, version: int, decision: ReviewDecision) -> ReviewDecision | None:
        if not version:
            return None
        row = self._conn.execute(
            "SELECT decision, code_sha256 FROM rv_decisions WHERE problem_id = ? AND version = ?",
            (decision.problem_id, version),
        ).fetchone()
        return None if row is None else self._decision(row)

    def current(self, problem_id: str) -> ReviewDecision | None:
        """The latest decision on a problem (None: not reviewed yet, version 0)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT d.decision, d.code_sha256 FROM rv_current c JOIN rv_decisions d"
                " ON d.problem_id = c.problem_id AND d.version = c.version"
                " WHERE c.problem_id = ?",
                (problem_id,),
            ).fetchone()
            return None if row is None else self._decision(row)

    def history(self, problem_id: str) -> list[ReviewDecision]:
        """Every decision on a problem, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT decision, code_sha256 FROM rv_decisions WHERE problem_id = ?"
                " ORDER BY version",
                (problem_id,),
            ).fetchall()
            return [self._decision(r) for r in rows]

    def _decision(self, row: tuple[str, str | None]) -> ReviewDecision:
        """A stored decision with its text put back (called with the lock held)."""
        decision = ReviewDecision.model_validate_json(row[0])
        if row[1] is None:
            return decision
        return decision.model_copy(update={"code": _get_text(self._conn, row[1])})

    def text_bytes(self) -> int:
        """Bytes the stored texts take (compressed), for reports and the store's tests."""
        with self._lock:
            return self._conn.execute(
                "SELECT COALESCE(SUM(length(body)), 0) FROM rv_texts"
            ).fetchone()[0]

    def checked(self, problem_id: str, version: int) -> dict[str, Any] | None:
        """The re-check stored with one decision, if the reviewer ran one."""
        with self._lock:
            row = self._conn.execute(
                "SELECT checked FROM rv_decisions WHERE problem_id = ? AND version = ?",
                (problem_id, version),
            ).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def accepted(self) -> list[ReviewDecision]:
        """The current decision of every accepted problem, in the run's problem order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT d.decision, d.code_sha256 FROM rv_current c"
                " JOIN rv_decisions d ON d.problem_id = c.problem_id AND d.version = c.version"
                " LEFT JOIN fz_problems p ON p.id = c.problem_id"
                " WHERE c.status = 'accepted' ORDER BY p.position, c.problem_id"
            ).fetchall()
            return [self._decision(r) for r in rows]

    def statuses(self) -> dict[str, tuple[ReviewStatus, str, str]]:
        """Every decided problem's current (status, reviewer, at), whatever kind of run holds
        the decisions (unlike `page` and `accepted`, no formalize table is read)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT problem_id, status, reviewer, at FROM rv_current"
            ).fetchall()
        return {r[0]: (ReviewStatus(r[1]), r[2], r[3]) for r in rows}

    # -- listing ------------------------------------------------------------------------
    def page(self, flt: ProblemFilter, offset: int, limit: int) -> tuple[list[ProblemRow], int]:
        """One page of problems in run order, and how many match the filter in all."""
        where, args = _where(flt)
        base = f"FROM fz_problems p LEFT JOIN rv_current c ON c.problem_id = p.id WHERE {where}"
        with self._lock:
            total = self._conn.execute(f"SELECT COUNT(*) {base}", args).fetchone()[0]
            # The page's ids first: the per-row work (JSON, candidate counts) is then done for
            # the rows shown only, not for every row skipped by OFFSET.
            rows = self._conn.execute(
                f"WITH shown AS (SELECT p.id, p.position {base}"
                " ORDER BY p.position LIMIT ? OFFSET ?)"
                " SELECT p.id, json_extract(p.problem, '$.category'),"
                f" substr(json_extract(p.problem, '$.informal'), 1, {_PREVIEW_CHARS + 1}),"
                " COALESCE(c.status, 'unreviewed'), c.reviewer, c.at,"
                " (SELECT COUNT(*) FROM fz_candidates f WHERE f.problem_id = p.id),"
                " (SELECT COUNT(*) FROM fz_candidates f WHERE f.problem_id = p.id"
                "   AND f.compiled = 1),"
                " (SELECT COUNT(*) FROM fz_candidates f WHERE f.problem_id = p.id"
                "   AND f.aligned = 1)"
                " FROM shown s JOIN fz_problems p ON p.id = s.id"
                " LEFT JOIN rv_current c ON c.problem_id = p.id ORDER BY s.position",
                (*args, limit, offset),
            ).fetchall()
        return [_row(r) for r in rows], total

    def counts(self, flt: ProblemFilter) -> dict[ReviewStatus, int]:
        """How many problems of each status match the filter (its own status ignored)."""
        where, args = _where(ProblemFilter(None, flt.category, flt.text))
        with self._lock:
            rows = self._conn.execute(
                "SELECT COALESCE(c.status, 'unreviewed'), COUNT(*) FROM fz_problems p"
                f" LEFT JOIN rv_current c ON c.problem_id = p.id WHERE {where}"
                " GROUP BY 1",
                args,
            ).fetchall()
        found = {ReviewStatus(status): n for status, n in rows}
        return {status: found.get(status, 0) for status in ReviewStatus}

    def categories(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT json_extract(problem, '$.category') FROM fz_problems"
            ).fetchall()
        return sorted(r[0] for r in rows if r[0])

    def neighbours(self, problem_id: str, flt: ProblemFilter) -> tuple[str | None, str | None]:
        """The previous and next problem (run order) that match the filter."""
        where, args = _where(flt)
        base = "FROM fz_problems p LEFT JOIN rv_current c ON c.problem_id = p.id"
        here = "(SELECT position FROM fz_problems WHERE id = ?)"
        found: list[str | None] = []
        with self._lock:
            for op, order in (("<", "DESC"), (">", "ASC")):
                row = self._conn.execute(
                    f"SELECT p.id {base} WHERE {where} AND p.position {op} {here}"
                    f" ORDER BY p.position {order} LIMIT 1",
                    (*args, problem_id),
                ).fetchone()
                found.append(row[0] if row else None)
        return found[0], found[1]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ReviewStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _put_text(conn: sqlite3.Connection, text: str | None) -> str | None:
    """Store `text` once under its SHA-256 (inside the caller's transaction); its key."""
    if text is None:
        return None
    raw = text.encode("utf-8")
    key = hashlib.sha256(raw).hexdigest()
    known = conn.execute("SELECT 1 FROM rv_texts WHERE sha256 = ?", (key,)).fetchone()
    if known is None:
        body = zstandard.ZstdCompressor(level=9).compress(raw)
        conn.execute("INSERT INTO rv_texts (sha256, body) VALUES (?, ?)", (key, body))
    return key


def _get_text(conn: sqlite3.Connection, key: str) -> str:
    row = conn.execute("SELECT body FROM rv_texts WHERE sha256 = ?", (key,)).fetchone()
    if row is None:
        raise StoreError(f"review store: the text {key[:12]}… of a decision is missing")
    raw = zstandard.ZstdDecompressor().decompress(row[0])
    if hashlib.sha256(raw).hexdigest() != key:
        raise StoreError(f"review store: the text {key[:12]}… does not match its hash")
    return raw.decode("utf-8")


def _migrate_from_1(conn: sqlite3.Connection) -> None:
    """Version 1 kept each decision's text in its JSON: move the texts to `rv_texts`."""
    with transaction(conn):
        has_versions = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        row = (
            has_versions
            and conn.execute(
                "SELECT version FROM schema_version WHERE component = 'review'"
            ).fetchone()
        )
        if not row or row[0] != 1:
            return
        conn.execute(_TEXTS)
        conn.execute("ALTER TABLE rv_decisions ADD COLUMN code_sha256 TEXT")
        rows = conn.execute("SELECT problem_id, version, decision FROM rv_decisions").fetchall()
        for problem_id, version, text in rows:
            decision = ReviewDecision.model_validate_json(text)
            conn.execute(
                "UPDATE rv_decisions SET decision = ?, code_sha256 = ?"
                " WHERE problem_id = ? AND version = ?",
                (
                    decision.model_copy(update={"code": None}).model_dump_json(),
                    _put_text(conn, decision.code),
                    problem_id,
                    version,
                ),
            )
        conn.execute("UPDATE schema_version SET version = 2 WHERE component = 'review'")


def _where(flt: ProblemFilter) -> tuple[str, list[Any]]:
    clauses, args = ["1"], []
    if flt.status is not None:
        clauses.append("COALESCE(c.status, 'unreviewed') = ?")
        args.append(flt.status.value)
    if flt.category:
        clauses.append("json_extract(p.problem, '$.category') = ?")
        args.append(flt.category)
    if flt.text:
        pattern = "%" + _escape_like(flt.text.lower()) + "%"
        clauses.append(
            "(lower(p.id) LIKE ? ESCAPE '\\'"
            " OR lower(json_extract(p.problem, '$.informal')) LIKE ? ESCAPE '\\')"
        )
        args += [pattern, pattern]
    return " AND ".join(clauses), args


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _row(r: tuple[Any, ...]) -> ProblemRow:
    preview = r[2] or ""
    if len(preview) > _PREVIEW_CHARS:
        preview = preview[:_PREVIEW_CHARS].rstrip() + "…"
    return ProblemRow(
        id=r[0],
        category=r[1],
        preview=preview,
        status=ReviewStatus(r[3]),
        reviewer=r[4],
        at=r[5],
        candidates=r[6],
        compiled=r[7],
        aligned=r[8],
    )
