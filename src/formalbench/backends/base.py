"""The one protocol every proof assistant is used through.

A backend checks a whole source file (header included) and reports diagnostics, the holes
the assistant saw, and the axioms each named target depends on. It never raises for a
problem of the checked text or of the assistant process: a timeout, an out-of-memory kill or
a crash comes back as a `CheckResult` with that status, so a long run goes on.

Backends are safe to call from several threads; `workers` bounds how many checks run at
once (`check_many`, `acheck`).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import Field

from formalbench.core.records import CheckResult, Language, Record


class CheckRequest(Record):
    source: str
    targets: list[str] = Field(default_factory=list)
    timeout: float | None = None


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


class Backend(ABC):
    """A proof assistant. Subclasses implement `check`; pooling comes from here."""

    name: str = "backend"
    language: Language

    def __init__(self, *, workers: int | None = None, timeout: float = 60.0) -> None:
        self.workers = workers or default_workers()
        self.timeout = timeout
        self._executor: ThreadPoolExecutor | None = None

    @abstractmethod
    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        """Check one complete source file; report axioms for each name in `targets`."""

    @abstractmethod
    def version(self) -> str:
        """A string naming the assistant and library versions (part of every cache key)."""

    def preflight(self, timeout: float = 10.0) -> None:
        """Raise one clear error now if this backend cannot check anything (before a run).

        A local assistant is found when it is constructed, so the default does nothing; a
        remote one (a verification server) checks that it can be reached, so a run does not
        record every attempt as a crash of an address that never answered.
        """
        return None

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self.workers, thread_name_prefix=f"{self.name}-check"
            )
        return self._executor

    def check_many(self, requests: Sequence[CheckRequest]) -> Iterator[CheckResult]:
        """Check requests on `workers` at once; results come back in request order."""
        futures = [
            self._pool().submit(self.check, r.source, targets=r.targets, timeout=r.timeout)
            for r in requests
        ]
        for future in futures:
            yield future.result()

    async def acheck(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        """`check` for asyncio code: runs on the bounded pool, so model calls go on meanwhile."""
        import asyncio  # here, not at the top: `check --static-only` never loads asyncio

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool(), lambda: self.check(source, targets=targets, timeout=timeout)
        )

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
