"""The APE judge: four samples grade a compiled patch against its instruction.

Vote rule (the reference's code, which produced its numbers): over all samples and all tasks
of the instruction, count Good/Excellent and Poor/Unacceptable grades; the patch passes iff
the first count is larger. Acceptable is neutral, and the overall grade is not used. A sample
whose reply holds no readable grades counts nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from formalbench.judge.reply import Unreadable, find_json_object
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt

POSITIVE = {"excellent", "good"}
NEGATIVE = {"poor", "unacceptable"}
GRADES = POSITIVE | NEGATIVE | {"acceptable"}


def grades_of(reply: str) -> list[str]:
    """The per-task grades of one judge reply (lower case), [] when unreadable."""
    try:
        data = find_json_object(reply)
    except Unreadable:
        return []
    tasks = data.get("TaskEvaluations")
    if not isinstance(tasks, dict):
        return []
    out = [str(g).strip().lower() for g in tasks.values()]
    return [g for g in out if g in GRADES]


def vote(samples: list[list[str]]) -> bool:
    grades = [g for s in samples for g in s]
    return sum(g in POSITIVE for g in grades) > sum(g in NEGATIVE for g in grades)


async def judge_patch(
    model: ChatModel,
    instruction: str,
    content_before: str,
    patch: str,
    language: str,
    samples: int = 4,
    temperature: float = 0.0,
    first_seed: int = 0,
) -> dict[str, Any]:
    messages = load_prompt("ape_judge").render(
        instruction=instruction, content_before=content_before, patch=patch, language=language
    )
    replies = await asyncio.gather(
        *(
            model.generate(messages, n=1, temperature=temperature, seed=first_seed + i)
            for i in range(samples)
        )
    )
    per_sample = [grades_of(r[0].text) if r else [] for r in replies]
    return {"grades": per_sample, "passed": vote(per_sample)}
