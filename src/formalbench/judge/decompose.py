"""Take an informal problem apart into objects, conditions and goal (FMC's decomposition).

Problems in words hide conditions ("a triangle" implies positive sides) and state their goal
loosely ("find all ..."). Making a model spell these out first, once per problem, and then
comparing a formal statement with the parts, is what made FMC's alignment check agree with
people far more often than back-translation did.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field

from formalbench.core.formalization import Decomposition
from formalbench.judge.reply import lenient_list, lenient_text
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt
from formalbench.llm.structured import StructuredOutcome, ask_structured

PROMPT = "judge_decompose"
Text = Annotated[str, BeforeValidator(lenient_text)]
Texts = Annotated[list[str], BeforeValidator(lenient_list)]


class DecompositionReply(BaseModel):
    """The judge's answer: objects with their types, every condition, the goal."""

    data_type: Text = Field(min_length=1)
    conditions: Texts = Field(default_factory=list)
    proof_goal: Text = Field(min_length=1)


async def decompose(
    model: ChatModel,
    informal: str,
    solution: str | None = None,
    *,
    retries: int = 2,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> StructuredOutcome[Decomposition]:
    """The decomposition of the problem, or an outcome with `error` when it was unreadable."""
    prompt = load_prompt(PROMPT)
    messages = prompt.render(informal=informal, solution=solution or "")
    outcome = await ask_structured(
        model,
        messages,
        DecompositionReply,
        retries=retries,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    outcome.prompt_hashes["decompose"] = prompt.hash
    value = None if outcome.value is None else Decomposition(**outcome.value.model_dump())
    return StructuredOutcome(
        value,
        outcome.raw,
        outcome.attempts,
        outcome.error,
        outcome.tokens,
        outcome.prompt_hashes,
        outcome.model,
    )
