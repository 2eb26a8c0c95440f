"""Step 6: the constrained repair of a statement the review sent back, then one re-review.

`revise` is always repaired (pool RI). `hold` is repaired (pool HI) unless what it misses
cannot be in the expansion: a `missing_dependency` while the expansion has references the
book does not resolve, or that the depth budget or the cycle guard cut off, is dropped (the
missing piece is not available, and the repair must not invent it). After the repair the
same reviewer looks once more; only an `accept` then makes the exercise usable.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from formalbench.core.construct import (
    ExtractedExercise,
    Pool,
    ReviewFlag,
    ReviewLabel,
    SourceReview,
)
from formalbench.pipelines.construct.context import truncated_keys, unresolved_keys
from formalbench.pipelines.construct.session import SourceSession

PROMPT = "construct_repair"


class RepairReply(BaseModel):
    problem: str = Field(min_length=1)
    changes: list[str] = Field(default_factory=list)


def repair_pool(first: SourceReview, exercise: ExtractedExercise) -> Pool | None:
    """The pool a repair of `first` goes to, or None when it is not repaired."""
    if first.label == ReviewLabel.revise:
        return Pool.revised
    if first.label != ReviewLabel.hold:
        return None
    root = exercise.expansion
    missing = unresolved_keys(root) + truncated_keys(root)
    if ReviewFlag.missing_dependency in first.flags and missing:
        return None
    return Pool.held


async def repair(
    session: SourceSession,
    exercise: ExtractedExercise,
    first: SourceReview,
    fields: dict[str, str],
) -> str | None:
    """The repaired `problem_finally`, or None on a format failure. `fields` holds the texts
    of the earlier stages: clean, standardized, context, problem."""
    _, reply = await session.ask(
        exercise.id,
        "repair",
        "repair",
        PROMPT,
        {
            "label": first.label.value,
            "flags": [f.value for f in first.flags],
            "reason": first.reason,
            "suggestion": first.suggestion,
            "original": exercise.text,
            **fields,
        },
        RepairReply,
    )
    return None if reply is None else reply.problem.strip()
