"""Concurrency limits shared by every model that talks to the same endpoint.

Two models pointed at one vLLM server (say a prover and a judge) must share its request slots,
so the semaphore is keyed by the endpoint (`provider|base_url`), not by the model object.
asyncio semaphores belong to the event loop they first wait in, and a program may call
`asyncio.run` more than once (a preflight, then the run), so there is one table per loop,
dropped with the loop. The first model to ask for an endpoint's semaphore sets its size.
"""

from __future__ import annotations

import asyncio
import threading
import weakref

_tables: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)
_guard = threading.Lock()


def endpoint_semaphore(key: str, limit: int) -> asyncio.Semaphore:
    """The semaphore of endpoint `key` in the running loop, created with `limit` slots."""
    if limit < 1:
        raise ValueError(f"concurrency limit must be at least 1, got {limit}")
    loop = asyncio.get_running_loop()
    with _guard:
        table = _tables.setdefault(loop, {})
        sem = table.get(key)
        if sem is None:
            sem = table[key] = asyncio.Semaphore(limit)
    return sem
