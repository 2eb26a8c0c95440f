"""The one protocol every proof assistant is used through.

A backend checks a whole source file (header included) and reports diagnostics, the holes
the assistant saw, and (Lean) the axioms each named target depends on. It never raises for a
problem of the checked text or of the assistant process: a timeout, an out-of-memory kill or
a crash comes back as a `CheckResult` with that status, so a long run goes on.

Backends are safe to call from several threads; `workers` bounds how many checks run at
once (`check_many`, `acheck`).

The gate (`core/gate.py`) runs before every check: every `check`, `check_many` and
`acheck` that a subclass defines is wrapped when the class is created (`__init_subclass__`),
so a text with a file, process or I/O command comes back `refused` without any assistant
process being started, whichever pipeline, solver, dashboard or test called the backend and
however a subclass is written. The gate lives in `core` (it does no I/O), below this layer, so
the checking layer above and this module import the same gate.
"""

from __future__ import annotations

import functools
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import Field

from formalbench.core.errors import BackendError
from formalbench.core.gate import refusal
from formalbench.core.records import (
    CheckResult,
    Diagnostic,
    Finding,
    Hole,
    Language,
    Record,
    ToolchainInfo,
    Verdict,
)

T = TypeVar("T")


class WorkerLost(BackendError):
    """The process that held the assistant died under a call (e.g. a Ray actor): the call
    has no answer, which a verdict records as a crash of the backend, not of the text."""


class CheckRequest(Record):
    source: str
    targets: list[str] = Field(default_factory=list)
    timeout: float | None = None


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


_passed = threading.local()  # the source this thread's gated check is running (one gate a check)


def gate(backend: Backend, source: object) -> CheckResult | None:
    """The refusal for `source` on `backend`, or None when it may run (see core/gate.py)."""
    if not isinstance(source, str):
        return None  # the backend itself refuses what is not text, with its own error
    return refusal(source, backend.language, backend.name)


def _gated_check(check):  # noqa: ANN001, ANN202 - wraps any subclass's `check`
    @functools.wraps(check)
    def gated(self: Backend, source: str, *args: object, **kwargs: object) -> CheckResult:
        if getattr(_passed, "source", None) is source:  # a subclass calling super().check
            return check(self, source, *args, **kwargs)
        refused = gate(self, source)
        if refused is not None:
            return refused
        _passed.source = source
        try:
            return check(self, source, *args, **kwargs)
        finally:
            _passed.source = None

    gated.__gated__ = True  # type: ignore[attr-defined]
    return gated


def _gated_acheck(acheck):  # noqa: ANN001, ANN202
    @functools.wraps(acheck)
    async def gated(self: Backend, source: str, *args: object, **kwargs: object) -> CheckResult:
        refused = gate(self, source)
        return refused if refused is not None else await acheck(self, source, *args, **kwargs)

    gated.__gated__ = True  # type: ignore[attr-defined]
    return gated


def _gated_many(check_many):  # noqa: ANN001, ANN202
    @functools.wraps(check_many)
    def gated(self: Backend, requests: Sequence[CheckRequest]) -> Iterator[CheckResult]:
        requests = list(requests)
        refused = {i: r for i, q in enumerate(requests) if (r := gate(self, q.source)) is not None}
        allowed = [q for i, q in enumerate(requests) if i not in refused]
        results = iter(check_many(self, allowed)) if allowed else iter(())
        for i in range(len(requests)):
            yield refused[i] if i in refused else next(results)

    gated.__gated__ = True  # type: ignore[attr-defined]
    return gated


_WRAPPERS = {"check": _gated_check, "acheck": _gated_acheck, "check_many": _gated_many}


def build_thread_records() -> None:
    """Build, in the calling thread, the validators of the records checks make in the pool.

    Records defer their build to first use (`defer_build`: fast start-up), and pydantic
    builds a deferred validator without a lock: two pool threads making the first
    `CheckResult` at once leave it broken for the rest of the process (`validate_assignment
    is not supported for CheckResult`). Built once here, before any thread can race.
    """
    for record in (CheckResult, Diagnostic, Hole, Finding, Verdict):
        if not record.__pydantic_complete__:
            record.model_rebuild(force=True)


class Backend(ABC):
    """A proof assistant. Subclasses implement `check`; pooling comes from here."""

    name: str = "backend"
    language: Language

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Put the gate in front of each entry point this subclass defines (module doc)."""
        super().__init_subclass__(**kwargs)
        for name, wrap in _WRAPPERS.items():
            own = cls.__dict__.get(name)
            if own is not None and not getattr(own, "__gated__", False):
                setattr(cls, name, wrap(own))

    def __init__(self, *, workers: int | None = None, timeout: float = 60.0) -> None:
        self.workers = workers or default_workers()
        self.timeout = timeout
        self._executor: ThreadPoolExecutor | None = None
        self._active = 0  # `acheck` calls under way (running or waiting for a slot)

    @abstractmethod
    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        """Check one complete source file; report axioms for each name in `targets` (Lean;
        the Coq backend refuses `targets`: Coq axioms are read from the kernel dump of the
        verifier's own compile, `checking/coq_kernel`)."""

    @abstractmethod
    def version(self) -> str:
        """A string naming the assistant and library versions (part of every cache key)."""

    def toolchain_info(self) -> ToolchainInfo | None:
        """The toolchain a verdict of this backend records (None: the backend names none)."""
        return None

    def on_assistant(self, work: Callable[..., T], *args: Any) -> T:
        """`work(assistant, *args)` in the process where this backend's proof assistant
        runs, `assistant` being the backend object there: this backend itself here; for a
        backend that runs its checks elsewhere (`ray_backend.RayBackend`), the backend that a
        worker owns, on that worker. A check that needs several runs of the assistant and
        the files they leave behind (Coq's kernel route, `checking/coq_kernel.py`) runs
        as one such call, so its files stay on one machine. `work` must be a module-level
        function (it is sent by reference) and its arguments and result picklable."""
        return work(self, *args)

    def preflight(self, timeout: float = 10.0) -> None:
        """Raise one clear error now if this backend cannot check anything (before a run).

        A local assistant is found when it is constructed, so the default does nothing; a
        remote one (a verification server) checks that it can be reached, so a run does not
        record every attempt as a crash of an address that never answered.
        """
        return None

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            build_thread_records()
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
        self._active += 1
        try:
            return await loop.run_in_executor(
                self._pool(), lambda: self.check(source, targets=targets, timeout=timeout)
            )
        finally:
            self._active -= 1

    def spare_slots(self) -> int:
        """Slots of the pool that no `acheck` holds or waits for right now: room for a
        speculative check (the portfolio's extra probe chunks) that delays nobody."""
        return max(0, self.workers - self._active)

    async def acheck_abandonable(
        self, source: str, abandon: threading.Event, *, timeout: float | None = None
    ) -> CheckResult | None:
        """`acheck` whose assistant process is killed once `abandon` is set; None when it
        was abandoned (its answer is then of no use)."""
        import asyncio

        from formalbench.backends.sandbox import abandon_on

        def run() -> CheckResult | None:
            if abandon.is_set():
                return None
            with abandon_on(abandon):
                result = self.check(source, timeout=timeout)
            return None if abandon.is_set() else result

        loop = asyncio.get_running_loop()
        self._active += 1
        try:
            return await loop.run_in_executor(self._pool(), run)
        finally:
            self._active -= 1

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
