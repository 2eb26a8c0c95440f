"""Instruction synthesis: one model call per task, answered as JSON that must validate
against `InstructionReply` (its JSON Schema is in the prompt); then majority labels, the
keep rule (not Very Easy, not Superficial) and reverse validation (the judge must pass the
gold diff against the instruction, else the task is dropped).
"""

from __future__ import annotations

import json
from collections import Counter
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from formalbench.judge.reply import Unreadable, find_json_object
from formalbench.llm.base import ChatModel, ModelCallError
from formalbench.llm.prompts import load_prompt
from formalbench.pipelines.ape.judge import judge_patch


class Category(StrEnum):
    feature = "Feature"
    bug_fix = "Bug Fix"
    refactor = "Refactor"
    chore = "Chore"
    testing = "Testing"
    documentation = "Documentation"
    formatting = "Formatting"


class Focus(StrEnum):
    math = "Mathematical Concepts"
    software = "Software Engineering"


class Difficulty(StrEnum):
    very_easy = "Very Easy"
    easy = "Easy"
    medium = "Medium"
    hard = "Hard"
    very_hard = "Very Hard"


class Nature(StrEnum):
    substantial = "Substantial"
    superficial = "Superficial"


class Exercise(BaseModel):
    title: str = Field(min_length=1)
    hunk_span: str = Field(description="the lines of the diff this exercise covers")
    category: Category
    focus: Focus
    difficulty: Difficulty
    nature: Nature
    instruction: str = Field(min_length=1)


class InstructionReply(BaseModel):
    exercises: list[Exercise] = Field(min_length=1)


def _majority(values: list[str]) -> str:
    return Counter(values).most_common(1)[0][0]


def full_instruction(exercises: list[Exercise]) -> str:
    return "\n\n\n".join(
        f"- Task {i}: {e.title}\n\n{e.instruction}" for i, e in enumerate(exercises, start=1)
    )


def _error(model: ChatModel, reason: str, detail: str, attempt: int) -> dict[str, Any]:
    """A result that is no verdict on the task: kept for `--retry-errors`, counted by reason."""
    return {
        "kept": False,
        "error": True,
        "reason": reason,
        "detail": detail[:300],
        "model": model.spec,
        "attempt": attempt,
    }


async def synthesize_task(
    model: ChatModel,
    task: dict[str, Any],
    judge: ChatModel | None = None,
    judge_samples: int = 4,
    attempt: int = 0,
) -> dict[str, Any]:
    """Exercises, labels and the keep decision for one task. Never raises on a bad reply or
    a failed call: those come back as errors (`"error": True`, reason, detail), which a
    rerun with `--retry-errors` redoes, unlike a verdict (superficial, judge failed). A retry
    (`attempt` > 0) asks with another seed, so the response cache cannot hand back the same
    unreadable reply."""
    seed = attempt or None  # attempt 0 keeps the request (and cache key) of a first run
    messages = load_prompt("ape_instruction").render(
        path=task["file_path_after"],
        language=task["language"],
        content_before=task["content_before"],
        gold_diff=task["gold_diff"],
        schema=json.dumps(InstructionReply.model_json_schema()),
    )
    try:
        replies = await model.generate(messages, n=1, temperature=0.0, seed=seed)
    except ModelCallError as exc:
        return _error(model, "the model call failed", str(exc), attempt)
    reply = replies[0].text if replies else ""
    try:
        parsed = InstructionReply.model_validate(find_json_object(reply))
    except (Unreadable, ValidationError) as exc:
        return _error(model, "unreadable instruction reply", str(exc), attempt)
    ex = parsed.exercises
    out: dict[str, Any] = {
        "exercises": [e.model_dump(mode="json") for e in ex],
        "category": _majority([e.category.value for e in ex]),
        "difficulty": _majority([e.difficulty.value for e in ex]),
        "nature": _majority([e.nature.value for e in ex]),
        "focus": _majority([e.focus.value for e in ex]),
        "instruction": full_instruction(ex),
    }
    if out["difficulty"] == Difficulty.very_easy or out["nature"] == Nature.superficial:
        out.update(kept=False, reason="very easy or superficial")
        return out
    try:
        verdict = await judge_patch(
            judge or model,
            out["instruction"],
            task["content_before"],
            task["gold_diff"],
            task["language"],
            samples=judge_samples,
            first_seed=attempt * judge_samples,
        )
    except ModelCallError as exc:
        return _error(judge or model, "the judge call failed", str(exc), attempt)
    if not any(verdict["grades"]):  # no sample graded anything: no verdict was given
        return _error(judge or model, "unreadable judge replies", "no grade in any sample", attempt)
    out["reverse_validation"] = verdict
    out["kept"] = verdict["passed"]
    if not verdict["passed"]:
        out["reason"] = "the judge failed the gold diff against the instruction"
    return out
