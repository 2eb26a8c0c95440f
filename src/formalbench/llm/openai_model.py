"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp, DeepSeek,
OpenRouter) through the official `openai` SDK.

Decisions:
- The SDK's own retries are off (`max_retries=0`); `llm.retry` retries instead (one layer only).
- One `AsyncOpenAI` client per event loop: pooled connections belong to the loop that opened
  them, and a program may run several loops one after the other. Call `aclose()` at the end
  of each loop to close its connections; a client left open is simply dropped with its loop.
- Servers that ignore `n` (some local ones return one choice) are asked again for the rest;
  each extra round gets a seed derived from the caller's, so seeded servers do not repeat.
- The endpoint reports one usage for all `n` choices. It is split over the completions so that
  their sum is exact: prompt tokens evenly, completion tokens in proportion to text length.
- A `response_schema` goes out as `response_format` of type `json_schema` (not `strict`:
  strict mode refuses schemas with optional fields, and the reply is validated anyway).
- Role `tool` is sent as `user`: this interface has no native tool calls, and OpenAI rejects a
  `tool` message without a `tool_call_id`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from formalbench.core.errors import InputError
from formalbench.core.records import TokenUsage
from formalbench.llm.base import ChatModel, Completion, Message, ModelCallError
from formalbench.llm.credentials import display_url, key_from_env, redact
from formalbench.llm.limits import endpoint_semaphore
from formalbench.llm.retry import (
    CallFailure,
    RetryPolicy,
    call_with_retries,
    classify_sdk_error,
)
from formalbench.llm.schema import schema_name

if TYPE_CHECKING:  # the SDK itself is imported when a client is built (it is slow to import)
    import openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
NO_KEY_PLACEHOLDER = "no-key"  # local servers (vLLM, Ollama) accept any key


