"""The accepted exercises of a reviewed construct run, as `Task` records (JSONL).

A task is the reviewer's accepted file (header apart, as the task format wants), with the
metadata `formalbench eval` needs for multi-hole files (hole count and theorem names) and the
whole trail: the source stages' texts and reviews, the blocks and the pipeline's validation,
then who accepted it, when, with which note, and a diff of the reviewer's edits against the
packaged file. Like the formalize export, a dataset made of people's edits stays auditable.
As there, a proof the reviewer wrote into the file becomes a hole again (the complete file is
kept as `metadata.reference_solution`): the task is what is left to prove.
"""

from __future__ import annotations

from typing import Any

from formalbench.core.formalization import ReviewDecision
from formalbench.core.records import Informal, Task, TaskKind
from formalbench.dashboard.construct_view import ConstructRun, ExerciseView
from formalbench.dashboard.export import as_task_text, nothing_to_prove, review_trail
from formalbench.datasets.text import has_hole, split_header
from formalbench.pipelines.construct.blockfile import hole_count
from formalbench.store.review import ReviewStore


def accepted_tasks(
    run: ConstructRun, review: ReviewStore, skipped: list[str] | None = None
) -> list[Task]:
    """One task per accepted exercise, in book order; an accepted file that leaves nothing
    to prove is left out, with the reason added to `skipped`."""
    statuses = review.statuses()
    tasks = []
    for row in run.rows(statuses):
        decision = review.current(row.id)
        if decision is None or decision.status.value != "accepted" or not decision.code:
            continue
        view = run.exercise(row.id)
        if view is None:  # decided, then gone from the run
            continue
        task = _task(view, decision, review)
        if has_hole(task.formal, task.language):
            tasks.append(task)
        elif skipped is not None:
            skipped.append(nothing_to_prove(task.id, task.language))
    return tasks


def _task(view: ExerciseView, decision: ReviewDecision, review: ReviewStore) -> Task:
    header, accepted = split_header(decision.code or "", view.language)
    formal, reference = as_task_text(accepted, view.language)
    holes, targets = hole_count(header + formal, view.syntax)
    problem, exercise = view.problem, view.exercise
    statement = (
        (problem.problem_finally or problem.problem_standardized_math or problem.problem)
        if problem
        else (exercise.text if exercise else "")
    )
    source = problem.source if problem else (exercise.source if exercise else "")
    source_idx = problem.source_idx if problem else (exercise.source_idx if exercise else "")
    kinds = sorted({t.block.kind.value for t in view.trails})
    return Task(
        id=view.id,
        language=view.language,
        header=header,
        formal=formal,
        source=source,
        informal=Informal(statement=statement.strip()),
        kind=TaskKind.proof,
        labels={"source_idx": source_idx, "block_kinds": ",".join(kinds)},
        trail={
            "construct": _construct_trail(view),
            "review": review_trail(decision, review, view.packaged, view.file_name or view.id),
        },
        metadata={
            "instance": f"instances/{view.file_name}" if view.file_name else None,
            "holes": holes,
            "targets": targets,
            "solved_when": "every hole is filled and the whole file verifies",
            **({"reference_solution": reference} if reference is not None else {}),
        },
    )


def _construct_trail(view: ExerciseView) -> dict[str, Any]:
    problem = view.problem
    return {
        **{name: text for name, text in view.stages},
        "reviews": [r.model_dump(mode="json") for r in problem.reviews] if problem else [],
        "blocks": [
            {**t.block.model_dump(mode="json"), "status": t.status.value} for t in view.trails
        ],
        "validation": view.result["status"] if view.result else None,
    }
