"""Step 7 (optional, `--split-parts`): one problem with several questions becomes several.

FMC split a problem whose statement asks more than one thing into "shared conditions +
part i" problems, each formalized on its own. The judge model does the cutting and answers
in JSON; a problem with fewer than two parts, or an unreadable answer, stays whole. The
parts become problems `<id>#<i>` (1-based) that remember their parent in their metadata;
the cut itself is stored as a step of the parent, so a rerun cuts nothing again.
"""

from __future__ import annotations

from typing import Any

from formalbench.core.formalization import Problem
from formalbench.judge.reply import Unreadable, ask_json, list_field, text_field
from formalbench.llm.prompts import load_prompt
from formalbench.pipelines.formalize.session import Session

STEP = "split"
PROMPT = "formalize_split"


def read_split(data: dict[str, Any]) -> dict[str, Any]:
    parts = [p.strip() for p in list_field(data, "parts") if p.strip()]
    if len(parts) > 1 and not text_field(data, "shared", required=False):
        raise Unreadable("`shared` is missing for a problem cut into parts")
    return {
        "shared": text_field(data, "shared", required=False),
        "parts": parts,
        "solutions": list_field(data, "solutions"),
    }


def parts_of(problem: Problem, cut: dict[str, Any]) -> list[Problem]:
    parts: list[str] = cut.get("parts") or []
    if len(parts) < 2:
        return [problem]
    solutions: list[str] = cut.get("solutions") or []
    if len(solutions) != len(parts):
        solutions = [problem.solution or ""] * len(parts)
    shared = cut.get("shared", "").strip()
    return [
        Problem(
            id=f"{problem.id}#{i}",
            informal=f"{shared}\n\n{part}".strip(),
            solution=solution.strip() or None,
            category=problem.category,
            source=problem.source,
            metadata={**problem.metadata, "parent": problem.id, "part": i, "parts": len(parts)},
        )
        for i, (part, solution) in enumerate(zip(parts, solutions, strict=True), start=1)
    ]


async def split_problem(session: Session, problem: Problem) -> list[Problem]:
    cut = session.store.step_value(problem.id, STEP)
    if cut is None:
        prompt = load_prompt(PROMPT)
        outcome = await ask_json(
            session.judge,
            prompt.render(informal=problem.informal, solution=problem.solution or ""),
            read_split,
            **session.judge_options(),
        )
        cut = dict(outcome.value or {"shared": "", "parts": [], "solutions": []})
        cut.update(error=outcome.error, raw=outcome.raw, model=session.judge.spec)
        session.store.mark_step(problem.id, STEP, cut)
    return parts_of(problem, cut)
