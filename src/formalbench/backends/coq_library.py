"""The shipped Coq library (`From Formalbench Require Import Amber.`), compiled on first use.

Why a per-user cache and not `.vo` files in the package: a `.vo` file is only readable by the
coqc that wrote it, and the package does not know which Coq the user has. So the sources are
compiled once per (library hash, coqc version) into
`$FORMALBENCH_CACHE/coq-library/<version>-<hash>` (default cache root: `$XDG_CACHE_HOME` or
`~/.cache`, then `formalbench`), and every coqc run gets `-Q <that folder> Formalbench`.

Concurrent processes (parallel evaluations, test workers) take an exclusive `flock` on the
cache root while compiling, build in a temporary sibling folder and rename it into place,
so a reader never sees a half-written library. The compile runs our own file, not model
output, so it runs outside the sandbox; the sandbox shows the finished folder read-only
(the whole file system is bound read-only there).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from formalbench.core.config import cache_path
from formalbench.core.errors import BackendError
from formalbench.library import COQ_LOGICAL_ROOT, COQ_SOURCE_DIR

log = logging.getLogger(__name__)

COMPILE_TIMEOUT = 300.0
_DONE = ".complete"
_lock = threading.Lock()
_known: dict[str, Path] = {}  # coqc path -> compiled folder, for this process
_failed: dict[str, str] = {}  # coqc path -> why it could not be compiled


def cache_root() -> Path:
    """Where compiled libraries are kept (see the module doc)."""
    return cache_path("coq-library")


def sources() -> list[Path]:
    """The library's `.v` files, in compile order (alphabetical; Amber depends on nothing)."""
    return sorted(COQ_SOURCE_DIR.glob("*.v"))


def library_hash() -> str:
    """A digest of the sources: a changed library is compiled again, never mixed up."""
    digest = hashlib.sha256()
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def coq_version(coqc: str) -> str:
    done = subprocess.run([coqc, "--print-version"], capture_output=True, text=True, timeout=60)
    words = done.stdout.split()
    if done.returncode != 0 or not words:
        raise BackendError(f"`{coqc} --print-version` failed: {done.stderr.strip()[:200]}")
    return words[0]


def compiled_library(coqc: str = "coqc") -> Path:
    """The folder to pass as `-Q <folder> Formalbench`, compiling the library if needed.

    Raises BackendError (one line, with coqc's first error) when the library does not compile
    with this coqc, e.g. when Coquelicot is missing."""
    found = shutil.which(coqc) or coqc
    with _lock:
        if found in _known:
            return _known[found]
        if found in _failed:
            raise BackendError(_failed[found])
        try:
            folder = _build(found)
        except BackendError as exc:
            _failed[found] = str(exc)
            raise
        _known[found] = folder
        return folder


def _build(coqc: str) -> Path:
    root = cache_root()
    target = root / f"{coq_version(coqc)}-{library_hash()}"
    if (target / _DONE).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        if (target / _DONE).is_file():  # another process built it while we waited
            return target
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            for path in sources():
                shutil.copyfile(path, work / path.name)
                _compile(coqc, work, path.name)
            (work / _DONE).write_text(f"{coqc}\n", encoding="utf-8")
            if target.exists():  # a stale, unfinished folder (no marker): replace it
                shutil.rmtree(target, ignore_errors=True)
            os.rename(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log.info("compiled the formalbench Coq library into %s", target)
    return target


def _compile(coqc: str, work: Path, name: str) -> None:
    argv = [coqc, "-q", "-Q", ".", COQ_LOGICAL_ROOT, name]
    try:
        done = subprocess.run(
            argv, cwd=work, capture_output=True, text=True, timeout=COMPILE_TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        raise BackendError(
            f"compiling the Coq library {name} took over {exc.timeout:.0f}s"
        ) from exc
    if done.returncode != 0:
        first = next((ln for ln in done.stderr.splitlines() if ln.startswith("Error")), "")
        raise BackendError(
            f"the formalbench Coq library {name} does not compile with {coqc}: "
            f"{first or done.stderr.strip()[-300:]} (is Coquelicot installed? "
            "`apt-get install libcoq-coquelicot`)"
        )


def library_args(coqc: str, text: str = "") -> list[str]:
    """`-Q <folder> Formalbench` for a coqc run, or nothing when the library cannot be built.

    A text that names the library fails then with coqc's own "cannot find" error, and the
    reason is logged once; other texts are checked as before (the library is optional)."""
    try:
        return ["-Q", str(compiled_library(coqc)), COQ_LOGICAL_ROOT]
    except (BackendError, OSError, subprocess.SubprocessError) as exc:
        if COQ_LOGICAL_ROOT in text:
            log.warning("%s", exc)
        return []
