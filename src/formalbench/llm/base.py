"""The one interface every model provider is used through.

`generate` returns `n` completions for a chat, each with its token usage. Providers raise
`ModelCallError` once their retries are spent and `BudgetExceededError` when a token budget
would be overrun; solvers record both on the attempt and the run goes on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal

from formalbench.core.errors import FormalbenchError
from formalbench.core.records import Record, TokenUsage


class Message(Record):
    role: Literal["system", "user", "assistant", "tool"]
    content: str


class Completion(Record):
    text: str
    usage: TokenUsage = TokenUsage()
    finish_reason: str | None = None
    model: str = ""
    cached: bool = False


class ModelCallError(FormalbenchError):
    """A model call failed for good (after retries): unreachable, refused, malformed reply."""


class BudgetExceededError(FormalbenchError):
    """A token budget (per call, per task or per run) is spent; work stops cleanly.
    `budget` names which one (`run`, `task`), so callers need not read the message."""

    def __init__(self, message: str, budget: str | None = None) -> None:
        super().__init__(message)
        self.budget = budget


class ChatModel(ABC):
    """A chat model. `spec` is how the user named it, e.g. `openai:gpt-4o-mini`."""

    spec: str = "model"
    takes_schema: bool = False  # whether `generate` enforces `response_schema` itself

    @abstractmethod
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
        """Return `n` completions of the chat `messages`.

        `seed` tells samples of one request apart: sample i of a task passes seed=i, so the
        response cache keeps one entry per sample and a resumed run replays each of them.

        `response_schema` is a JSON Schema the reply must follow (see `llm.structured`):
        providers that can enforce one pass it on (OpenAI `response_format`, Anthropic a
        forced tool); the others ignore it, and the caller states the schema in the prompt
        (`takes_schema` says which).
        """

    async def preflight(self, timeout: float = 10.0) -> None:
        """Raise one clear error now if a run could not call this model (no key, no endpoint).

        The default has nothing to check: local and recorded models are always ready.
        """
        return None

    async def aclose(self) -> None:
        """Release connections; the default has none."""
        return None


class ModelWrapper(ChatModel):
    """A model that adds something (cache, budget, recording) around another one.

    It answers to the inner model's spec, so a wrapped model keys caches and reports the same
    way as the bare one, and passes preflight and close through.
    """

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.spec = inner.spec  # a model's spec is fixed once it is built

    @property
    def takes_schema(self) -> bool:  # type: ignore[override]  # a class attribute elsewhere
        return self.inner.takes_schema

    async def preflight(self, timeout: float = 10.0) -> None:
        await self.inner.preflight(timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"
