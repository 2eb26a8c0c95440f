"""What the source stages share: the store, one model per step, and the one way a step asks.

`ask` is where every model step of the source stages goes through: a step already stored
for the exercise is returned from the store (a resumed run asks nothing twice, a format
failure included), otherwise the prompt is rendered, the reply asked for in the step's
schema (`llm.structured`: schema to the provider, pydantic validation, one re-ask), and the
outcome stored in one transaction, with the prompt hash, the model and the tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import PromptTemplate, load_prompt
from formalbench.llm.structured import ask_structured
from formalbench.store.construct import ConstructStore, StepRecord

M = TypeVar("M", bound=BaseModel)


@dataclass
class SourceSession:
    store: ConstructStore
    models: Mapping[str, ChatModel]  # step -> model (see config.STEPS)
    format_retries: int = 1
    temperature: float = 0.0
    max_tokens: int | None = None
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    asked: int = 0  # model steps asked in this session (not read back from the store)
    # one read of the store per exercise, not one per step; one version of each prompt a run
    _stored: dict[str, dict[str, StepRecord]] = field(default_factory=dict, repr=False)
    _prompts: dict[str, PromptTemplate] = field(default_factory=dict, repr=False)

    def stored(self, exercise_id: str, key: str) -> StepRecord | None:
        steps = self._stored.get(exercise_id)
        if steps is None:
            steps = {r.step: r for _, r in self.store.steps(exercise_id)}
            self._stored[exercise_id] = steps
        return steps.get(key)

    def prompt(self, name: str) -> PromptTemplate:
        if name not in self._prompts:
            self._prompts[name] = load_prompt(name)
            self.prompt_hashes[name] = self._prompts[name].hash
        return self._prompts[name]

    async def ask(
        self,
        exercise_id: str,
        key: str,
        step: str,
        prompt_name: str,
        values: dict[str, Any],
        schema: type[M],
        check: Callable[[M], None] | None = None,
    ) -> tuple[StepRecord, M | None]:
        """The record of step `key` of the exercise and its validated value (None: a format
        failure), asked with the model of `step` unless already stored."""
        stored = self.stored(exercise_id, key)
        if stored is not None:
            value = None if stored.output is None else schema.model_validate(stored.output)
            return stored, value
        prompt = self.prompt(prompt_name)
        outcome = await ask_structured(
            self.models[step],
            prompt.render(**values),
            schema,
            check=check,
            retries=self.format_retries,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        self.prompt_hashes.update({f"structured_{k}": v for k, v in outcome.prompt_hashes.items()})
        record = StepRecord(
            step=key,
            output=None if outcome.value is None else outcome.value.model_dump(mode="json"),
            error=outcome.error,
            raw=outcome.raw,
            attempts=outcome.attempts,
            prompt=prompt_name,
            prompt_hash=prompt.hash,
            model=self.models[step].spec,
            tokens=outcome.tokens,
        )
        self.store.put_step(exercise_id, record)
        self._stored.setdefault(exercise_id, {})[key] = record
        self.asked += 1
        return record, outcome.value
