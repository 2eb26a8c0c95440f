"""The run folder as a resource: claimed by one process, its JSON files written whole.

Why a module of its own: `eval` and `formalize` share every rule here, and each rule is
about the folder, not about the run. A run folder

- is checked before anything is written into it: a path that is a file, a folder of the
  other kind of run (`eval` into a formalize folder and the reverse), or one that cannot be
  created is a one-line error, so a refused start leaves nothing behind;
- is held by one process at a time: an advisory `fcntl.flock` on `run.lock`, taken without
  waiting and held for the life of the run, so a second `eval`/`formalize` on the same
  folder refuses at once instead of computing every attempt a second time (the kernel drops
  the lock when the process dies, SIGKILL included, so a stale lock cannot exist);
- is, when the user names none, `runs/<command>-<name>-<hash>` (`default_run_dir`): the
  command, the dataset's (or source's) name, and a short hash of the settings that decide
  what the run stores. The same command resumes its folder; another `--pattern`, model or
  dataset gets a folder of its own instead of being refused by the one `runs/latest` every
  run shared (issue 30 item 10). Settings a resume may change (workers, budgets, `eval`'s
  `--samples`, which may grow) are left out of the hash, so they keep the folder;
- has its JSON files (`run.json`, `formalize.json`, `metrics.json`, `summary.json`) written
  through a temporary file and `os.replace`, so a reader or a kill never sees half a file;
  one that is corrupt anyway (edited by hand, a copy cut short) is a one-line error.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError

LOCK_NAME = "run.lock"
# The store file that says which kind of run a folder holds.
KIND_MARKERS = {
    "eval": "run.sqlite",
    "formalize": "formalize.sqlite",
    "construct": "construct.sqlite",
}
_COMMANDS = {
    "eval": "formalbench eval",
    "formalize": "formalbench formalize",
    "construct": "formalbench construct",
}
_UMASK = os.umask(0o022)
os.umask(_UMASK)


RUNS_FOLDER = Path("runs")  # where default run folders go, under the working folder
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def default_run_dir(command: str, name: str, identity: Mapping[str, Any]) -> Path:
    """`runs/<command>-<name>-<8 hex>`: the folder a run of `command` uses when no
    `--run-dir` is given. `name`: the dataset or source as given (its file stem is shown,
    made safe for a folder name); `identity`: the settings that decide what the run stores
    (the hash of their JSON), so that one configuration always finds its own folder."""
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    stem = name.rstrip("/").rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem[1:] else stem
    stem = _NAME_CHARS.sub("-", stem).strip("-.")[:40].strip("-.")
    return RUNS_FOLDER / (f"{command}-{stem}-{digest}" if stem else f"{command}-{digest}")


def describe_os_error(exc: OSError) -> str:
    """`exc` in a few words; a full disk and a read-only disk are said plainly."""
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EROFS:
        return "the storage is read-only"
    return exc.strerror or str(exc)


def check_run_dir(root: Path, kind: str) -> None:
    """Refuse a run folder that cannot hold a run of `kind` ("eval" or "formalize"), writing
    nothing: a path that is a file, or a folder already holding the other kind of run."""
    if root.exists() and not root.is_dir():
        raise InputError(f"--run-dir {root}: is a file, not a folder")
    for other, marker in KIND_MARKERS.items():
        if other != kind and (root / marker).is_file():
            raise InputError(
                f"--run-dir {root}: holds a {other} run ({marker}); "
                f"`{_COMMANDS[kind]}` needs a folder of its own"
            )


class RunLock:
    """The advisory lock of one run folder, held from `acquire` to `release`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(
                f"--run-dir {self.root}: cannot write in it ({describe_os_error(exc)})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise InputError(
                f"--run-dir {self.root}: another formalbench process is running in it{who}; "
                "wait for it to finish or choose another --run-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self if self._fd is not None else self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim_run_dir(root: Path, kind: str) -> RunLock:
    """Check `root` for a run of `kind`, create it, and take its lock (see module doc)."""
    check_run_dir(root, kind)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--run-dir {root}: cannot create it ({describe_os_error(exc)})") from None
    return RunLock(root).acquire()


@contextmanager
def full_disk_errors(root: Path) -> Iterator[None]:
    """Turn a full (or read-only) disk met in the middle of a run into one line: what was
    committed stays, and the run resumes once there is space (SQLite reports it as
    `database or disk is full`, other writes as ENOSPC)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if "disk is full" not in text and "readonly" not in text and "disk i/o" not in text:
            raise
        raise InputError(
            f"--run-dir {root}: the store cannot be written ({exc}); what was recorded is "
            "kept: free space and rerun the same command to resume"
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
            raise
        raise InputError(
            f"--run-dir {root}: {describe_os_error(exc)}; what was recorded is kept: "
            "free space and rerun the same command to resume"
        ) from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write `path` whole or not at all: a temporary file beside it, then `os.replace`."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_UMASK  # what `open` would have given a new file
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"{path}: cannot write it ({describe_os_error(exc)})") from None
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; the file keeps the mode a plain write gives
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{path}: cannot write it ({describe_os_error(exc)})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, value: Any) -> None:
    write_text_atomic(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def read_json_object(path: Path) -> dict[str, Any]:
    """A run file's JSON object; unreadable or corrupt is a one-line error naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({describe_os_error(exc)})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: corrupt (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: corrupt ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: corrupt (expected a JSON object)")
    return data


def is_writable(root: Path) -> bool:
    """Whether files can be written in `root` (read-only storage, or a folder of another
    user, is reported from without writing report files)."""
    return os.access(root, os.W_OK)
