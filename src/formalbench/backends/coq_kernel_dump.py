"""Run formalbench's Coq plugin on a compiled library and read its kernel dump as typed data.

Why: a Coq verdict is decided from the kernel's own objects (issue 28): the dump gives, for
named targets of a library compiled by the verifier itself, their types, universes and
assumptions by the kernel's constructors, the closure of the library-local objects their
statements rest on, the library's postulates, its unsafe typing flags and its universe
graph (format: `kdump-format.md`, v1); or, for APE's compile pass, every object of the
library. The plugin writes JSON from OCaml; this module runs it and refuses anything that is
not exactly the format, with one clear line (`KernelDumpError`).

Two ways to run it:
* `dump_targets` / `dump_library`: one coqc process, sandboxed like every checker process
  (`sandbox.run_limited`), in the folder holding `<library>.vo` (compiled by the verifier):
  our file loads the plugin by absolute path (`coq_assumptions_plugin`, hash checked),
  `Require`s the library (nothing imported) and runs the dump command;
* `session_dump_targets`: the same two sentences in a warm `coq_session` (its plugin loaded
  at start), between its mark and its `Reset`, so a check does not pay a second coqc start;
  `dump_targets_warm` takes a session of the backend's pool for it and falls back to the
  one-shot process when no session can answer.

The dump is printed between `FBDUMP-BEGIN <nonce>` and `FBDUMP-END <nonce>` lines, with a
fresh random nonce per call: text the library prints (it cannot print anything once loaded,
but a look-alike frame in a name or an earlier message) cannot be taken for the dump. The
models and the reader are `coq_kernel_dump_format` (the comparator needs no Coq to read).
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends.coq_kernel_dump_format import (
    KernelDump,
    KernelDumpError,
    LibraryDump,
    read_library_dump,
    read_targets_dump,
)
from formalbench.backends.coq_library import library_args
from formalbench.backends.coq_queries import QUALID
from formalbench.backends.sandbox import run_limited, scrubbed_env
from formalbench.core.records import CheckStatus

if TYPE_CHECKING:
    from formalbench.backends.coq import CoqBackend
    from formalbench.backends.coq_session import CoqSession

log = logging.getLogger(__name__)

DUMP_FILE = "FbKernelDump"  # our file in the library's folder: `FbKernelDump.v`
_NAME = re.compile(QUALID)


# --- the commands -------------------------------------------------------------------------
def _coq_string(text: str) -> str:
    if not _NAME.fullmatch(text):
        raise KernelDumpError(f"not a Coq name: {text[:80]!r}")
    return f'"{text}"'


def targets_command(
    nonce: str, library: str, targets: Sequence[str], *, exact: bool = False
) -> str:
    """The dump command; `exact`: each target's assumptions by Coq's own
    `Assumptions.assumptions` rather than the plugin's memoizing twin (same constructors,
    one walk shared by all targets of the command; see fb_dump.ml)."""
    names = " ".join(_coq_string(t) for t in targets)
    verb = plugin.DUMP_EXACT_VERB if exact else plugin.DUMP_VERB
    return f'{verb} "{nonce}" {_coq_string(library)} {names}.'


def library_command(nonce: str, library: str) -> str:
    return f'{plugin.DUMP_LIBRARY_VERB} "{nonce}" {_coq_string(library)}.'


def new_nonce() -> str:
    return secrets.token_hex(16)


def _run_one_shot(
    backend: CoqBackend, folder: Path, library: str, command: str, timeout: float
) -> str:
    """Run `Require <library>.` and `command` in one sandboxed coqc in `folder`; stdout."""
    where = plugin.plugin_folder(str(Path(backend.coqc).with_name("coqtop")))
    if where is None:
        raise KernelDumpError("the Coq plugin is not available here (see the log)")
    plugin.verify(where)  # its hash, just before the process that loads it
    text = f"{plugin.declare_sentence(where)}Require {_coq_string(library)[1:-1]}.\n{command}\n"
    (folder / f"{DUMP_FILE}.v").write_text(text, encoding="utf-8")
    argv = [backend.coqc, "-q", *library_args(backend.coqc), *backend.args, f"{DUMP_FILE}.v"]
    project = backend.project
    outcome = run_limited(
        argv,
        cwd=folder,
        timeout=timeout,
        memory_mb=backend.memory_mb,
        env=scrubbed_env(),
        read_only=[str(p) for p in project.read_only] if project is not None else (),
    )
    if outcome.status != CheckStatus.ok or outcome.returncode != 0:
        said = " ".join(outcome.stderr.split())[:300]
        raise KernelDumpError(f"the dump process ended with {outcome.status.value}: {said}")
    if outcome.truncated:
        raise KernelDumpError("the dump is larger than the output this reader keeps")
    return outcome.stdout


def dump_targets(
    backend: CoqBackend,
    folder: Path,
    targets: Sequence[str],
    *,
    library: str = "Candidate",
    timeout: float = 120.0,
    exact: bool = False,
) -> KernelDump:
    """The `targets` dump of `<library>.vo` in `folder` (a work folder of ours holding the
    library, compiled by the verifier, and what it needs), by one sandboxed coqc."""
    nonce = new_nonce()
    command = targets_command(nonce, library, targets, exact=exact)
    stdout = _run_one_shot(backend, folder, library, command, timeout)
    return read_targets_dump(stdout, nonce, targets)


def dump_library(
    backend: CoqBackend, folder: Path, *, library: str = "Candidate", timeout: float = 300.0
) -> LibraryDump:
    """Every object of `<library>.vo` in `folder` (APE's compile pass)."""
    nonce = new_nonce()
    stdout = _run_one_shot(backend, folder, library, library_command(nonce, library), timeout)
    return read_library_dump(stdout, nonce)


def session_dump_targets(
    session: CoqSession,
    files: Sequence[Path],
    targets: Sequence[str],
    deadline: float,
    *,
    library: str = "Candidate",
    exact: bool = False,
) -> KernelDump:
    """The `targets` dump through a warm session whose plugin loaded at start: `files`
    (`<library>.vo` and what it needs) are copied in, `Require`d above the session's mark,
    dumped, and unloaded by its `Reset`. SessionBroken propagates (the caller falls back to
    `dump_targets`); a malformed dump is KernelDumpError."""
    if session.plugin is None:
        raise KernelDumpError("this session has no plugin loaded")
    nonce = new_nonce()
    command = targets_command(nonce, library, targets, exact=exact)
    parts = [f"Require {_coq_string(library)[1:-1]}.", command]
    segments = session.run_check(files, parts, deadline)
    errors = [e for s in segments for e in s.errors]
    if errors:
        raise KernelDumpError(f"the dump failed in the session: {errors[0][:300]}")
    return read_targets_dump(segments[-1].stdout, nonce, targets)


def dump_targets_warm(
    backend: CoqBackend,
    folder: Path,
    targets: Sequence[str],
    *,
    library: str = "Candidate",
    preload: Sequence[str] = (),
    timeout: float = 120.0,
    exact: bool = False,
) -> KernelDump:
    """`dump_targets`, asked of a warm session of the backend's pool where one can answer
    (`preload`: `Require` sentences the session keeps loaded, e.g. from
    `coq_session.preload_sentences(task_text, [library])`), else one-shot. Every `.vo` of
    `folder` is copied into the session for the check and removed after it."""
    import time

    from formalbench.backends.coq_session import SessionBroken, pool_for

    deadline = time.monotonic() + timeout
    pool = pool_for(backend)
    if pool.usable:
        files = sorted(p for p in folder.glob("*.vo") if p.stem != DUMP_FILE)
        try:
            with pool.session(preload) as session:
                session.prepare(preload, deadline)
                dump = session_dump_targets(
                    session, files, targets, deadline, library=library, exact=exact
                )
            pool.succeeded()
            return dump
        except (SessionBroken, KernelDumpError) as why:
            log.info("the kernel dump runs one-shot: the session gave no answer (%s)", why)
    left = max(deadline - time.monotonic(), 1.0)
    return dump_targets(backend, folder, targets, library=library, timeout=left, exact=exact)
