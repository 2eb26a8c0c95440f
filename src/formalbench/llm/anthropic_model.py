"""Anthropic models through the `anthropic` SDK, an optional extra (`formalbench[anthropic]`).

The SDK is imported when such a model is made, so the rest of formalbench works without it;
without it, making one is an InputError that says how to install it.

Mapping to the common interface: system messages become the `system` parameter; `tool`
messages are sent as `user`; consecutive messages of one role are joined. The Messages API has
no `n` and no `seed`: `n` samples are `n` requests (each under the endpoint's concurrency
limit) and the seed only tells cache entries apart. `max_tokens` is required by the API and
defaults to 4096. A `response_schema` becomes the input schema of one tool the model is
made to call; the reply's text is then the JSON of that call's input. Temperature is sent where the installed SDK takes it (0..1); the 2.x SDKs
have no such parameter, and then it is not sent (a warning says so once per model). Retries, timeout and key handling are those of the OpenAI provider.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import weakref
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from formalbench.core.errors import InputError
from formalbench.core.records import TokenUsage
from formalbench.llm.base import ChatModel, Completion, Message, ModelCallError
from formalbench.llm.credentials import display_url, key_from_env, redact
from formalbench.llm.limits import endpoint_semaphore
from formalbench.llm.retry import CallFailure, RetryPolicy, call_with_retries, classify_sdk_error
from formalbench.llm.schema import schema_name

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096
log = logging.getLogger("formalbench.llm")


def import_sdk() -> ModuleType:
    try:
        import anthropic
    except ImportError:
        raise InputError(
            "the anthropic provider needs the optional extra: pip install 'formalbench[anthropic]'"
        ) from None
    return anthropic


def _sdk_takes_temperature(sdk: ModuleType) -> bool:
    """Whether `messages.create` of the installed SDK has a `temperature` parameter."""
    try:
        create = sdk.resources.messages.AsyncMessages.create
        return "temperature" in inspect.signature(create).parameters
    except (AttributeError, TypeError, ValueError):
        return True


def to_anthropic(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, str]]]:
    """(system text, alternating user/assistant turns) for the Messages API."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    turns: list[dict[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + m.content
        else:
            turns.append({"role": role, "content": m.content})
    return system, turns


def _reply_text(blocks: Sequence[Any], tool: str | None) -> str:
    """The text of a reply; with a forced tool, the JSON of the tool's input."""
    if tool is not None:
        for block in blocks:
            if getattr(block, "type", "") == "tool_use" and getattr(block, "name", "") == tool:
                return json.dumps(block.input, ensure_ascii=False)
    return "".join(b.text for b in blocks if getattr(b, "type", "") == "text")


class AnthropicChatModel(ChatModel):
    provider = "anthropic"
    takes_schema = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
        spec: str | None = None,
    ) -> None:
        self._sdk = import_sdk()
        if not model:
            raise InputError("anthropic model: the model name is empty")
        if timeout <= 0 or concurrency < 1:
            raise InputError(f"anthropic:{model}: timeout must be > 0 and concurrency >= 1")
        self.model = model
        env_url = os.environ.get("ANTHROPIC_BASE_URL", "").strip()
        self.base_url = (base_url or env_url or DEFAULT_BASE_URL).rstrip("/")
        self.key_env = api_key_env or DEFAULT_KEY_ENV
        self._key = key_from_env(self.key_env, api_key)
        self.timeout = timeout
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        shown = display_url(self.base_url)
        self.spec = spec or (f"anthropic:{model}@{shown}" if base_url else f"anthropic:{model}")
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._clients = weakref.WeakKeyDictionary()
        self._takes_temperature = _sdk_takes_temperature(self._sdk)
        self._warned = False

    def __repr__(self) -> str:
        return f"AnthropicChatModel(spec={self.spec!r}, base_url={display_url(self.base_url)!r})"

    @property
    def label(self) -> str:
        url = display_url(self.base_url)
        return self.spec if url in self.spec else f"{self.spec} at {url}"

    def _client(self) -> Any:
        if self._key is None:
            raise ModelCallError(
                f"{self.label}: no API key; set the environment variable {self.key_env}"
            )
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._sdk.AsyncAnthropic(
                api_key=self._key.reveal(),
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout + 5.0,
                http_client=self._sdk.DefaultAsyncHttpxClient(),  # see openai_model
            )
            self._clients[loop] = client
        return client

    def _classify(self, exc: BaseException) -> CallFailure | None:
        return classify_sdk_error(exc, self._sdk)

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
        if self._takes_temperature and not 0.0 <= temperature <= 1.0:
            raise InputError(f"{self.spec}: temperature must be within 0..1, got {temperature}")
        client = self._client()
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "messages": turns,
            "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
        }
        if self._takes_temperature:
            request["temperature"] = temperature
        elif temperature != 1.0 and not self._warned:
            self._warned = True
            log.warning(
                "%s: this anthropic SDK takes no temperature; %s not sent", self.spec, temperature
            )
        if system:
            request["system"] = system
        if stop:
            request["stop_sequences"] = list(stop)
        tool = None
        if response_schema is not None:
            tool = schema_name(response_schema)
            request["tools"] = [
                {
                    "name": tool,
                    "description": "Record the answer, in exactly this shape.",
                    "input_schema": response_schema,
                }
            ]
            request["tool_choice"] = {"type": "tool", "name": tool}
        semaphore = endpoint_semaphore(f"anthropic|{self.base_url}", self.concurrency)

        async def one() -> Completion:
            reply = await call_with_retries(
                lambda: client.messages.create(**request),
                label=self.label,
                classify=self._classify,
                policy=self.retry,
                semaphore=semaphore,
                timeout=self.timeout,
                redact=lambda s: redact(s, self._key),
            )
            text = _reply_text(reply.content, tool)
            usage = TokenUsage(
                prompt=reply.usage.input_tokens, completion=reply.usage.output_tokens
            )
            return Completion(
                text=text, usage=usage, finish_reason=reply.stop_reason, model=reply.model
            )

        tasks = [asyncio.ensure_future(one()) for _ in range(n)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:  # one sample failed for good: do not leave the others running
                task.cancel()
            raise

    async def preflight(self, timeout: float = 10.0) -> None:
        """Key present and the endpoint answers GET /v1/models (no tokens spent)."""
        client = self._client().with_options(timeout=timeout, max_retries=0)
        try:
            async with asyncio.timeout(timeout):
                await client.models.list(limit=1)
        except Exception as exc:
            failure = self._classify(exc)
            if failure is None:
                raise
            what = "timed out" if isinstance(exc, TimeoutError) else failure.description
            raise ModelCallError(
                f"{self.label}: preflight failed: {redact(what, self._key)}"
            ) from None

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()
