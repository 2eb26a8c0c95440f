"""The service's checking side: one backend, the strict verifier the CLI uses, and the threads.

An item with a task (`original`, or a registered `task_id`) is decided by
`StrictVerifier.verify`, the very call `formalbench check --json` makes, with the same
policy defaults (the kernel route for Coq, its warm coqtop sessions for the dumps, the coqchk
replay; for Lean the REPL pool and Lean's own statement and axiom queries), and answered
with the same JSON object. An item without a task is compiled only (`Backend.check`, behind
the same gate, in the same sandbox) and answered in Kimina's shape (Lean's positions counted
as Kimina counts them, `answers.body_lines`).

The verdict cache is the verifier's own (`store/verdict_cache.py`: keyed by the backend's
version, which names the toolchain, the rules, the task text and the candidate text); a
request with `disable_cache` (or Kimina's `reuse: false`) is decided by a twin verifier
without the cache, which neither reads nor writes it. Both share the backend, so the task
builds and warm sessions of the kernel route (`verifier.kernel_of`) are shared too.

Identical items in flight at the same time (a training loop's samples often repeat a proof)
are checked once: the second waits for the first's verdict (`shared` counts them), unless it
asked for `disable_cache`.

Checks run on `workers` threads of this module (each a blocking verifier call; coqc and
coqtop are separate processes, so threads are enough). Nothing here raises to the caller: an
item that cannot be checked (no text, an unknown task, an original with no hole, an error of
the backend) is answered with an `error` line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from formalbench.backends.base import Backend, build_thread_records
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import FormalbenchError
from formalbench.core.records import Language, TaskKind, Verdict
from formalbench.service import answers
from formalbench.service.models import Item
from formalbench.store.service_tasks import TaskStore
from formalbench.store.verdict_cache import VerdictCache

log = logging.getLogger("formalbench.serve")


class Engine:
    """Answers items (blocking) and owns the threads they run on."""

    def __init__(
        self,
        backend: Backend,
        tasks: TaskStore,
        *,
        cache: VerdictCache | None,
        policy: VerifierPolicy | None = None,
        workers: int = 2,
    ) -> None:
        self.backend = backend
        self.tasks = tasks
        self.cache = cache
        language = backend.language
        self.cached = StrictVerifier(backend, policy, language=language, cache=cache)
        self.fresh = StrictVerifier(backend, policy, language=language, cache=None)
        self.workers = workers
        self.shared = 0  # items answered by an identical item's check in flight
        self._inflight: dict[str, Future[Verdict]] = {}
        self._inflight_lock = threading.Lock()
        build_thread_records()
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fb-serve")

    def answer(self, item: Item, timeout: float, use_cache: bool) -> dict[str, Any]:
        """The answer body of one item (`error`, `response`, `verdict`, `time`, `route`)."""
        t0 = time.monotonic()
        try:
            body = self._answer(item, timeout, use_cache)
        except FormalbenchError as exc:
            body = {"error": f"error: {exc}", "route": "error"}
        except Exception as exc:  # a bug must cost one item, never the service
            trace = traceback.format_exc()
            log.error(json.dumps({"event": "item_failed", "id": item.name(), "traceback": trace}))
            body = {"error": f"internal_error: {type(exc).__name__}: {exc}", "route": "error"}
        body["time"] = round(time.monotonic() - t0, 3)
        return body

    def _answer(self, item: Item, timeout: float, use_cache: bool) -> dict[str, Any]:
        candidate = item.text()
        if candidate is None:
            return {"error": "error: the item has no `proof` or `code`", "route": "error"}
        original = item.original
        if item.task_id is not None:
            original = self.tasks.get(item.task_id)
            if original is None:
                return {
                    "error": f"error: unknown task_id {item.task_id!r} (register it with "
                    "POST /tasks)",
                    "route": "error",
                }
        offset = answers.body_lines(candidate, self.backend.language)
        if original is None:
            result = self.backend.check(candidate, timeout=timeout)
            error, response = answers.compiled(result, offset)
            return {"error": error, "response": response, "route": "compile"}
        verifier = self.cached if use_cache else self.fresh
        try:
            targets = verifier.targets(original)
        except FormalbenchError as exc:
            return {"error": f"error: original: {exc}", "route": "error"}
        kind = verifier.task_kind(original)
        if use_cache:
            verdict = self._once(verifier, original, candidate, kind, timeout)
        else:
            verdict = verifier.verify(original, candidate, kind=kind, timeout=timeout)
        payload = {
            "candidate": item.name(),
            "original": item.task_id,
            "targets": targets,
            "kind": kind.value,
            **verdict.model_dump(mode="json"),
        }
        error, body = answers.strict(verdict, payload, offset)
        return {"error": error, **body, "route": "strict"}

    def _once(
        self,
        verifier: StrictVerifier,
        original: str,
        candidate: str,
        kind: TaskKind,
        timeout: float,
    ) -> Verdict:
        """`verifier.verify`, or the verdict of the identical check already running."""
        key = hashlib.sha256(f"{len(original)}:{original}{candidate}".encode()).hexdigest()
        with self._inflight_lock:
            running = self._inflight.get(key)
            if running is None:
                mine: Future[Verdict] = Future()
                self._inflight[key] = mine
            else:
                self.shared += 1
        if running is not None:
            return running.result()
        try:
            verdict = verifier.verify(original, candidate, kind=kind, timeout=timeout)
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        else:
            mine.set_result(verdict)
            return verdict
        finally:
            with self._inflight_lock:
                self._inflight.pop(key, None)

    def sessions(self) -> int:
        """Warm assistant processes held: Coq's coqtop sessions, Lean's live REPLs."""
        if self.backend.language == Language.lean:
            stats = getattr(self.backend, "pool_stats", None)
            return int(stats().get("alive", 0)) if stats is not None else 0
        from formalbench.backends import coq_session

        return coq_session.live_sessions()

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.backend.close()
        if self.cache is not None:
            self.cache.close()
        self.tasks.close()
