"""Run an untrusted checker process with a time limit, a memory ceiling and a clean environment.

Generated proof text is untrusted (Lean can run programs at elaboration time), so every
assistant process gets: a throw-away working directory chosen by the caller, an address-space
limit, a wall-clock limit enforced by killing its whole process group, and an environment
reduced to an allow-list of names (no model/API credentials, nothing personal).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from formalbench.core.records import CheckStatus

# Names a checker child may see: what locates programs, libraries and the user's locale, and
# the proof assistants' own settings. Everything else (model keys, tokens, cloud settings,
# personal variables such as MY_PASSWD) stays out; an allow-list cannot miss a credential
# under a name nobody thought of, as a deny-list does.
_ALLOWED_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM",
        "TMPDIR", "TMP", "TEMP", "LEAN", "LAKE", "ELAN",
        "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "CAML_LD_LIBRARY_PATH",
    }
)  # fmt: skip
_ALLOWED_PREFIXES = ("LC_", "LEAN_", "LAKE_", "ELAN_", "COQ", "OCAML")
# Even an allowed family can hold a secret (Lake's LAKE_CACHE_KEY uploads to a cache).
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH)", re.IGNORECASE)


def allowed_name(name: str) -> bool:
    """Whether a variable of this name may reach a checker process (see `scrubbed_env`)."""
    listed = name in _ALLOWED_NAMES or name.startswith(_ALLOWED_PREFIXES)
    return listed and not _SECRET.search(name)


def scrubbed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of the current environment, then `extra` (trusted, taken as is)."""
    env = {k: v for k, v in os.environ.items() if allowed_name(k)}
    if extra:
        env.update(extra)
    return env


def memory_limiter(memory_mb: int | None):  # noqa: ANN201 - returns a preexec_fn or None
    """A preexec function that caps the child's address space (None: no cap)."""
    if not memory_mb:
        return None
    limit = memory_mb * 1024 * 1024

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def limited_argv(argv: Sequence[str], memory_mb: int | None) -> tuple[list[str], object]:
    """`argv` under an address-space cap, and the preexec function still needed (or None).

    util-linux's `prlimit` sets the limit in the child itself, which avoids `preexec_fn`:
    Python documents it as unsafe in a program with threads (the backend pools are threads),
    where a child can deadlock between fork and exec. Without `prlimit`, fall back to it.
    """
    if not memory_mb:
        return list(argv), None
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return list(argv), memory_limiter(memory_mb)
    return [prlimit, f"--as={memory_mb * 1024 * 1024}", "--", *argv], None


@dataclass
class ProcessOutcome:
    status: CheckStatus  # ok (exited, any code), timeout, out_of_memory, crash (killed by signal)
    returncode: int | None
    stdout: str
    stderr: str
    elapsed: float


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a child started with start_new_session=True together with its descendants."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_limited(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    timeout: float,
    memory_mb: int | None = None,
    env: Mapping[str, str] | None = None,
) -> ProcessOutcome:
    """Run `argv` to completion or until `timeout` seconds pass, whichever is first.

    The caller interprets an out-of-memory death from the tool's own output (allocators
    report it differently); a death by signal is reported as `crash`.
    """
    start = time.perf_counter()
    command, preexec = limited_argv(argv, memory_mb)
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=dict(env) if env is not None else scrubbed_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
        preexec_fn=preexec,  # type: ignore[arg-type]
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return ProcessOutcome(CheckStatus.timeout, None, out, err, time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    status = CheckStatus.ok
    if proc.returncode is not None and proc.returncode < 0:
        status = CheckStatus.crash
    return ProcessOutcome(status, proc.returncode, out, err, elapsed)
