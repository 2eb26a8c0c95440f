"""Take an informal problem apart into objects, conditions and goal (FMC's decomposition).

Problems in words hide conditions ("a triangle" implies positive sides) and state their goal
loosely ("find all ..."). Making a model spell these out first, once per problem, and then
comparing a formal statement with the parts, is what made FMC's alignment check agree with
people far more often than back-translation did.
"""

from __future__ import annotations

from typing import Any

from formalbench.core.formalization import Decomposition
from formalbench.judge.reply import JsonOutcome, ask_json, list_field, text_field
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt

PROMPT = "judge_decompose"


def read_decomposition(data: dict[str, Any]) -> Decomposition:
    return Decomposition(
        data_type=text_field(data, "data_type"),
        conditions=list_field(data, "conditions"),
        proof_goal=text_field(data, "proof_goal"),
    )


async def decompose(
    model: ChatModel,
    informal: str,
    solution: str | None = None,
    *,
    retries: int = 2,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> JsonOutcome[Decomposition]:
    """The decomposition of the problem, or an outcome with `error` when it was unreadable."""
    prompt = load_prompt(PROMPT)
    messages = prompt.render(informal=informal, solution=solution or "")
    outcome = await ask_json(
        model,
        messages,
        read_decomposition,
        retries=retries,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    outcome.prompt_hashes["decompose"] = prompt.hash
    return outcome
