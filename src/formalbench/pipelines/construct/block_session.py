"""What every formal stage shares: configuration, prompts, and remembered calls.

Every model call and every compile of the formal stages goes through `Session`, which
remembers its answer in the run's `construct_formal` tables before handing it back. A
resumed run asks the same questions in the same order (the algorithms are deterministic
given the answers) and gets them from the tables, so finished compiles and reviews are never
redone; only the first unanswered step reaches the model or the assistant.

`ask_structured_reply` is the one place a structured reply is requested: through the
project's structured-output call, `formalbench.llm.structured.ask_structured`.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from formalbench.backends.base import Backend
from formalbench.core.records import CheckResult, CheckStatus, TokenUsage
from formalbench.llm.base import ChatModel, Message
from formalbench.llm.prompts import load_prompt
from formalbench.llm.structured import ask_structured
from formalbench.pipelines.construct.blockfile import SYNTAX, Syntax
from formalbench.pipelines.construct.fewshot import FewShotExample, load_examples
from formalbench.store.construct_formal import ConstructFormalStore

M = TypeVar("M", bound=BaseModel)


@dataclass
class FormalStageConfig:
    """Budgets and settings of steps 8-11 (CAM-Bench defaults where the seed gives them)."""

    repair_rounds: int = 8  # R: compile repairs per block (Algorithm 2, and inside Algorithm 3)
    review_rounds: int = 8  # S: review rounds per block (Algorithm 3)
    history: int = 5  # failed attempts shown to a rewrite
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 60.0  # seconds per compile
    header: str | None = None  # the file scaffold; None: the assistant's default imports
    concurrency: int = 4  # exercises worked on at once
    fewshot: int = 2  # examples shown to a translation and to a repair (0: none)
    fewshot_file: str | None = None  # JSONL of examples; None: the shipped set
    tasks_from_unreviewed: bool = False  # also emit tasks whose blocks failed review

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Structured(Generic[M]):
    """A structured reply: the validated value, or the reason it could not be read."""

    value: M | None
    raw: str
    error: str | None
    tokens: TokenUsage


@dataclass
class Session:
    store: ConstructFormalStore
    model: ChatModel
    backend: Backend
    config: FormalStageConfig
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, TokenUsage] = field(default_factory=lambda: defaultdict(TokenUsage))
    fresh_calls: int = 0  # calls that reached the model in this process
    fresh_compiles: int = 0  # compiles that reached the assistant in this process
    _version: str | None = None
    _examples: list[FewShotExample] | None = None

    @property
    def examples(self) -> list[FewShotExample]:
        if self._examples is None:
            self._examples = load_examples(self.config.fewshot_file, self.backend.language)
        return self._examples

    @property
    def syntax(self) -> Syntax:
        return SYNTAX[self.backend.language]

    @property
    def header(self) -> str:
        return self.syntax.header if self.config.header is None else self.config.header

    def prompt(self, name: str, **values: Any) -> list[Message]:
        """Render `construct_block_<name>` with the assistant's vocabulary filled in."""
        template = load_prompt(f"construct_block_{name}")
        self.prompt_hashes[name] = template.hash
        syntax = self.syntax
        return template.render(
            assistant=syntax.name, fence=syntax.fence, hole=syntax.hole, **values
        )

    def _key(self, purpose: str, messages: Sequence[Message]) -> str:
        request = {
            "purpose": purpose,
            "model": self.model.spec,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "messages": [[m.role, m.content] for m in messages],
        }
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    async def ask(
        self, problem_id: str, purpose: str, messages: Sequence[Message]
    ) -> tuple[str, TokenUsage]:
        """A free-text reply (code), remembered."""
        key = self._key(purpose, messages)
        stored = self.store.call(key)
        if stored is None:
            completion = (
                await self.model.generate(
                    messages,
                    n=1,
                    temperature=self.config.temperature,
                    max_tokens=self.config.max_tokens,
                    seed=0,
                )
            )[0]
            self.fresh_calls += 1
            stored = {"text": completion.text, "tokens": completion.usage.model_dump()}
            self.store.put_call(key, problem_id, purpose, stored)
        usage = TokenUsage.model_validate(stored["tokens"])
        self.tokens[problem_id] = self.tokens[problem_id] + usage
        return str(stored["text"]), usage

    async def ask_structured(
        self, problem_id: str, purpose: str, messages: Sequence[Message], schema: type[M]
    ) -> Structured[M]:
        """A reply validated against `schema`, remembered; unreadable after one re-ask is
        a recorded format failure (value None, error set), never an exception."""
        key = self._key(purpose, messages)
        stored = self.store.call(key)
        if stored is None:
            outcome = await ask_structured_reply(self.model, messages, schema, self.config)
            self.fresh_calls += 1
            stored = {
                "value": outcome.value.model_dump(mode="json") if outcome.value else None,
                "raw": outcome.raw,
                "error": outcome.error,
                "tokens": outcome.tokens.model_dump(),
            }
            self.store.put_call(key, problem_id, purpose, stored)
        usage = TokenUsage.model_validate(stored["tokens"])
        self.tokens[problem_id] = self.tokens[problem_id] + usage
        value = None if stored["value"] is None else schema.model_validate(stored["value"])
        return Structured(value, str(stored["raw"]), stored["error"], usage)

    async def compile(self, source: str) -> CheckResult:
        """The assistant's verdict on a whole file, remembered by (assistant, text)."""
        if self._version is None:
            self._version = self.backend.version()
        blob = f"{self._version}\0{self.config.timeout}\0{source}"
        key = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        stored = self.store.compile(key)
        if stored is not None:
            return CheckResult.model_validate(stored)
        result = await self.backend.acheck(source, timeout=self.config.timeout)
        self.fresh_compiles += 1
        if result.status is not CheckStatus.crash:  # a crash may pass: ask again next time
            self.store.put_compile(key, result.model_dump(mode="json"))
        return result


async def ask_structured_reply(
    model: ChatModel, messages: Sequence[Message], schema: type[M], config: FormalStageConfig
) -> Structured[M]:
    """Ask for a `schema` value through the project's structured-output call (the JSON
    Schema goes to the provider, pydantic validates, one re-ask, then a format failure)."""
    outcome = await ask_structured(
        model,
        messages,
        schema,
        retries=1,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
    )
    return Structured(outcome.value, outcome.raw, outcome.error, outcome.tokens)
