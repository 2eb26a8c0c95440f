"""Step 1: the category of each problem, which decides its library context and examples.

A category given in the PROBLEMS file is kept as it is. Otherwise the judge model picks one
from the configured list (IndiMathBench labelled its problems with an LLM); an answer that
names no category of the list, or several, is `other`. The label is stored on the problem,
with the model's raw answer as a step, so a rerun asks nothing again.
"""

from __future__ import annotations

import re

from formalbench.core.formalization import Problem
from formalbench.llm.prompts import load_prompt
from formalbench.pipelines.formalize.config import OTHER, category_key
from formalbench.pipelines.formalize.session import Session

STEP = "category"
PROMPT = "formalize_label"


def match_category(answer: str, categories: list[str]) -> str:
    """The category `answer` names: an exact (loose) match, else the only one it mentions."""
    keys = {category_key(c): c for c in categories}
    said = category_key(answer.strip().strip("`'\".").splitlines()[0] if answer.strip() else "")
    if said in keys:
        return keys[said]
    spoken = f"_{category_key(answer)}_"
    mentioned = [c for k, c in keys.items() if re.search(f"_{re.escape(k)}_", spoken)]
    return mentioned[0] if len(mentioned) == 1 else OTHER


async def label_problem(session: Session, problem: Problem) -> Problem:
    """`problem` with its category set (given, stored, or asked now)."""
    store = session.store
    if problem.category:
        if not store.step_done(problem.id, STEP):
            store.mark_step(problem.id, STEP, {"category": problem.category, "given": True})
        return problem
    stored = store.step_value(problem.id, STEP)
    if stored is None:
        prompt = load_prompt(PROMPT)
        completion = (
            await session.judge.generate(
                prompt.render(informal=problem.informal, categories=session.config.categories),
                n=1,
                temperature=session.config.judge_temperature,
                max_tokens=session.config.max_tokens,
                seed=0,
            )
        )[0]
        stored = {
            "category": match_category(completion.text, session.config.categories),
            "given": False,
            "raw": completion.text,
            "model": session.judge.spec,
        }
    labelled = problem.model_copy(update={"category": stored["category"]})
    store.put_problem(labelled)
    store.mark_step(problem.id, STEP, stored)
    return labelled
