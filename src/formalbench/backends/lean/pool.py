"""A bounded pool of REPL processes, leased one check at a time and keyed by header.

At most `workers` processes exist; they start lazily (on their first request). A lease goes,
in this order of preference, to an idle process that already holds the header's environment,
to a new process while there is room, or to the idle process used least recently (which then
elaborates the new header beside the ones it holds). On return a process that has served
`max_uses` checks, or whose private resident memory is past the ceiling, is stopped; a
process that timed out or died was already stopped. A stopped process restarts on its next
lease, so the pool keeps serving whatever happened to the last check. Every process works in
a throw-away folder of its own (see `process`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from formalbench.backends.lean.process import ReplProcess


class ReplPool:
    """Processes running `argv` with `env`; see the module docstring for the lease policy."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        workers: int,
        memory_mb: int | None = None,
        max_uses: int = 500,
        env: Mapping[str, str] | None = None,
        poll_interval: float = 0.05,
    ) -> None:
        self.argv = list(argv)
        self.workers = max(1, workers)
        self.memory_mb = memory_mb
        self.max_uses = max(1, max_uses)
        self.env = env
        self.poll_interval = poll_interval
        self.stops: Counter[str] = Counter()  # why processes were stopped on return
        self._procs: list[ReplProcess] = []
        self._busy: set[int] = set()
        self._cond = threading.Condition()
        self._closed = False

    def _pick(self, header_key: str) -> ReplProcess | None:
        idle = [p for p in self._procs if id(p) not in self._busy]
        for proc in idle:
            if header_key in proc.headers and proc.alive:
                return proc
        if len(self._procs) < self.workers:
            proc = ReplProcess(
                self.argv,
                memory_mb=self.memory_mb,
                env=self.env,
                poll_interval=self.poll_interval,
            )
            self._procs.append(proc)
            return proc
        if idle:
            return min(idle, key=lambda p: (p.alive, p.last_used))
        return None

    @contextmanager
    def lease(self, header_key: str) -> Iterator[ReplProcess]:
        """A process for one check, returned to the pool (with its restart policy) afterwards."""
        with self._cond:
            self._closed = False
            while (proc := self._pick(header_key)) is None:
                self._cond.wait()
            self._busy.add(id(proc))
        try:
            yield proc
        finally:
            self._give_back(proc)

    def _give_back(self, proc: ReplProcess) -> None:
        if proc.alive:
            if proc.uses >= self.max_uses:
                proc.stop()
                self.stops["max_uses"] += 1
            elif self.memory_mb and proc.over_memory():
                proc.stop()
                self.stops["memory"] += 1
        with self._cond:
            self._busy.discard(id(proc))
            if self._closed:
                proc.stop()
            self._cond.notify()

    def stats(self) -> dict[str, int]:
        """Figures for tests and benches: processes, starts, and stops by reason."""
        with self._cond:
            procs = list(self._procs)
        return {
            "processes": len(procs),
            "alive": sum(p.alive for p in procs),
            "starts": sum(p.starts for p in procs),
            **{f"stopped_{k}": v for k, v in self.stops.items()},
        }

    def close(self) -> None:
        """Stop every idle process now; a leased one is stopped when it comes back."""
        with self._cond:
            self._closed = True
            idle = [p for p in self._procs if id(p) not in self._busy]
        for proc in idle:
            proc.stop()
