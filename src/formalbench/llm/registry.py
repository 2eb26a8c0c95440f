"""Make a model from the name a user gives on the command line or in a config file.

Specs:
  openai:MODEL                 OPENAI_BASE_URL (default api.openai.com) and OPENAI_API_KEY
  openai:MODEL@http://HOST/v1  an explicit OpenAI-compatible endpoint (vLLM, SGLang, Ollama...)
  anthropic:MODEL              needs the optional extra `formalbench[anthropic]`
  replay:PATH.jsonl            recorded responses (see llm.replay)
  replay:PATH.jsonl#SPEC       those of the model SPEC only (a file of several models)

Options common to every spec: `cache=PATH|ResponseCache` (serve repeats from a response cache)
and `record=PATH` (append every answered request to a replay file). `record_every_model(PATH)`
makes every model made afterwards record there too (the command line's `--record FILE`, so
that the models a pipeline makes deep inside, a judge's included, record without each taking
an option); `record_every_model(None)` stops it. The others go to the provider (`timeout`,
`concurrency`, `max_retries`, `api_key_env`, ...); an option the provider does not take is
an InputError naming it.

Preflight: before a run, `await preflight(model)` (or `preflight_sync`) asks the endpoint for
its model list with a short timeout and one attempt, so a missing key, a refused key, a dead
endpoint or a misspelt model name is one clear error instead of a run of failed attempts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.llm.base import ChatModel
from formalbench.llm.cached import CachedModel
from formalbench.llm.credentials import display_url
from formalbench.llm.replay import RecordingModel, ReplayModel
from formalbench.llm.retry import RetryPolicy
from formalbench.store.response_cache import ResponseCache

_HTTP_OPTIONS = frozenset(
    {"base_url", "api_key", "api_key_env", "timeout", "concurrency", "max_retries", "retry"}
)
_OPTIONS: dict[str, frozenset[str]] = {
    "openai": _HTTP_OPTIONS | {"max_tokens_param", "check_model"},
    "anthropic": _HTTP_OPTIONS,
    "replay": frozenset({"source_spec"}),
}
PROVIDERS: tuple[str, ...] = tuple(sorted(_OPTIONS))
_AT_URL = re.compile(r"^(.*?)@(https?://.+)$")
_RECORD_EVERY: Path | None = None  # see record_every_model


def record_every_model(path: Path | None) -> None:
    """Record every model `make_model` makes from now on to the replay file `path` (None:
    stop). Set by `--record FILE` for the length of one command (`cli.main.user_errors`)."""
    global _RECORD_EVERY
    _RECORD_EVERY = path


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """`provider:name[@http(s)://url]` -> (provider, name, url or None)."""
    provider, sep, rest = spec.strip().partition(":")
    provider = provider.strip().lower()
    if not sep or not provider or not rest.strip():
        raise InputError(
            f"model spec {spec!r}: expected PROVIDER:MODEL, e.g. openai:gpt-4o-mini; "
            f"known providers: {', '.join(PROVIDERS)}"
        )
    if provider not in _OPTIONS:
        raise InputError(
            f"model spec {spec!r}: unknown provider {provider!r}; "
            f"known providers: {', '.join(PROVIDERS)}"
        )
    name, url = rest.strip(), None
    explicit = _AT_URL.match(name)  # the first "@http(s)://": a URL may hold "user@host"
    if explicit:
        name, url = explicit.group(1), explicit.group(2)
    if not name:
        raise InputError(f"model spec {spec!r}: the model name is empty")
    return provider, name, url


def _openai(name: str, url: str | None, options: dict[str, Any]) -> ChatModel:
    from formalbench.llm.openai_model import OpenAIChatModel

    if url is not None:
        options.setdefault("spec", f"openai:{name}@{display_url(url.rstrip('/'))}")
        options["base_url"] = url
    return OpenAIChatModel(name, **options)


def _anthropic(name: str, url: str | None, options: dict[str, Any]) -> ChatModel:
    from formalbench.llm.anthropic_model import AnthropicChatModel

    if url is not None:
        options.setdefault("spec", f"anthropic:{name}@{display_url(url.rstrip('/'))}")
        options["base_url"] = url
    return AnthropicChatModel(name, **options)


def _replay(name: str, url: str | None, options: dict[str, Any]) -> ChatModel:
    text = name if url is None else f"{name}@{url}"
    path, mark, source = text.partition("#")
    if mark and ":" in source:  # `FILE#SPEC`: the model SPEC's lines of a shared file
        options.setdefault("source_spec", source.strip())
        return ReplayModel(Path(path), **options)
    return ReplayModel(Path(text), **options)


_MAKERS: dict[str, Callable[[str, str | None, dict[str, Any]], ChatModel]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "replay": _replay,
}


def make_model(spec: str, **options: Any) -> ChatModel:
    """The model named by `spec`, wrapped in a cache and/or recorder when asked."""
    provider, name, url = parse_spec(spec)
    cache = options.pop("cache", None)
    record = options.pop("record", None) or _RECORD_EVERY
    unknown = sorted(set(options) - _OPTIONS[provider])
    if unknown:
        raise InputError(
            f"model {spec!r}: unknown option(s) {', '.join(unknown)}; "
            f"{provider} takes: {', '.join(sorted(_OPTIONS[provider] | {'cache', 'record'}))}"
        )
    if "max_retries" in options:
        retries = options.pop("max_retries")
        options.setdefault("retry", RetryPolicy(max_retries=int(retries)))
    model = _MAKERS[provider](name, url, options)
    if cache is not None:
        store = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        model = CachedModel(model, store)
    if record is not None:  # outermost: the replay file gets cache hits too, so it is complete
        model = RecordingModel(model, record)
    return model


async def preflight(model: ChatModel, timeout: float = 10.0) -> None:
    """Raise one clear error now if `model` cannot be called (see module doc)."""
    await model.preflight(timeout)


def preflight_sync(model: ChatModel, timeout: float = 10.0) -> None:
    """`preflight` for code that is not inside an event loop (the CLI, before a run)."""

    async def check() -> None:
        try:
            await preflight(model, timeout)
        finally:
            await model.aclose()  # the connections of this short-lived loop

    asyncio.run(check())
