"""The one way the project opens a SQLite database.

Every store (runs, verdict cache, model-response cache, review decisions) may share one file,
so each declares a *component* with its own schema version in the `schema_version` table; a
file written by a newer formalbench is refused with a clear message instead of being
misread. Connections use WAL (readers never block the writer, a killed writer leaves the
file consistent), foreign keys, and a busy timeout so that concurrent processes queue
instead of failing.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from formalbench.core.errors import FormalbenchError

BUSY_TIMEOUT_S = 30.0


class StoreError(FormalbenchError):
    """The database cannot be used: not a database, a newer schema, or a refused operation."""


def connect(path: str | Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open (creating parent folders) a database in autocommit mode with WAL and foreign keys.

    Autocommit (`isolation_level=None`) because every write goes through `transaction`,
    which says where a unit of work begins and ends instead of relying on the driver's
    implicit transactions. The connection may be used from several threads as long as the
    caller serialises access (the stores hold a lock).

    `readonly` opens an existing file without writing anything, not even WAL's side files:
    as `immutable` (SQLite then trusts that nobody changes the file), which is what lets a
    finished run be reported from read-only storage; nothing is created or migrated.
    """
    path = Path(path)
    if readonly:
        return _connect_readonly(path)
    if str(path) != ":memory:":
        if path.is_dir():
            raise StoreError(f"{path}: is a folder, expected a database file")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{path}: cannot create its folder ({exc.strerror or exc})") from None
    try:
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA foreign_keys = ON")
        if str(path) != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL under WAL: a crash of the process (SIGKILL included) loses nothing that was
        # committed; only a power cut can lose the last commits, never corrupt the file.
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open as a SQLite database ({exc})") from None
    return conn


def _connect_readonly(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise StoreError(f"{path}: no such database file")
    # A clean close folds the WAL into the file and deletes it; one left by a killed writer
    # holds committed data that `immutable` would not read, so then `mode=ro` reads it.
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.is_file() and wal.stat().st_size else "immutable=1"
    uri = f"{path.resolve().as_uri()}?{mode}"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open as a SQLite database ({exc})") from None
    return conn


def check_schema(conn: sqlite3.Connection, component: str, version: int) -> None:
    """What `ensure_schema` checks, for a read-only connection: the file holds `component`
    at `version` (nothing is created)."""
    try:
        row = conn.execute(
            "SELECT version FROM schema_version WHERE component = ?", (component,)
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{database_path(conn)}: not a usable SQLite database ({exc})") from None
    if row is None:
        raise StoreError(f"{database_path(conn)}: holds no {component} tables")
    if row[0] != version:
        newer = "a newer" if row[0] > version else "an older"
        raise StoreError(
            f"{database_path(conn)}: {component} schema version {row[0]} was written "
            f"by {newer} formalbench; this one reads version {version}"
        )


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One unit of work: all of it is committed, or (on any error or a kill) none of it.

    `BEGIN IMMEDIATE` takes the write lock up front, so two writers never both read and then
    collide at commit time; the busy timeout makes the second one wait.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


_schema_lock = threading.Lock()


def ensure_schema(conn: sqlite3.Connection, component: str, version: int, ddl: str) -> None:
    """Create `component`'s tables at `version`, or check that the file holds that version.

    `ddl` must be idempotent (`CREATE TABLE IF NOT EXISTS ...`). A file whose component is at
    a higher version was written by a newer formalbench: refused. A lower version would need
    a migration; none exists yet, so it is refused too, with the numbers to say why.
    """
    with _schema_lock:
        try:
            with transaction(conn):
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version ("
                    " component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
                )
                row = conn.execute(
                    "SELECT version FROM schema_version WHERE component = ?", (component,)
                ).fetchone()
                if row is None:
                    for statement in _statements(ddl):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO schema_version (component, version) VALUES (?, ?)",
                        (component, version),
                    )
                elif row[0] != version:
                    newer = "a newer" if row[0] > version else "an older"
                    raise StoreError(
                        f"{database_path(conn)}: {component} schema version {row[0]} was written "
                        f"by {newer} formalbench; this one reads version {version}"
                    )
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{database_path(conn)}: not a usable SQLite database ({exc})"
            ) from None


def open_component(
    path: str | Path, component: str, version: int, ddl: str, *, readonly: bool = False
) -> sqlite3.Connection:
    """A connection to `path` holding `component`'s tables at `version`: created where
    missing (`ensure_schema`), or, read-only, only checked (`check_schema`)."""
    conn = connect(path, readonly=readonly)
    if readonly:
        check_schema(conn, component, version)
    else:
        ensure_schema(conn, component, version, ddl)
    return conn


def _statements(ddl: str) -> list[str]:
    """Split a DDL script into statements (`execute` runs one; `executescript` would COMMIT)."""
    return [s.strip() for s in ddl.split(";") if s.strip()]


def database_path(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return (row[2] if row else "") or ":memory:"


def integrity_ok(conn: sqlite3.Connection) -> bool:
    """SQLite's own structural check of the whole file."""
    return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
