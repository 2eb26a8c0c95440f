"""A small async client for `formalbench serve` (and for any server speaking Kimina's `/verify`).

It sends items in batches (`batch_size` a request, `concurrency` requests at once), keeps
answers in the order of the items, and waits and retries when the service says it is busy
(429, honouring `Retry-After`; also 502/503/504 and a refused connection, with exponential
backoff) up to `retries` times, then raises `ServiceBusy`. Any other HTTP error is raised at
once (`ServiceError`): a wrong key or a malformed request would fail every retry too.

The address is `url`, else FORMALBENCH_SERVE_URL, else LEAN_SERVER_API_URL (the variable
Kimina's own client reads), else http://127.0.0.1:8000; the key likewise from
FORMALBENCH_SERVE_API_KEY or LEAN_SERVER_API_KEY, sent as `Authorization: Bearer KEY`.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Sequence
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8000"
_RETRY_STATUS = frozenset({429, 502, 503, 504})


class ServiceError(RuntimeError):
    """The service answered an error that a retry would not cure (or could not be read)."""


class ServiceBusy(ServiceError):
    """Still busy (or unreachable) after every retry."""


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


class VerifierClient:
    """Async client: `await client.verify(items)`; use as `async with VerifierClient() as c`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        batch_size: int = 8,
        concurrency: int = 4,
        retries: int = 8,
        timeout: float = 300.0,
        max_wait: float = 30.0,
    ) -> None:
        self.url = url or _env("FORMALBENCH_SERVE_URL", "LEAN_SERVER_API_URL") or DEFAULT_URL
        self.url = self.url.rstrip("/")
        key = api_key or _env("FORMALBENCH_SERVE_API_KEY", "LEAN_SERVER_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.batch_size = max(1, batch_size)
        self.retries = max(0, retries)
        self.timeout = timeout
        self.max_wait = max_wait
        self._gate = asyncio.Semaphore(max(1, concurrency))
        # the HTTP wait covers the service's own limits: the item timeout, several times
        self._http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(4 * timeout + 60))
        self.retried = 0  # how many times a request was sent again (busy, unreachable)

    async def __aenter__(self) -> VerifierClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def register(self, original: str) -> str:
        """Register a task's text once; its `task_id` names it in later items."""
        answer = await self._post("/tasks", {"original": original})
        return str(answer["task_id"])

    async def verify(
        self, items: Sequence[dict[str, Any]], *, disable_cache: bool = False
    ) -> list[dict[str, Any]]:
        """Answers to `items` (`{"custom_id", "proof", "original" | "task_id"}`), in order."""
        batches = [
            list(items[i : i + self.batch_size]) for i in range(0, len(items), self.batch_size)
        ]
        answers = await asyncio.gather(*(self._batch(b, disable_cache) for b in batches))
        return [result for batch in answers for result in batch]

    async def verify_one(
        self, proof: str, *, original: str | None = None, task_id: str | None = None
    ) -> dict[str, Any]:
        item: dict[str, Any] = {"custom_id": "0", "proof": proof}
        if original is not None:
            item["original"] = original
        if task_id is not None:
            item["task_id"] = task_id
        return (await self.verify([item]))[0]

    async def _batch(
        self, items: list[dict[str, Any]], disable_cache: bool
    ) -> list[dict[str, Any]]:
        body = {"codes": items, "timeout": self.timeout, "disable_cache": disable_cache}
        async with self._gate:
            answer = await self._post("/verify", body)
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or len(results) != len(items):
            raise ServiceError(
                f"{self.url}/verify: answered {len(results or [])} results for {len(items)} items"
            )
        return results

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        delay = 0.5
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = await self._http.post(self.url + path, json=body)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                if last:
                    raise ServiceBusy(f"{self.url}{path}: unreachable ({exc})") from None
                await self._sleep(delay)
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise ServiceError(f"{self.url}{path}: not JSON") from None
                if response.status_code not in _RETRY_STATUS:
                    raise ServiceError(
                        f"{self.url}{path}: {response.status_code} {response.text[:300]}"
                    )
                if last:
                    raise ServiceBusy(
                        f"{self.url}{path}: still {response.status_code} after {self.retries} retries"
                    )
                wait = response.headers.get("retry-after", "")
                await self._sleep(float(wait) if wait.isdigit() else delay)
            delay = min(delay * 2, self.max_wait)
            self.retried += 1
        raise AssertionError("unreachable")

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(min(seconds, self.max_wait) * (1 + random.random() / 4))
