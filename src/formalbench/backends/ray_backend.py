"""Run a backend's checks on a Ray cluster (`--executor ray`).

Ray is the existing engine for spreading work over machines; nothing here schedules by hand.
Each Ray actor owns one backend instance (so a Lean REPL stays warm inside it) and serves one
check at a time. `RayBackend.check` hands each request to an idle actor, and waits for one
when all are busy: a slow check holds only its own actor, never the checks queued behind it
(handing requests out in turn, as this module once did, queued a request on a busy actor
while another stood idle). The idle actors sit in a thread-safe queue rather than in
`ray.util.ActorPool`, because the callers are threads (check_many, the evaluation's
workers) that each wait for their own result, and ActorPool's `get_next` is neither
thread-safe nor tied to a caller.
The same code runs on a laptop (a local Ray started on demand) and on a cluster (`address`).

A backend that cannot start on a worker (no Lean toolchain there, a bad option) would kill
its actor, and Ray would report that as its own error with the cause's traceback in the
text, at the first check. So each actor keeps such an error instead of dying, and the
constructor asks every actor once (`ping`) and raises the first one it gets back: the user
sees the same one-line error, with the same exit code, as without Ray, before a run starts.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from formalbench.backends.base import Backend
from formalbench.core.errors import BackendError, FormalbenchError, InputError
from formalbench.core.records import CheckResult, CheckStatus, Language


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError(
            "--executor ray needs Ray: install it with `pip install 'formalbench[ray]'`"
        ) from exc
    return ray


class RayWorkerError(BackendError):
    """Ray could not run a call on a worker (it died, or Ray itself failed)."""


def init_ray(address: str | None, num_cpus: int) -> None:
    """Join the cluster at `address`, or start a local Ray with `num_cpus` (once per process)."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
        )


def ray_get(fetch: Callable[[], Any], what: str) -> Any:
    """`fetch()` (a `ray.get`), with Ray's errors turned into this project's errors: the
    FormalbenchError raised on the worker when there is one, else a RayWorkerError."""
    ray = _ray()
    try:
        return fetch()
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, FormalbenchError):
            raise cause from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RayWorkerError(f"a Ray worker of {what} failed: {first}") from None


T = TypeVar("T")


class RayTasks:
    """Module-level functions run as Ray tasks of one CPU each, for work that is not a
    backend check (e.g. `ape mine --validate`, whose compiles need per-project flags).

    As with `RayBackend`, the callers are threads that each wait for their own result; Ray
    schedules the tasks on whichever worker is free. Arguments and results are pickled, so
    paths in them must be visible to the workers (always so on a local Ray)."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        init_ray(address, max(1, workers))
        self._remote: dict[Callable[..., Any], Any] = {}

    def run(self, func: Callable[..., T], *args: Any) -> T:
        ray = _ray()
        remote = self._remote.get(func)
        if remote is None:
            remote = self._remote[func] = ray.remote(num_cpus=1)(func)
        result: T = ray_get(lambda: ray.get(remote.remote(*args)), func.__name__)
        return result


class _CheckWorker:
    """The body of one Ray actor: a backend built on the worker from its name and options."""

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        from formalbench.backends.registry import make_backend

        self.error: FormalbenchError | None = None
        try:
            self.backend = make_backend(name, **{**options, "workers": 1})
        except FormalbenchError as exc:  # kept for `ping`: the actor stays alive to say why
            self.error = exc

    def ping(self) -> FormalbenchError | None:
        """The error that kept this worker's backend from starting, or None."""
        return self.error

    def preflight(self, timeout: float) -> None:
        self.backend.preflight(timeout)

    def check(self, source: str, targets: list[str], timeout: float | None) -> CheckResult:
        return self.backend.check(source, targets=targets, timeout=timeout)

    def version(self) -> str:
        return self.backend.version()


class RayBackend(Backend):
    """A backend whose checks run as Ray actor calls; `workers` actors are started."""

    def __init__(
        self,
        name: str,
        options: dict[str, Any] | None = None,
        *,
        language: Language,
        workers: int | None = None,
        address: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(workers=workers, timeout=timeout)
        ray = _ray()
        init_ray(address, self.workers)
        self.name = f"ray:{name}"
        self.language = language
        actor = ray.remote(num_cpus=1)(_CheckWorker)
        self._actors = [actor.remote(name, dict(options or {})) for _ in range(self.workers)]
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for handle in self._actors:
            self._idle.put(handle)
        self._version: str | None = None
        try:
            errors = self._call(lambda: ray.get([a.ping.remote() for a in self._actors]))
            failed = next((e for e in errors if e is not None), None)
            if failed is not None:
                raise failed
        except BaseException:
            self.close()
            raise

    def _call(self, fetch: Any) -> Any:
        """`fetch()` (a `ray.get`), with Ray's errors turned into this project's errors."""
        return ray_get(fetch, f"backend {self.name}")

    def preflight(self, timeout: float = 10.0) -> None:
        """The backend's own preflight, run on one worker (where the checks will run)."""
        if self._actors:
            self._call(lambda: _ray().get(self._actors[0].preflight.remote(timeout)))

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        actor = self._idle.get()  # an idle actor; blocks while every actor is busy
        if actor is None:  # closed: pass the mark on to the next waiting caller
            self._idle.put(None)
            raise RayWorkerError(f"backend {self.name} is closed")
        try:
            return self._call(
                lambda: _ray().get(actor.check.remote(source, list(targets), timeout))
            )
        except RayWorkerError as exc:  # the worker died under this check: a result, not a stop
            return CheckResult(backend=self.name, status=CheckStatus.crash, detail=str(exc))
        finally:
            self._idle.put(actor)

    def version(self) -> str:
        if self._version is None:
            self._version = self._call(lambda: _ray().get(self._actors[0].version.remote()))
        return self._version

    def close(self) -> None:
        super().close()
        ray = _ray()
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        self._idle.put(None)  # wakes a caller still waiting for an actor