def split_usage(prompt: int, completion: int, texts: Sequence[str]) -> list[TokenUsage]:
    """Share one request's usage over its completions; the parts sum to the whole."""
    k = len(texts)
    if k == 0:
        return []
    prompts = [prompt // k + (1 if i < prompt % k else 0) for i in range(k)]
    weights = [max(len(t), 1) for t in texts]
    total = sum(weights)
    exact = [completion * w / total for w in weights]
    parts = [int(x) for x in exact]
    by_remainder = sorted(range(k), key=lambda i: exact[i] - parts[i], reverse=True)
    for i in by_remainder[: completion - sum(parts)]:
        parts[i] += 1
    return [TokenUsage(prompt=p, completion=c) for p, c in zip(prompts, parts, strict=True)]


class OpenAIChatModel(ChatModel):
    """A model served behind `/v1/chat/completions`."""

    provider = "openai"
    takes_schema = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        concurrency: int = 8,
        retry: RetryPolicy | None = None,
        max_tokens_param: str = "max_tokens",
        check_model: bool = True,
        spec: str | None = None,
    ) -> None:
        if not model:
            raise InputError("openai model: the model name is empty")
        if timeout <= 0 or concurrency < 1:
            raise InputError(f"openai:{model}: timeout must be > 0 and concurrency >= 1")
        self.model = model
        env_url = os.environ.get("OPENAI_BASE_URL", "").strip()
        self.base_url = (base_url or env_url or DEFAULT_BASE_URL).rstrip("/")
        self.key_env = api_key_env or DEFAULT_KEY_ENV
        self._key = key_from_env(self.key_env, api_key)
        # A key is required for OpenAI itself and wherever the user named a key variable.
        self._key_required = api_key_env is not None or self.base_url == DEFAULT_BASE_URL
        self.timeout = timeout
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.max_tokens_param = max_tokens_param
        self.check_model = check_model
        shown = display_url(self.base_url)
        self.spec = spec or (f"openai:{model}@{shown}" if base_url else f"openai:{model}")
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI]
        self._clients = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"OpenAIChatModel(spec={self.spec!r}, base_url={display_url(self.base_url)!r})"

    @property
    def label(self) -> str:
        """How errors name this model: the spec, and the endpoint where the spec omits it."""
        url = display_url(self.base_url)
        return self.spec if url in self.spec else f"{self.spec} at {url}"

    def _redact(self, text: str) -> str:
        return redact(text, self._key)

    def _client(self) -> openai.AsyncOpenAI:
        import openai

        if self._key is None and self._key_required:
            raise ModelCallError(
                f"{self.label}: no API key; set the environment variable {self.key_env}"
            )
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            key = self._key.reveal() if self._key else NO_KEY_PLACEHOLDER
            client = openai.AsyncOpenAI(
                api_key=key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout + 5.0,
                # our own HTTP client: the SDK's default one schedules its close on whatever
                # loop runs when it is collected, which fails once its own loop is gone
                http_client=openai.DefaultAsyncHttpxClient(),
            )
            self._clients[loop] = client
        return client

    def _classify(self, exc: BaseException) -> CallFailure | None:
        import openai

        failure = classify_sdk_error(exc, openai)
        if isinstance(exc, openai.AuthenticationError) and failure is not None:
            failure = dataclasses.replace(
                failure, description=f"{failure.description} (check {self.key_env})"
            )
        return failure

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
        if n < 1:
            raise InputError(f"{self.spec}: n must be at least 1, got {n}")
        client = self._client()
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "user" if m.role == "tool" else m.role, "content": m.content}
                for m in messages
            ],
            "temperature": temperature,
        }
        if max_tokens is not None:
            payload[self.max_tokens_param] = max_tokens
        if stop:
            payload["stop"] = list(stop)
        if response_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name(response_schema), "schema": response_schema},
            }
        semaphore = endpoint_semaphore(f"openai|{self.base_url}", self.concurrency)
        completions: list[Completion] = []
        round_no = 0
        while len(completions) < n:
            want = n - len(completions)
            request = dict(payload, n=want)
            if seed is not None:
                request["seed"] = seed if round_no == 0 else (seed * 1_000_003 + round_no) % 2**31
            response = await call_with_retries(
                functools.partial(client.chat.completions.create, **request),
                label=self.label,
                classify=self._classify,
                policy=self.retry,
                semaphore=semaphore,
                timeout=self.timeout,
                redact=self._redact,
            )
            try:
                got = self._completions(response)
            except (AttributeError, TypeError, ValueError) as exc:
                shown = self._redact(str(response))[:200]
                raise ModelCallError(
                    f"{self.label}: the reply is not a chat completion ({exc}): {shown!r}"
                ) from None
            if not got:
                raise ModelCallError(f"{self.label}: the endpoint returned no choices")
            completions.extend(got[:want])
            round_no += 1
        return completions

    def _completions(self, response: Any) -> list[Completion]:
        if not isinstance(getattr(response, "choices", None), list):
            raise ValueError("no list of choices")
        choices = sorted(response.choices, key=lambda c: c.index)
        texts = [(c.message.content or "") if c.message else "" for c in choices]
        usage = response.usage
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0) if usage else 0
        completion = int(getattr(usage, "completion_tokens", 0) or 0) if usage else 0
        usages = split_usage(prompt, completion, texts)
        model = response.model or self.model
        return [
            Completion(text=t, usage=u, finish_reason=c.finish_reason, model=model)
            for t, u, c in zip(texts, usages, choices, strict=True)
        ]

    async def preflight(self, timeout: float = 10.0) -> None:
        """Fail now, with one clear error, if the key is missing or the endpoint is not there.

        Asks GET /models (cheap, no tokens spent); servers without that route get a one-token
        chat request instead. Where the list is given, the model must be in it.
        """
        import openai

        client = self._client().with_options(timeout=timeout, max_retries=0)
        try:
            async with asyncio.timeout(timeout):
                try:
                    page = await client.models.list()
                except openai.NotFoundError:
                    await client.chat.completions.create(
                        model=self.model,
                        messages=[{"role": "user", "content": "ping"}],
                        extra_body={self.max_tokens_param: 1},  # the server's own name
                    )
                    return
        except Exception as exc:
            failure = self._classify(exc)
            if failure is None:
                raise
            what = (
                "timed out" if isinstance(exc, TimeoutError) else self._redact(failure.description)
            )
            raise ModelCallError(f"{self.label}: preflight failed: {what}") from None
        served = [m.id for m in page.data]
        if self.check_model and served and not _is_served(self.model, served):
            shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
            raise ModelCallError(
                f"{self.label}: the endpoint does not serve model {self.model!r}; it serves: {shown}"
            )

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - called outside a loop
            return
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()


def _is_served(model: str, served: Sequence[str]) -> bool:
    """Exact id, or Ollama's implicit `:latest` tag."""
    return model in served or f"{model}:latest" in served
