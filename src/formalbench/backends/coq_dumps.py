"""The kernel dumps of the verifier's route: where each is asked (a warm session, else one-shot).

Why a second process: the dump is read from a library the verifier compiled itself from
source, by a process where none of that library's text runs (`Require Candidate.` loads its
kernel objects; notations, hints and the rest of its elaboration state play no part in the
dump). Where a warm `coqtop` of `coq_session` answers, the dump is one exchange there (the
task's `Require`s stay loaded between checks: a one-shot process would load them again,
which on small files costs as much as the candidate's compile); else one sandboxed coqc run
(`coq_kernel_dump.dump_targets`, the plugin loaded by absolute path, hash checked). The dump
itself, its framing and its validation are `coq_kernel_dump`'s; this module only chooses the
process and counts. Anything that fails raises `DumpFailed` with one line saying why; the
verdict is then `undecided`, never a pass.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_kernel_dump import (
    KernelDumpError,
    dump_targets,
    session_dump_targets,
)
from formalbench.backends.coq_session import SessionBroken, SessionPool

log = logging.getLogger(__name__)

LIBRARY = "Candidate"


class DumpFailed(Exception):
    """No dump could be read; the message says why in one line."""


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
        """The dump of `folder`/Candidate.vo for `names` (full names, `Candidate.t`), as the
        format's JSON object."""
        deadline = time.monotonic() + timeout
        warm = self._in_session(folder, names, deadline, preload)
        if warm is not None:
            return warm
        left = max(deadline - time.monotonic(), 1.0)
        try:
            found = dump_targets(self.backend, folder, list(names), library=LIBRARY, timeout=left)
        except KernelDumpError as why:
            raise DumpFailed(str(why)) from why
        return plain(found)

    def _in_session(
        self, folder: Path, names: Sequence[str], deadline: float, preload: Sequence[str]
    ) -> dict[str, Any] | None:
        if self.pool is None or not self.pool.usable:
            return None
        try:
            with self.pool.session(preload) as session:
                if session.plugin is None:
                    return None  # the plugin did not load there: one-shot says why
                session.prepare(preload, deadline)
                try:
                    found = session_dump_targets(
                        session, [folder / f"{LIBRARY}.vo"], list(names), deadline, library=LIBRARY
                    )
                except KernelDumpError:
                    # an error in a session whose state passed its `Reset` check (an anomaly
                    # about a `Candidate` object no longer loaded): that process is not
                    # reused; the one-shot dump answers this check
                    session.close()
                    raise
        except (SessionBroken, KernelDumpError) as why:
            log.info("coq session gave no dump (%s); dumped one-shot", why)
            self.session_fallbacks += 1
            return None
        self.pool.succeeded()
        self.session_dumps += 1
        return plain(found)


def plain(value: Any) -> Any:
    """A validated dump as the format's plain JSON values. Not `model_dump`: pydantic's
    serializer gives up on deep terms (its recursion guard reports a "circular reference"),
    and the terms under the models are plain JSON already (validated, not converted)."""
    if isinstance(value, BaseModel):
        return {name: plain(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list) and any(isinstance(v, (BaseModel, dict)) for v in value):
        return [plain(v) for v in value]
    return value
