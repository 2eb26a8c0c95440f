"""Ask the kernel-dump plugin for the dump of a compiled `Candidate` library (JSON, see
`checking/coq_compare.py` and the format's contract).

Why a second process: the dump is read from a library the verifier compiled itself from
source, by a process where none of that library's text runs (`Require Candidate.` loads its
kernel objects; notations, hints and the rest of its elaboration state play no part in the
dump). Where a warm `coqtop` of `coq_session` is available, the dump is one exchange there
(the task's `Require`s stay loaded between checks: a one-shot process would load them again,
which on small files costs as much as the candidate's compile); else one coqc run of a file
of ours, the plugin loaded by absolute path (`coq_assumptions_plugin`).

The answer is framed by a fresh nonce per call: the JSON object printed between the first and
the last line holding it. Anything else (no plugin, an error, no frame, JSON that does not
parse) raises `DumpFailed` with one line saying why; the caller's verdict is then
`undecided`, never a pass.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_output import parse_messages
from formalbench.backends.coq_session import SessionBroken, SessionPool
from formalbench.core.records import CheckStatus, Severity

log = logging.getLogger(__name__)

LIBRARY = "Candidate"
VERB = "Fb_Kernel_Dump"
MODULE = "FbDump"


class DumpFailed(Exception):
    """No dump could be read; the message says why in one line."""


def query(names: Sequence[str], nonce: str) -> str:
    """The sentences that dump `names` (full names, `Candidate.t`) framed by `nonce`."""
    listed = " ".join(f'"{n}"' for n in names)
    return f'Require {LIBRARY}.\n{VERB} "{nonce}" "{LIBRARY}" {listed}.\n'


def read(stdout: str, nonce: str) -> dict[str, Any]:
    """The JSON object between the first and the last line of `stdout` holding `nonce`."""
    lines = stdout.splitlines()
    marks = [i for i, line in enumerate(lines) if nonce in line]
    if len(marks) < 2:
        raise DumpFailed("the plugin's answer is not framed by its markers")
    body = "\n".join(lines[marks[0] + 1 : marks[-1]])
    try:
        found = json.loads(body)
    except json.JSONDecodeError as why:
        raise DumpFailed(f"the plugin's answer is not JSON: {why}") from why
    if not isinstance(found, dict):
        raise DumpFailed("the plugin's answer is not a JSON object")
    return found


class Dumper:
    """Dumps compiled `Candidate` libraries for one coqc backend: in a warm session of
    `pool` where one answers, else one-shot."""

    def __init__(self, backend: CoqBackend, pool: SessionPool | None) -> None:
        self.backend = backend
        self.pool = pool
        self.session_dumps = 0  # dumps a warm session answered
        self.session_fallbacks = 0  # dumps a session could not answer (then one-shot)

    def dump(
        self, folder: Path, names: Sequence[str], timeout: float, preload: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The dump of `folder`/Candidate.vo for `names` (full names)."""
        deadline = time.monotonic() + timeout
        warm = self._in_session(folder, names, deadline, preload)
        if warm is not None:
            return warm
        return self._one_shot(folder, names, max(deadline - time.monotonic(), 0.1))

    def _in_session(
        self, folder: Path, names: Sequence[str], deadline: float, preload: Sequence[str]
    ) -> dict[str, Any] | None:
        if self.pool is None or not self.pool.usable:
            return None
        nonce = f"fbdump{secrets.token_hex(8)}"
        try:
            with self.pool.session(preload) as session:
                if session.plugin is None:
                    return None  # the plugin did not build or load: one-shot says why
                session.prepare(preload, deadline)
                segments = session.run_check(
                    [folder / f"{LIBRARY}.vo"], [query(names, nonce)], deadline
                )
        except SessionBroken as why:
            log.info("coq session gave no dump (%s); dumped one-shot", why)
            self.session_fallbacks += 1
            return None
        if not segments or segments[0].errors:
            self.session_fallbacks += 1
            return None
        try:
            found = read(segments[0].stdout, nonce)
        except DumpFailed:
            self.session_fallbacks += 1
            return None
        self.pool.succeeded()
        self.session_dumps += 1
        return found

    def _one_shot(self, folder: Path, names: Sequence[str], timeout: float) -> dict[str, Any]:
        where = plugin.plugin_folder(Path(self.backend.coqc).with_name("coqtop").as_posix())
        if where is None:
            raise DumpFailed("the kernel-dump plugin is not available here (see the log)")
        nonce = f"fbdump{secrets.token_hex(8)}"
        text = query(names, nonce)
        outcome = self.backend.compile(folder, MODULE, text, timeout, plugin.coqtop_args(where))
        if outcome.status != CheckStatus.ok:
            raise DumpFailed(f"the dump ended with {outcome.status.value}")
        for message in parse_messages(outcome.stderr, [0, len(text.split("\n", 1)[0]) + 1]):
            if message.severity == Severity.error:
                raise DumpFailed(f"the dump failed: {' '.join(message.text.split())[:300]}")
        if outcome.returncode:
            raise DumpFailed("the dump failed without a message")
        return read(outcome.stdout, nonce)
