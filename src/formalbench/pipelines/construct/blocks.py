"""Step 8: split an exercise's final statement into ordered semantic blocks.

The model reads `problem_finally` and returns the blocks in order — hints (kept for
provenance, never formalized), definitions, optimization problems, algorithms and the theorem,
which is the root: the last formal block. The reply is validated (`BlockSplit`); one that does
not validate is asked again once and then recorded as a format failure of the exercise.
"""

from __future__ import annotations

from dataclasses import dataclass

from formalbench.core.construct import ConstructProblem
from formalbench.pipelines.construct.block_records import Block, BlockSplit
from formalbench.pipelines.construct.block_session import Session

PURPOSE = "split"


@dataclass
class SplitOutcome:
    blocks: list[Block]
    error: str | None = None
    raw: str = ""


def statement_of(problem: ConstructProblem) -> str:
    """The informal statement the formal stages work from."""
    return (problem.problem_finally or problem.problem_standardized_math or problem.problem).strip()


async def split_blocks(session: Session, problem: ConstructProblem) -> SplitOutcome:
    messages = session.prompt("split", statement=statement_of(problem), source=problem.source)
    reply = await session.ask_structured(problem.id, PURPOSE, messages, BlockSplit)
    if reply.value is None:
        return SplitOutcome([], reply.error or "the block split could not be read", reply.raw)
    blocks = [
        Block(
            index=i,
            source=problem.source,
            source_idx=problem.source_idx,
            kind=b.kind,
            content=b.content.strip(),
            term=(b.term or None) if b.kind.formalizable else None,
        )
        for i, b in enumerate(reply.value.blocks, start=1)
    ]
    return SplitOutcome(blocks, None, reply.raw)
