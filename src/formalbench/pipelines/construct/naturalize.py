"""Step 3: naturalize the expansion tree bottom-up (Algorithm 1, lines 12-15 of CAM-Bench).

Every node is rewritten once its children are: the children's rewritten texts are given
beside it, so what an item needs from its dependencies is folded into it level by level up
to the exercise, which also loses the textbook's phrasing. The root is the *cleaned*
exercise. Siblings are independent and are asked concurrently. A node whose reply stays a
format failure stops the exercise here (its ancestors cannot be written without it).
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from formalbench.core.construct import ExpansionNode, ExtractedExercise
from formalbench.pipelines.construct.context import ROOT
from formalbench.pipelines.construct.session import SourceSession

PROMPT = "construct_naturalize"


class NaturalReply(BaseModel):
    text: str = Field(min_length=1)


async def naturalize(
    session: SourceSession, exercise: ExtractedExercise, clean_text: str
) -> dict[str, str] | None:
    """The rewritten text of every node by path key (`ROOT` is the exercise), or None."""
    out: dict[str, str] = {}

    async def visit(node: ExpansionNode, path: str) -> bool:
        keys = [f"{path}/{i}:{child.label}" for i, child in enumerate(node.children)]
        done = await asyncio.gather(
            *(visit(child, key) for child, key in zip(node.children, keys, strict=True))
        )
        if not all(done):
            return False
        children = [
            {"label": child.label, "kind": child.kind, "text": out[key]}
            for child, key in zip(node.children, keys, strict=True)
        ]
        is_root = path == ROOT
        _, reply = await session.ask(
            exercise.id,
            f"naturalize:{path}",
            "naturalize",
            PROMPT,
            {
                "kind": "exercise" if is_root else node.kind,
                "label": exercise.source_idx if is_root else node.label,
                "text": clean_text if is_root else node.text,
                "is_root": is_root,
                "children": children,
            },
            NaturalReply,
        )
        if reply is None:
            return False
        out[path] = reply.text.strip()
        return True

    return out if await visit(exercise.expansion, ROOT) else None
