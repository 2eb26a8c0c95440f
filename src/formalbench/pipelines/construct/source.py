"""The source stages of one exercise, in order: clean, naturalize, recover conditions,
review, repair and re-review; the result is its `ConstructProblem`, stored.

Each step is stored as it finishes (see `session`), so a killed run picks the exercise up
at the first step it had not finished. An exercise whose step ended in a format failure
stops there: its problem is stored with `failed_step` and it is not usable.
"""

from __future__ import annotations

from formalbench.core.construct import ConstructProblem, ExtractedExercise, Pool, ReviewLabel
from formalbench.pipelines.construct.clean import clean
from formalbench.pipelines.construct.conditions import recover_conditions
from formalbench.pipelines.construct.context import ROOT, problem_with_context
from formalbench.pipelines.construct.naturalize import naturalize
from formalbench.pipelines.construct.repair import repair, repair_pool
from formalbench.pipelines.construct.review import review
from formalbench.pipelines.construct.session import SourceSession


async def run_source_stages(
    session: SourceSession, index: int, exercise: ExtractedExercise
) -> ConstructProblem:
    """The exercise through the source stages (a stored result is returned as it is)."""
    stored = session.store.problem(exercise.id)
    if stored is not None:
        return stored
    problem = ConstructProblem(
        index=index,
        id=exercise.id,
        source=exercise.source,
        source_idx=exercise.source_idx,
        problem=exercise.text,
    )
    failed = await _stages(session, exercise, problem)
    session.store.put_problem(problem, failed)
    return problem


async def _stages(
    session: SourceSession, exercise: ExtractedExercise, problem: ConstructProblem
) -> str | None:
    """Fill `problem` stage by stage; the step that failed, or None."""
    cleaned = await clean(session, exercise)
    if cleaned is None:
        return "clean"
    problem.problem_clean = cleaned
    problem.problem_with_context = problem_with_context(exercise.expansion, cleaned)
    natural = await naturalize(session, exercise, cleaned)
    if natural is None:
        return "naturalize"
    problem.problem_standardized_math = natural[ROOT]
    recovered = await recover_conditions(session, exercise, natural)
    if recovered is None:
        return "conditions"
    problem.problem_finally = recovered[0]
    context = problem.problem_with_context
    first = await review(session, exercise, problem.problem_finally, context, Pool.original, 1)
    if first is None:
        return "review"
    problem.reviews.append(first)
    if first.label == ReviewLabel.accept:
        problem.usable = True
        return None
    pool = repair_pool(first, exercise)
    if pool is None:
        return None  # a hold whose missing piece the textbook does not hold: dropped
    fields = {
        "clean": cleaned,
        "standardized": problem.problem_standardized_math,
        "context": context,
        "problem": problem.problem_finally,
    }
    repaired = await repair(session, exercise, first, fields)
    if repaired is None:
        return "repair"
    problem.problem_finally = repaired
    second = await review(session, exercise, repaired, context, pool, 2)
    if second is None:
        return "review"
    problem.reviews.append(second)
    problem.usable = second.label == ReviewLabel.accept
    return None
