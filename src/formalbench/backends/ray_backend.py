"""Run a backend's checks on a Ray cluster (`--executor ray`).

Ray is the existing engine for spreading work over machines; nothing here schedules by hand.
Each Ray actor owns one backend instance (so a Lean REPL stays warm inside it) and serves one
check at a time; `RayBackend.check` hands requests to the actors in turn, and Ray queues them.
The same code runs on a laptop (a local Ray started on demand) and on a cluster (`address`).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

from formalbench.backends.base import Backend
from formalbench.core.errors import InputError
from formalbench.core.records import CheckResult, Language


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError(
            "--executor ray needs Ray: install it with `pip install 'formalbench[ray]'`"
        ) from exc
    return ray


class _CheckWorker:
    """The body of one Ray actor: a backend built on the worker from its name and options."""

    def __init__(self, name: str, options: dict[str, Any]) -> None:
        from formalbench.backends.registry import make_backend

        self.backend = make_backend(name, **{**options, "workers": 1})

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
        if not ray.is_initialized():
            ray.init(
                address=address,
                num_cpus=None if address else self.workers,
                include_dashboard=False,
                log_to_driver=False,
                ignore_reinit_error=True,
            )
        self.name = f"ray:{name}"
        self.language = language
        actor = ray.remote(num_cpus=1)(_CheckWorker)
        self._actors = [actor.remote(name, dict(options or {})) for _ in range(self.workers)]
        self._turn = itertools.cycle(range(len(self._actors)))
        self._lock = threading.Lock()
        self._version: str | None = None

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        with self._lock:
            actor = self._actors[next(self._turn)]
        ray = _ray()
        return ray.get(actor.check.remote(source, list(targets), timeout))

    def version(self) -> str:
        if self._version is None:
            self._version = _ray().get(self._actors[0].version.remote())
        return self._version

    def close(self) -> None:
        super().close()
        ray = _ray()
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
