"""What the steps of one formalize run share: settings, store, models, assistant, and the
per-problem work that must happen once however many candidates need it (the first batch of
translations of a model, the decomposition of a problem)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from formalbench.backends.base import Backend
from formalbench.core.formalization import Candidate, Decomposition, Problem
from formalbench.judge.decompose import decompose
from formalbench.llm.base import ChatModel, Completion
from formalbench.pipelines.formalize.config import FormalizeConfig
from formalbench.pipelines.formalize.context import FewShot
from formalbench.pipelines.formalize.embed_index import Embedder
from formalbench.pipelines.formalize.statement import Assistant
from formalbench.store.formalize import FormalizeStore

DECOMPOSITION = "decomposition"


class FormalizeObserver(Protocol):
    """What the command line shows while a run goes."""

    def started(self, total: int, done: int) -> None: ...

    def chain_done(self, candidate: Candidate) -> None: ...


@dataclass
class Session:
    config: FormalizeConfig
    store: FormalizeStore
    assistant: Assistant
    backend: Backend
    models: dict[str, ChatModel]  # by spec, in the order given
    judge: ChatModel
    fewshot: list[FewShot]
    observer: FormalizeObserver | None = None
    embedder: Embedder | None = None  # with retriever "embed"
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    _once: dict[tuple[str, ...], asyncio.Task[Any]] = field(default_factory=dict)

    def once(self, key: tuple[str, ...], make: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
        """The result of `make()`, run once per key for the whole run (failures included)."""
        task = self._once.get(key)
        if task is None:
            task = asyncio.ensure_future(make())
            self._once[key] = task
        return asyncio.shield(task)

    def judge_options(self) -> dict[str, Any]:
        return {
            "retries": self.config.judge_retries,
            "temperature": self.config.judge_temperature,
            "max_tokens": self.config.max_tokens,
        }

    async def first_translations(
        self, problem: Problem, model: ChatModel, make_messages: Callable[[], list[Any]]
    ) -> list[Completion]:
        """The first translations of `problem` by `model`: one request for all k samples."""

        async def call() -> list[Completion]:
            return await model.generate(
                make_messages(),
                n=self.config.samples,
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
                seed=0,
            )

        return await self.once(("translate", problem.id, model.spec), call)

    async def decomposition(self, problem: Problem) -> Decomposition | None:
        """The problem's decomposition, made once and stored; None when it was unreadable."""
        stored = self.store.step_value(problem.id, DECOMPOSITION)
        if stored is None:
            stored = await self.once((DECOMPOSITION, problem.id), lambda: self._decompose(problem))
        data = stored.get("decomposition")
        return None if data is None else Decomposition.model_validate(data)

    async def _decompose(self, problem: Problem) -> dict[str, Any]:
        outcome = await decompose(
            self.judge, problem.informal, problem.solution, **self.judge_options()
        )
        self.prompt_hashes.update(outcome.prompt_hashes)
        value = {
            "decomposition": None if outcome.value is None else outcome.value.model_dump(),
            "error": outcome.error,
            "raw": outcome.raw,
            "attempts": outcome.attempts,
            "model": self.judge.spec,
            "tokens": outcome.tokens.model_dump(),
        }
        self.store.mark_step(problem.id, DECOMPOSITION, value)
        return value
