"""Retries with exponential backoff and jitter, a per-call timeout and an endpoint semaphore.

The providers turn their SDK's own retries off (`max_retries=0`) and use this loop instead, so
there is exactly one retry layer and it can (a) honour `Retry-After` / `retry-after-ms` exactly,
(b) hold the endpoint's concurrency slot only while a request is in flight, never while backing
off, and (c) say in one error what went wrong and how many attempts were made.

Retried: rate limits (429), 408, 409, 5xx, timeouts, connection errors. Not retried: every other
4xx (400 bad request, 401 bad key, 403, 404 unknown model, 422): those fail at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from formalbench.llm.base import ModelCallError

log = logging.getLogger("formalbench.llm")
T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait. Delays are "full jitter": uniform in [0, cap]."""

    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 300.0  # a server asking for longer than this is capped

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        cap = min(self.max_delay, self.base_delay * (2**retry))
        return random.uniform(0.0, cap)


@dataclass(frozen=True)
class CallFailure:
    """What a failed request means for the retry loop."""

    retryable: bool
    description: str
    retry_after: float | None = None


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms`, `retry-after` (seconds or an HTTP date), else None."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return float(lowered["retry-after-ms"]) / 1000.0
        value = lowered.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def classify_sdk_error(exc: BaseException, sdk: ModuleType) -> CallFailure | None:
    """Map an exception of a Stainless-generated SDK (openai, anthropic) to a CallFailure.

    Returns None for exceptions that are not about the call (programming errors propagate).
    """
    if isinstance(exc, TimeoutError | sdk.APITimeoutError):
        return CallFailure(True, "no reply before the per-call timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {cause}" if cause else ""
        return CallFailure(True, f"connection failed{detail}")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        retryable = status in RETRYABLE_STATUS or status >= 500
        headers = getattr(exc.response, "headers", None)
        retry_after = parse_retry_after(headers) if retryable else None
        return CallFailure(retryable, f"HTTP {status}: {exc.message}", retry_after)
    if isinstance(exc, sdk.APIError):  # e.g. a 200 whose body is not the API's JSON
        return CallFailure(False, f"unusable reply: {exc}")
    return None


async def call_with_retries(
    request: Callable[[], Awaitable[T]],
    *,
    label: str,
    classify: Callable[[BaseException], CallFailure | None],
    policy: RetryPolicy,
    semaphore: asyncio.Semaphore,
    timeout: float | None,
    redact: Callable[[str], str] = lambda s: s,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """Run `request` until it succeeds, fails for good, or the retries are spent.

    Raises ModelCallError naming `label` and the last failure, with secrets `redact`ed.
    """
    attempts = policy.max_retries + 1
    for attempt in range(attempts):
        try:
            async with semaphore, asyncio.timeout(timeout):
                return await request()
        except Exception as exc:
            if isinstance(exc, TimeoutError) and timeout is not None:
                failure: CallFailure | None = CallFailure(True, f"no reply within {timeout:g}s")
            else:
                failure = classify(exc)
            if failure is None:
                raise
            description = redact(failure.description)
            if not failure.retryable:
                raise ModelCallError(f"{label}: {description} (not retried)") from None
            if attempt + 1 == attempts:
                raise ModelCallError(
                    f"{label}: gave up after {attempts} attempt(s); last error: {description}"
                ) from None
            wait = policy.delay(attempt, failure.retry_after)
            log.warning(
                "%s: %s; retry %d/%d in %.2fs",
                label,
                description,
                attempt + 1,
                policy.max_retries,
                wait,
            )
            await sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
