"""Judge whether a compiled formal statement means what the informal problem means.

The judge sees the problem, its decomposition (when one could be made) and the statement,
and answers aligned or not with the faults it found. An unreadable answer (after the
retries of `ask_json`) is an `Alignment` with `error` set: recorded, not a verdict, so the
pipeline neither counts it as aligned nor re-translates because of it.
"""

from __future__ import annotations

from typing import Any

from formalbench.core.formalization import Alignment, Decomposition
from formalbench.judge.reply import ask_json, bool_field, list_field, text_field
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt

PROMPT = "judge_align"


def read_alignment(data: dict[str, Any]) -> tuple[bool, str]:
    aligned = bool_field(data, "aligned")
    problems = list_field(data, "problems")
    explanation = text_field(data, "explanation", required=False)
    parts = [explanation] if explanation else []
    parts += [f"- {p}" for p in problems]
    return aligned, "\n".join(parts)


async def judge_alignment(
    model: ChatModel,
    *,
    informal: str,
    solution: str | None,
    decomposition: Decomposition | None,
    code: str,
    assistant: str,
    fence: str,
    retries: int = 2,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> tuple[Alignment, dict[str, str]]:
    """The judgement of `code`, and the prompt hashes used for it."""
    prompt = load_prompt(PROMPT)
    messages = prompt.render(
        informal=informal,
        solution=solution or "",
        decomposition=decomposition.model_dump() if decomposition else None,
        code=code.strip("\n"),
        assistant=assistant,
        fence=fence,
    )
    outcome = await ask_json(
        model,
        messages,
        read_alignment,
        retries=retries,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    hashes = {**outcome.prompt_hashes, "align": prompt.hash}
    if outcome.value is None:
        alignment = Alignment(
            aligned=False,
            decomposition=decomposition,
            model=model.spec,
            raw_output=outcome.raw,
            error=outcome.error,
        )
    else:
        aligned, explanation = outcome.value
        alignment = Alignment(
            aligned=aligned,
            explanation=explanation,
            decomposition=decomposition,
            model=model.spec,
            raw_output=outcome.raw,
        )
    return alignment, hashes
