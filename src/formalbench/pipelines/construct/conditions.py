"""Step 4: recover implicit conditions, only where the source supports them.

The statement is folded level by level, deepest hop first: at each hop the model sees the
current statement, the original exercise and the (naturalized) items at that hop, and may
write in conditions those items support; the last pass (hop 0) has the exercise alone and
well-formedness. Each added condition names its support, and the reply must say the
objective is unchanged: a reply that does not is re-asked like a malformed one, then kept
as a format failure, which stops the exercise.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from formalbench.core.construct import ExtractedExercise
from formalbench.pipelines.construct.context import ROOT, walk
from formalbench.pipelines.construct.session import SourceSession

PROMPT = "construct_conditions"


class AddedCondition(BaseModel):
    condition: str = Field(min_length=1)
    support: str = Field(min_length=1)  # where in the source it comes from


class ConditionsReply(BaseModel):
    problem: str = Field(min_length=1)
    added: list[AddedCondition] = Field(default_factory=list)
    objective_unchanged: bool


def _objective_kept(reply: ConditionsReply) -> None:
    if not reply.objective_unchanged:
        raise ValueError(
            "objective_unchanged is false: the objective must stay exactly the original one"
        )


async def recover_conditions(
    session: SourceSession,
    exercise: ExtractedExercise,
    natural: dict[str, str],
) -> tuple[str, list[AddedCondition]] | None:
    """`problem_finally` and the conditions added (over all hops), or None."""
    by_hop: dict[int, list[dict[str, str]]] = {}
    for path, node in walk(exercise.expansion):
        if path != ROOT:
            item = {"label": node.label, "kind": node.kind, "text": natural[path]}
            by_hop.setdefault(node.depth, []).append(item)
    problem = natural[ROOT]
    added: list[AddedCondition] = []
    for hop in [*sorted(by_hop, reverse=True), 0]:
        _, reply = await session.ask(
            exercise.id,
            f"conditions:{hop}",
            "conditions",
            PROMPT,
            {
                "problem": problem,
                "original": exercise.text,
                "hop": hop,
                "context": by_hop.get(hop, []),
            },
            ConditionsReply,
            _objective_kept,
        )
        if reply is None:
            return None
        problem = reply.problem.strip()
        added += reply.added
    return problem, added
