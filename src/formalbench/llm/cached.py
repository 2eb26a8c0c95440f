"""Serve repeated requests from the response cache instead of calling the model again.

A hit comes back with `cached=True` and the usage recorded when it was first paid for, so a
run can still report what its answers cost while counting cached tokens apart (see
`llm.budget.UsageMeter`). Identical requests in flight at the same time are coalesced: the
second waits for the first instead of paying twice. Failures are never cached.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from formalbench.llm.base import ChatModel, Completion, Message, ModelWrapper
from formalbench.store.response_cache import ResponseCache, canonical_request, request_key

log = logging.getLogger("formalbench.llm")


def request_of(
    spec: str | None,
    messages: Sequence[Message],
    **params: Any,
) -> tuple[str, dict[str, Any]]:
    """The cache key and canonical request of a `generate` call (spec None: spec-free form)."""
    request = canonical_request(spec, [m.model_dump() for m in messages], **params)
    return request_key(request), request


class CachedModel(ModelWrapper):
    """`inner` behind a `ResponseCache`; safe to share between the tasks of one event loop."""

    def __init__(self, inner: ChatModel, cache: ResponseCache) -> None:
        super().__init__(inner)
        self.cache = cache
        self.hits = 0
        self.misses = 0
        # keyed by loop too: a future belongs to its loop, and threads may each run their own
        self._in_flight: dict[tuple[object, str], asyncio.Future[list[Completion]]] = {}

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> list[Completion]:
        params: dict[str, Any] = dict(
            n=n, temperature=temperature, max_tokens=max_tokens, stop=stop, seed=seed
        )
        if response_schema is not None:
            params["response_schema"] = response_schema
        key, request = request_of(self.spec, messages, **params)
        stored = await asyncio.to_thread(self.cache.get, key)
        if stored is not None:
            try:
                hit = [Completion.model_validate({**c, "cached": True}) for c in stored]
            except ValidationError as exc:  # written by an incompatible version: call again
                log.warning("response cache entry %s unreadable, ignored: %s", key[:12], exc)
            else:
                self.hits += 1
                return hit
        slot = (asyncio.get_running_loop(), key)
        while (pending := self._in_flight.get(slot)) is not None:
            try:
                shared = await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and task is not None and not task.cancelling():
                    continue  # the first caller was cancelled, not us: make the call ourselves
                raise
            self.hits += 1
            return [c.model_copy(update={"cached": True}) for c in shared]
        self.misses += 1
        future: asyncio.Future[list[Completion]] = asyncio.get_running_loop().create_future()
        self._in_flight[slot] = future
        try:
            fresh = await self.inner.generate(messages, **params)
            rows = [c.model_dump(mode="json", exclude={"cached"}) for c in fresh]
            await asyncio.to_thread(self.cache.put, key, request, rows)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # mark retrieved: nobody may be waiting
            raise
        else:
            future.set_result(fresh)
            return fresh
        finally:
            self._in_flight.pop(slot, None)
