"""Judge whether a compiled formal statement means what the informal problem means.

The judge sees the problem, its decomposition (when one could be made) and the statement,
and answers aligned or not with the faults it found. An unreadable answer (after the
re-ask of `llm.structured`) is an `Alignment` with `error` set: recorded, not a verdict, so the
pipeline neither counts it as aligned nor re-translates because of it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field

from formalbench.core.formalization import Alignment, Decomposition
from formalbench.judge.reply import lenient_list, lenient_text
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt
from formalbench.llm.structured import ask_structured

PROMPT = "judge_align"


class AlignmentReply(BaseModel):
    """The judge's answer: aligned or not, the faults found, a short explanation."""

    aligned: bool
    problems: Annotated[list[str], BeforeValidator(lenient_list)] = Field(default_factory=list)
    explanation: Annotated[str, BeforeValidator(lenient_text)] = ""

    def text(self) -> str:
        parts = [self.explanation] if self.explanation else []
        return "\n".join(parts + [f"- {p}" for p in self.problems])


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
    outcome = await ask_structured(
        model,
        messages,
        AlignmentReply,
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
        alignment = Alignment(
            aligned=outcome.value.aligned,
            explanation=outcome.value.text(),
            decomposition=decomposition,
            model=model.spec,
            raw_output=outcome.raw,
        )
    return alignment, hashes
