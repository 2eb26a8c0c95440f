"""Step 1: clean an exercise down to its task (hints, remarks, narrative, plotting and
software instructions go; formulas, labels, references and task verbs stay).

A reply that is the input unchanged (up to whitespace) does not count as cleaned: it is
shown to the model as a validation error and re-asked like any reply of the wrong shape.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from formalbench.core.construct import ExtractedExercise
from formalbench.pipelines.construct.session import SourceSession

PROMPT = "construct_clean"


class CleanReply(BaseModel):
    problem_clean: str = Field(min_length=1)


def _squashed(text: str) -> str:
    return " ".join(text.split())


def not_unchanged(original: str) -> Callable[[CleanReply], None]:
    def check(reply: CleanReply) -> None:
        if _squashed(reply.problem_clean) == _squashed(original):
            raise ValueError("problem_clean is the input unchanged; rewrite it as asked")

    return check


async def clean(session: SourceSession, exercise: ExtractedExercise) -> str | None:
    """The cleaned text, or None when the reply stayed a format failure (it is stored)."""
    _, reply = await session.ask(
        exercise.id,
        "clean",
        "clean",
        PROMPT,
        {"text": exercise.text, "source_idx": exercise.source_idx},
        CleanReply,
        not_unchanged(exercise.text),
    )
    return None if reply is None else reply.problem_clean.strip()
