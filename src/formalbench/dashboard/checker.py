"""Re-checking a reviewer's edited text with the run's own proof assistant.

The backend is made on the first re-check (a reviewer who only reads pages never starts a
proof assistant) and kept for the server's lifetime. Results are remembered by the hash of
the text, so that an accept right after a re-check can store what the assistant said of the
exact text accepted. A missing toolchain is shown on the page, never raised.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from formalbench.backends.base import Backend
from formalbench.backends.registry import make_backend
from formalbench.core.errors import FormalbenchError
from formalbench.core.records import CheckResult

_REMEMBERED = 512


@dataclass
class Recheck:
    """One re-check as the page shows it: the result, or why there is none."""

    result: CheckResult | None
    version: str = ""
    error: str | None = None

    @property
    def compiled(self) -> bool:
        return self.result is not None and self.result.compiled

    def record(self) -> dict[str, Any]:
        """The short form stored with a decision (the export's `recheck`)."""
        result = self.result
        return {
            "backend": self.version,
            "compiled": self.compiled,
            "status": result.status.value if result else None,
            "errors": len(result.errors) if result else None,
            "holes": len(result.holes) if result else None,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


class Rechecker:
    """Runs the configured backend on edited texts; one backend for all requests.

    `backend` (a name) and `timeout` come from the run's settings; `options` (programs,
    flags, project folders) only from the reviewer (issue 29 item 1: a run folder is data)."""

    def __init__(
        self, backend: str | None, options: dict[str, Any], timeout: float | None = None
    ) -> None:
        self.backend_name = backend
        self.options = options
        self.timeout = timeout
        self._backend: Backend | None = None
        self._version = ""
        self._lock = threading.Lock()
        self._known: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def _get(self) -> tuple[Backend, str]:
        with self._lock:
            if self._backend is None:
                if self.backend_name is None:
                    raise FormalbenchError(
                        "the run names no backend and has no candidates to tell the language"
                    )
                backend = make_backend(self.backend_name, **self.options)
                self._version = backend.version()
                self._backend = backend
            return self._backend, self._version

    async def check(self, code: str) -> Recheck:
        """Check `code` as a whole file; a missing or broken toolchain becomes `error`."""
        try:
            backend, version = await asyncio.to_thread(self._get)
            result = await backend.acheck(code, timeout=self.timeout)
        except FormalbenchError as exc:
            return Recheck(None, error=str(exc))
        done = Recheck(result, version)
        with self._lock:
            self._known[_key(code)] = done.record()
            self._known.move_to_end(_key(code))
            while len(self._known) > _REMEMBERED:
                self._known.popitem(last=False)
        return done

    def known(self, code: str) -> dict[str, Any] | None:
        """The stored form of the last re-check of exactly this text, if there was one."""
        with self._lock:
            return self._known.get(_key(code))

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                self._backend.close()
                self._backend = None


def _key(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()
