"""The shipped Coq library (`From Formalbench Require Import Amber.`), compiled on first use.

Why a per-user cache and not `.vo` files in the package: a `.vo` file is only readable by the
coqc that wrote it, and the package does not know which Coq the user has. So the sources are
compiled once per (library hash, coqc version) into
`$FORMALBENCH_CACHE/coq-library/<version>-<hash>` (default cache root: `$XDG_CACHE_HOME` or
`~/.cache`, then `formalbench`), and every coqc run gets `-Q <that folder> Formalbench`. For
a provisioned toolchain (`toolchains/`) the folder is `<toolchain>-<version>-<hash>`, compiled
in its root through bwrap.

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
from formalbench.toolchains.toolchain import HOST, Toolchain, resolve

log = logging.getLogger(__name__)

COMPILE_TIMEOUT = 300.0
_DONE = ".complete"
_lock = threading.Lock()
_known: dict[str, Path] = {}  # coqc path or toolchain root -> compiled folder, this process
_failed: dict[str, str] = {}  # coqc path or toolchain root -> why it could not be compiled


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


def coq_version(coqc: str | Toolchain) -> str:
    """The Coq version of a toolchain, or of a host coqc (a name on PATH or a path)."""
    chain = coqc if isinstance(coqc, Toolchain) else resolve(HOST, coqc=coqc)
    version = chain.version()
    if version == "unknown":
        raise BackendError(f"`{chain.program('coqc')} --print-version` failed")
    return version


def _chain(coqc: str | Toolchain) -> Toolchain:
    return coqc if isinstance(coqc, Toolchain) else resolve(HOST, coqc=coqc)


def _cache_name(chain: Toolchain) -> str:
    """The host's folders keep their old names; a provisioned root's carry its name too (two
    roots may share a Coq version and differ in the standard library build)."""
    base = f"{coq_version(chain)}-{library_hash()}"
    return base if chain.is_host else f"{chain.name}-{base}"


def compiled_library(coqc: str | Toolchain = "coqc") -> Path:
    """The folder to pass as `-Q <folder> Formalbench`, compiling the library if needed.

    `coqc`: the toolchain (or a host coqc). Raises BackendError (one line, with coqc's first
    error) when the library does not compile there, e.g. when Coquelicot is missing."""
    chain = _chain(coqc)
    key = chain.sandbox_root or (shutil.which(chain.coqc_name) or chain.coqc_name)
    with _lock:
        if key in _known:
            return _known[key]
        if key in _failed:
            raise BackendError(_failed[key])
        try:
            folder = _build(chain)
        except BackendError as exc:
            _failed[key] = str(exc)
            raise
        _known[key] = folder
        return folder


def _build(chain: Toolchain) -> Path:
    root = cache_root()
    target = root / _cache_name(chain)
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
                _compile(chain, work, path.name)
            (work / _DONE).write_text(f"{chain.name} {chain.program('coqc')}\n", encoding="utf-8")
            if target.exists():  # a stale, unfinished folder (no marker): replace it
                shutil.rmtree(target, ignore_errors=True)
            os.rename(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log.info("compiled the formalbench Coq library into %s", target)
    return target


def _compile(chain: Toolchain, work: Path, name: str) -> None:
    argv = [chain.program("coqc"), "-q", "-Q", ".", COQ_LOGICAL_ROOT, name]
    try:
        done = chain.run(argv, cwd=work, timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise BackendError(
            f"compiling the Coq library {name} took over {exc.timeout:.0f}s"
        ) from exc
    if done.returncode != 0:
        first = next((ln for ln in done.stderr.splitlines() if ln.startswith("Error")), "")
        raise BackendError(
            f"the formalbench Coq library {name} does not compile with {chain.name} "
            f"({chain.program('coqc')}): {first or done.stderr.strip()[-300:]} (is Coquelicot "
            "installed? `apt-get install libcoq-coquelicot`)"
        )


def library_args(coqc: str | Toolchain, text: str = "") -> list[str]:
    """`-Q <folder> Formalbench` for a coqc run, or nothing when the library cannot be built.

    A text that names the library fails then with coqc's own "cannot find" error, and the
    reason is logged once; other texts are checked as before (the library is optional)."""
    try:
        return ["-Q", str(compiled_library(coqc)), COQ_LOGICAL_ROOT]
    except (BackendError, OSError, subprocess.SubprocessError) as exc:
        if COQ_LOGICAL_ROOT in text:
            log.warning("%s", exc)
        return []
