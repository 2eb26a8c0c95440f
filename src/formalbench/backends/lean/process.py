"""One REPL process: start it, send a request, wait for the reply under a deadline and a memory ceiling.

The wait is a `select` loop on the process's stdout, so a check costs a pipe round trip and
nothing more; while waiting, the process tree's private resident memory is sampled (psutil).
A request that outlives its deadline, or a process that grows past the ceiling, gets its whole
process group killed (`lake exe repl` runs the REPL as a child of lake); the outcome says why
and the next request starts a fresh process. Nothing here raises for what the process does.

Each process runs in a throw-away folder of its own, made when it starts and removed when it
is stopped: code run while elaborating (`run_tac`, `#eval` with IO) sees that folder as its
working directory, never the user's project, and what it writes there dies with the process.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

from formalbench.backends.lean.repl_protocol import ReplyReader, encode_request
from formalbench.backends.sandbox import (
    confined_argv,
    kill_group,
    private_env,
    register,
    scrubbed_env,
    sweep_stale,
    unregister,
)
from formalbench.core.errors import BackendError
from formalbench.core.records import CheckStatus, Diagnostic

OOM_WORDS = ("out of memory", "bad_alloc", "cannot allocate memory")
_TREE_REFRESH_S = 1.0


@dataclass
class Exchange:
    """How one request ended: a reply (status ok) or why there is none."""

    status: CheckStatus
    reply: dict[str, Any] | None = None
    elapsed: float = 0.0
    detail: str | None = None


@dataclass
class HeaderEnv:
    """An elaborated header inside one process: its env number and its own messages."""

    env: int
    messages: list[Diagnostic] = field(default_factory=list)


def private_rss(proc: psutil.Process) -> int:
    """Resident memory not backed by files (mapped .olean files are shared with the page cache)."""
    info = proc.memory_info()
    shared = getattr(info, "shared", 0)
    return max(0, info.rss - shared)


def tree_private_mb(members: list[psutil.Process]) -> float:
    """Private resident memory of `members` (a process and its descendants), in MiB."""
    total = 0
    for member in members:
        with contextlib.suppress(psutil.Error):
            total += private_rss(member)
    return total / (1024 * 1024)


def process_tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants (empty when it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


class ReplProcess:
    """A REPL child process, started on first use and restarted after it is stopped."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        memory_mb: int | None = None,
        env: Mapping[str, str] | None = None,
        poll_interval: float = 0.05,
    ) -> None:
        self.argv = list(argv)
        self.memory_mb = memory_mb
        self.env = dict(env) if env is not None else scrubbed_env()
        self.poll_interval = poll_interval
        self.headers: dict[str, HeaderEnv] = {}
        self.uses = 0
        self.starts = 0
        self.last_used = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._reader = ReplyReader()
        self._tree: list[psutil.Process] = []
        self._tree_at = 0.0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def workdir(self) -> str | None:
        """The throw-away folder the running process works in (None when stopped)."""
        return self._workdir.name if self._workdir is not None else None

    def start(self) -> None:
        self.stop()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        # removed in stop(), or by its finalizer if this object is dropped unstopped
        if self.starts == 0:
            sweep_stale()  # folders of a formalbench killed by SIGKILL
        self._workdir = tempfile.TemporaryDirectory(  # noqa: SIM115
            prefix=f"formalbench-repl-{os.getpid()}-", ignore_cleanup_errors=True
        )
        folder = self._workdir.name
        try:
            self._proc = subprocess.Popen(
                confined_argv(self.argv, folder)[0],  # memory is watched here, not by rlimit
                cwd=folder,
                env=private_env(self.env, folder),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as exc:
            self.stop()
            raise BackendError(
                f"cannot start the Lean REPL `{' '.join(self.argv)}`: {exc}"
            ) from exc
        register(self._proc)
        assert self._proc.stdin is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        self._reader = ReplyReader()
        self.headers = {}
        self.uses = 0
        self.starts += 1
        self._tree, self._tree_at = [], 0.0

    def stop(self) -> None:
        """Kill the process group and forget every environment it held."""
        proc, self._proc = self._proc, None
        self.headers = {}
        if proc is not None:
            kill_group(proc)
            unregister(proc)
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    stream.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def memory_mb_now(self) -> float:
        """Private resident memory of the process and its descendants, in MiB."""
        if self._proc is None:
            return 0.0
        now = time.monotonic()
        if now - self._tree_at > _TREE_REFRESH_S or not self._tree:
            self._tree = process_tree(self._proc.pid)
            if not self._tree:
                return 0.0
            self._tree_at = now
        return tree_private_mb(self._tree)

    def over_memory(self) -> bool:
        return bool(self.memory_mb) and self.memory_mb_now() > self.memory_mb  # type: ignore[operator]

    def request(self, payload: Mapping[str, Any], timeout: float) -> Exchange:
        """Send one request and wait for its reply, at most `timeout` seconds."""
        if not self.alive:
            self.start()
        assert self._proc is not None and self._proc.stdin and self._proc.stdout
        start = time.perf_counter()
        deadline = start + timeout
        self.last_used = time.monotonic()
        self._reader.noise.clear()
        if (failed := self._write(encode_request(payload), deadline, start)) is not None:
            return failed
        out = self._proc.stdout.fileno()
        while True:
            reply = self._reader.pop()
            if reply is not None:
                return Exchange(CheckStatus.ok, reply, time.perf_counter() - start)
            now = time.perf_counter()
            if now >= deadline:
                return self._cut(CheckStatus.timeout, start, f"no reply within {timeout:g} s")
            wait = deadline - now
            if self.memory_mb:
                wait = min(wait, self.poll_interval)
            ready, _, _ = select.select([out], [], [], wait)
            if ready:
                data = os.read(out, 1 << 16)
                if not data:
                    return self._died(start)
                self._reader.feed(data)
            elif self.over_memory():
                return self._cut(
                    CheckStatus.out_of_memory, start, f"resident memory over {self.memory_mb} MiB"
                )

    def _write(self, data: bytes, deadline: float, start: float) -> Exchange | None:
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                written = 0
            except (BrokenPipeError, OSError):
                return self._died(start)
            view = view[written:]
            if view:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    return self._cut(CheckStatus.timeout, start, "the REPL did not read its input")
                select.select([], [fd], [], remaining)
        return None

    def _cut(self, status: CheckStatus, start: float, why: str) -> Exchange:
        self.stop()
        return Exchange(status, None, time.perf_counter() - start, why)

    def _died(self, start: float) -> Exchange:
        """The process closed its output: read why, then forget it."""
        proc = self._proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=2)
        err = self._stderr_tail()
        noise = "".join(self._reader.noise)[-1000:]
        elapsed = time.perf_counter() - start
        self.stop()
        text = "\n".join(t for t in (err, noise) if t.strip())
        status = CheckStatus.crash
        if any(word in text.lower() for word in OOM_WORDS):
            status = CheckStatus.out_of_memory
        detail = f"the REPL exited (code {code})" + (f": {text.strip()}" if text.strip() else "")
        return Exchange(status, None, elapsed, detail)

    def _stderr_tail(self, limit: int = 2000) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
