"""Text embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM,
Ollama, llama.cpp server, Infinity, TEI's OpenAI route) through the official `openai` SDK.

The connection is the chat model's: an embedder holds an `OpenAIChatModel` for the same
name and address and uses its client, key rules (`OPENAI_API_KEY`, required for OpenAI
itself, any key for a local server), error classification, redaction and preflight, and
sends its requests through the same retry loop and the same per-endpoint concurrency slots,
so a judge and an embedder on one vLLM server share its limit. Nothing of that is written
twice.

Decisions:
- Vectors are asked for as floats (`encoding_format="float"`): the SDK's default, base64,
  is not understood by every local server.
- Texts go in batches (`batch` per request) that run concurrently within the endpoint limit;
  a reply must hold one vector per text, all of one length, or it is a ModelCallError.
- Prompt tokens of every reply are added to `tokens`, for the run's log.
- Preflight embeds one short text without retries: listing the models would not tell
  whether the server embeds at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from formalbench.core.errors import InputError
from formalbench.llm.base import ModelCallError
from formalbench.llm.credentials import display_url
from formalbench.llm.limits import endpoint_semaphore
from formalbench.llm.openai_model import OpenAIChatModel
from formalbench.llm.registry import parse_spec
from formalbench.llm.retry import RetryPolicy, call_with_retries

DEFAULT_BATCH = 64


class OpenAIEmbedder:
    """Embeds texts with `model` served behind `/v1/embeddings`."""

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
        batch: int = DEFAULT_BATCH,
        spec: str | None = None,
    ) -> None:
        if batch < 1:
            raise InputError(f"openai:{model}: the embedding batch must be at least 1")
        self._http = OpenAIChatModel(
            model,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            timeout=timeout,
            concurrency=concurrency,
            retry=retry,
            spec=spec,
        )
        self.batch = batch
        self.tokens = 0

    @property
    def spec(self) -> str:
        return self._http.spec

    @property
    def identity(self) -> str:
        """The model and the endpoint that really answers (vectors of two servers differ)."""
        return f"openai:{self._http.model}@{display_url(self._http.base_url)}"

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(spec={self.spec!r})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        chunks = [texts[i : i + self.batch] for i in range(0, len(texts), self.batch)]
        parts = await asyncio.gather(
            *(self._request(c, self._http.retry, self._http.timeout) for c in chunks)
        )
        vectors = [v for part in parts for v in part]
        if len({len(v) for v in vectors}) > 1:
            raise ModelCallError(f"{self._http.label}: the embeddings differ in length")
        return vectors

    async def _request(
        self, chunk: Sequence[str], policy: RetryPolicy, timeout: float
    ) -> list[list[float]]:
        client = self._http._client()
        semaphore = endpoint_semaphore(f"openai|{self._http.base_url}", self._http.concurrency)
        response = await call_with_retries(
            lambda: client.embeddings.create(
                model=self._http.model, input=list(chunk), encoding_format="float"
            ),
            label=self._http.label,
            classify=self._http._classify,
            policy=policy,
            semaphore=semaphore,
            timeout=timeout,
            redact=self._http._redact,
        )
        return self._vectors(response, len(chunk))

    def _vectors(self, response: Any, count: int) -> list[list[float]]:
        try:
            items = sorted(response.data, key=lambda d: d.index)
            vectors = [[float(x) for x in item.embedding] for item in items]
        except (AttributeError, TypeError, ValueError) as exc:
            shown = self._http._redact(str(response))[:200]
            raise ModelCallError(
                f"{self._http.label}: the reply is not a list of embeddings ({exc}): {shown!r}"
            ) from None
        if len(vectors) != count or not all(vectors):
            raise ModelCallError(
                f"{self._http.label}: asked for {count} embedding(s), got {len(vectors)}"
                + ("" if all(vectors) else " (some empty)")
            )
        usage = getattr(response, "usage", None)
        self.tokens += int(getattr(usage, "prompt_tokens", 0) or 0) if usage else 0
        return vectors

    async def preflight(self, timeout: float = 10.0) -> None:
        """One clear error now for a missing key, a dead endpoint, a model it does not serve
        or a server without embeddings: one short text embedded, not retried."""
        try:
            await self._request(["preflight"], RetryPolicy(max_retries=0), timeout)
        except ModelCallError as exc:
            raise ModelCallError(f"embedding preflight failed: {exc}") from None

    async def aclose(self) -> None:
        await self._http.aclose()


def make_embedder(spec: str, **options: Any) -> OpenAIEmbedder:
    """`openai:NAME` or `openai:NAME@http(s)://HOST/v1` -> an embedder (options as the chat
    model's: timeout, concurrency, api_key_env, batch, ...)."""
    provider, name, url = parse_spec(spec)
    if provider != "openai":
        raise InputError(
            f"embedding model {spec!r}: embeddings are read from an OpenAI-compatible "
            "endpoint; give openai:NAME or openai:NAME@URL"
        )
    if url is not None:
        options.setdefault("spec", f"openai:{name}@{display_url(url.rstrip('/'))}")
        options["base_url"] = url
    try:
        return OpenAIEmbedder(name, **options)
    except TypeError as exc:
        raise InputError(f"embedding model {spec!r}: {exc}") from None
