"""Step 5: review `problem_finally` against the original exercise: accept / revise / hold.

The labels and flags are those of `core.construct` (the seed's). A verdict must be
consistent to count: `accept` carries no flag, `revise` and `hold` carry at least one flag
and a reason; an inconsistent one is re-asked like a malformed reply.
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
from formalbench.pipelines.construct.context import unresolved_keys
from formalbench.pipelines.construct.session import SourceSession

PROMPT = "construct_review"


class ReviewReply(BaseModel):
    label: ReviewLabel
    flags: list[ReviewFlag] = Field(default_factory=list)
    reason: str = ""
    suggestion: str = ""
    counterexample: str = ""


def consistent(reply: ReviewReply) -> None:
    if reply.label == ReviewLabel.accept and reply.flags:
        raise ValueError("label accept with flags: accept means no flag applies")
    if reply.label != ReviewLabel.accept and not reply.flags:
        raise ValueError(f"label {reply.label.value} needs at least one flag")
    if reply.label != ReviewLabel.accept and not reply.reason.strip():
        raise ValueError(f"label {reply.label.value} needs a reason")


async def review(
    session: SourceSession,
    exercise: ExtractedExercise,
    problem: str,
    context: str,
    pool: Pool,
    round_no: int,
) -> SourceReview | None:
    """The review of `problem` (a statement of `exercise`), or None on a format failure."""
    record, reply = await session.ask(
        exercise.id,
        f"review:{pool.value}",
        "review",
        PROMPT,
        {
            "original": exercise.text,
            "problem": problem,
            "context": context,
            "unresolved": unresolved_keys(exercise.expansion),
        },
        ReviewReply,
        consistent,
    )
    if reply is None:
        return None
    reason = reply.reason.strip()
    if reply.counterexample.strip():
        reason = f"{reason} Counterexample: {reply.counterexample.strip()}".strip()
    return SourceReview(
        label=reply.label,
        flags=list(dict.fromkeys(reply.flags)),
        reason=reason,
        suggestion=reply.suggestion.strip(),
        pool=pool,
        round=round_no,
        model=record.model,
        tokens=record.tokens,
    )
