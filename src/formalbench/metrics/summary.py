"""One run's numbers: pass@k overall and per category, token and time cost, error taxonomy,
and the informal-vs-formal gap, as a JSON-serialisable record a report is rendered from.

Decisions where the papers leave room:
- pass@k is averaged over the *evaluated* tasks, those with at least `samples` attempts.
  A task with fewer (a run stopped early) is listed in `incomplete_tasks` and kept out of
  every pass@k, so an unfinished run never reads as failures. A task with more attempts
  than `samples` uses all of them (the estimator takes any n >= k).
- `solved` lists every task with a passing attempt, evaluated or not: a proof found is
  found. Per-category `solved` counts the same way.
- pass@k over turns (`pass_at_k_turns`, k in `turn_ks`): for runs of the sequential
  solver, over the same evaluated tasks; see `metrics.turns`.
- tokens: the total over all attempts, each task's sum, and the mean over tasks that have
  at least one attempt (CAM-Bench's "tokens per evaluated instance").
- the informal-vs-formal gap: see `metrics.gap`.
- environment failures: a task whose original cannot compile here (a library it needs is
  not installed) says nothing about the prover. It is listed in `environment_tasks`, kept
  out of every pass@k and category table, and named in `warnings`. A task is one when an
  attempt carries the `environment` error the evaluation's preflight records, or when it
  has no passing attempt and every attempt's primary category is `environment` (a run made
  with `--no-preflight`); a single candidate that imports a library the task does not is
  the model's failure and stays counted.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from formalbench.core.errors import InputError
from formalbench.core.records import Attempt, ErrorKind, Task, TokenUsage
from formalbench.metrics.amber_taxonomy import amber_taxonomy
from formalbench.metrics.gap import InformalFormalGap, informal_formal_gap
from formalbench.metrics.passk import ks_for, mean_pass_at_k
from formalbench.metrics.taxonomy import ErrorCategory, classify, is_pass
from formalbench.metrics.turns import pass_at_turns, turn_ks

NONE_VALUE = "(none)"
LABEL_FIELDS = ("domain", "difficulty", "category")
_EXAMPLE_CHARS = 500
AMBER_KINDS = frozenset({"evaluation", "algorithm", "transformation"})  # construction tasks


class CategoryRow(BaseModel):
    value: str
    tasks: int
    evaluated: int  # tasks with a complete set of samples: the base of pass@k
    solved: int
    pass_at_k: dict[str, float] = Field(default_factory=dict)


class CategoryTable(BaseModel):
    """Tasks grouped by one field (split, kind, source, or a label such as domain)."""

    field: str
    rows: list[CategoryRow]


class TaskOutcome(BaseModel):
    id: str
    attempts: int
    passed: int
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    wall_time_s: float = 0.0


class TaxonomyExample(BaseModel):
    task_id: str
    sample: int
    message: str


class RunSummary(BaseModel):
    tasks: int
    attempts: int
    samples: int
    evaluated: int
    solved: list[str]
    incomplete_tasks: list[str]
    environment_tasks: list[str] = Field(default_factory=list)  # left out of pass@k
    warnings: list[str] = Field(default_factory=list)
    ks: list[int]
    pass_at_k: dict[str, float]
    # pass@k over repair turns (sequential solver; see `metrics.turns`), beside the above
    turn_ks: list[int] = Field(default_factory=list)
    pass_at_k_turns: dict[str, float] = Field(default_factory=dict)
    categories: list[CategoryTable]
    per_task: list[TaskOutcome]
    tokens_total: TokenUsage
    tokens_mean_per_task: dict[str, float]  # prompt, completion, total
    attempt_time_s: float
    run_wall_time_s: float | None = None
    failed_attempts: int
    taxonomy: dict[str, int]  # primary category -> failed attempts
    taxonomy_labels: dict[str, int]  # category -> failed attempts showing it (multi-label)
    taxonomy_examples: dict[str, TaxonomyExample]
    # AMBER's four classes (metrics/amber_taxonomy.py), for runs with construction tasks
    taxonomy_amber: dict[str, int] = Field(default_factory=dict)
    gap: InformalFormalGap | None = None
    run_info: dict[str, Any] = Field(default_factory=dict)


def summarize(
    tasks: Sequence[Task],
    attempts: Sequence[Attempt],
    *,
    samples: int,
    run_info: dict[str, Any] | None = None,
) -> RunSummary:
    """Compute a run's summary from its tasks and every attempt made on them."""
    ks = ks_for(samples)
    by_id: dict[str, Task] = {}
    for task in tasks:
        if task.id in by_id:
            raise InputError(f"task id {task.id!r} appears twice in the task list")
        by_id[task.id] = task
    per_task: dict[str, list[Attempt]] = {tid: [] for tid in by_id}
    for attempt in attempts:
        if attempt.task_id not in per_task:
            raise InputError(f"attempt for unknown task {attempt.task_id!r} (not in the task list)")
        per_task[attempt.task_id].append(attempt)

    outcomes = [_outcome(tid, per_task[tid]) for tid in by_id]
    failed = [a for a in attempts if not is_pass(a)]
    taxonomy, labels, examples, primaries = _taxonomy(failed)
    environment = _environment_tasks(per_task, primaries)
    counts = {
        o.id: (o.attempts, o.passed)
        for o in outcomes
        if o.attempts >= samples and o.id not in environment
    }
    warnings = []
    if environment:
        warnings.append(
            f"{len(environment)} task(s) cannot compile here (their original fails on this "
            "toolchain: a missing library, a statement this Coq refuses) "
            f"and are left out of pass@k: {', '.join(sorted(environment)[:10])}"
            + (" ..." if len(environment) > 10 else "")
        )
    tokens_total = sum((o.tokens for o in outcomes), TokenUsage())
    attempted = [o for o in outcomes if o.attempts]
    info = dict(run_info or {})
    solved = {o.id for o in outcomes if o.passed}
    evaluated_attempts = {tid: per_task[tid] for tid in counts}
    turn_ks_ = turn_ks([a for group in evaluated_attempts.values() for a in group])
    return RunSummary(
        tasks=len(by_id),
        attempts=len(attempts),
        samples=samples,
        evaluated=len(counts),
        solved=sorted(solved),
        incomplete_tasks=sorted(
            o.id for o in outcomes if o.attempts < samples and o.id not in environment
        ),
        environment_tasks=sorted(environment),
        warnings=warnings,
        ks=ks,
        pass_at_k=_pass_table(list(counts.values()), ks),
        turn_ks=turn_ks_,
        pass_at_k_turns=pass_at_turns(evaluated_attempts, turn_ks_),
        categories=_category_tables(list(by_id.values()), counts, solved, ks),
        per_task=outcomes,
        tokens_total=tokens_total,
        tokens_mean_per_task=_mean_tokens(attempted),
        attempt_time_s=math.fsum(a.wall_time for a in attempts),
        run_wall_time_s=_wall_time(info),
        failed_attempts=len(failed),
        taxonomy=taxonomy,
        taxonomy_labels=labels,
        taxonomy_examples=examples,
        taxonomy_amber=amber_taxonomy(taxonomy)
        if any(t.kind.value in AMBER_KINDS for t in by_id.values())
        else {},
        gap=informal_formal_gap(list(by_id.values()), counts, samples),
        run_info=info,
    )


def _outcome(task_id: str, attempts: list[Attempt]) -> TaskOutcome:
    return TaskOutcome(
        id=task_id,
        attempts=len(attempts),
        passed=sum(is_pass(a) for a in attempts),
        tokens=sum((a.tokens for a in attempts), TokenUsage()),
        wall_time_s=math.fsum(a.wall_time for a in attempts),
    )


def _pass_table(counts: list[tuple[int, int]], ks: list[int]) -> dict[str, float]:
    if not counts:
        return {}
    return {str(k): mean_pass_at_k(counts, k) for k in ks}


def _category_tables(
    tasks: list[Task], counts: dict[str, tuple[int, int]], solved: set[str], ks: list[int]
) -> list[CategoryTable]:
    fields: list[tuple[str, Any]] = [
        ("split", lambda t: t.split),
        ("kind", lambda t: t.kind.value),
        ("source", lambda t: t.source),
    ]
    fields += [(name, lambda t, name=name: t.labels.get(name)) for name in LABEL_FIELDS]
    tables = []
    for name, getter in fields:
        groups: dict[str, list[Task]] = defaultdict(list)
        for task in tasks:
            groups[getter(task) or NONE_VALUE].append(task)
        if set(groups) == {NONE_VALUE}:
            continue
        rows = []
        for value in sorted(groups, key=_natural_key):  # difficulty words in their own order
            members = groups[value]
            evaluated = [counts[t.id] for t in members if t.id in counts]
            rows.append(
                CategoryRow(
                    value=value,
                    tasks=len(members),
                    evaluated=len(evaluated),
                    solved=sum(1 for t in members if t.id in solved),
                    pass_at_k=_pass_table(evaluated, ks),
                )
            )
        tables.append(CategoryTable(field=name, rows=rows))
    return tables


def _natural_key(value: str) -> tuple[bool, int, list[Any]]:
    """Sort "(none)" last, difficulty words easy < medium < hard, and numbers inside values
    by size (level 2 before level 10)."""
    parts = [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", value)]
    rank = _DIFFICULTY_ORDER.get(value.strip().lower(), len(_DIFFICULTY_ORDER))
    return (value == NONE_VALUE, rank, [(isinstance(p, str), p) for p in parts])


_DIFFICULTY_ORDER = {
    word: i
    for i, word in enumerate(
        ["trivial", "very easy", "easy", "medium", "moderate", "hard", "very hard", "expert"]
    )
}


def _mean_tokens(attempted: list[TaskOutcome]) -> dict[str, float]:
    if not attempted:
        return {"prompt": 0.0, "completion": 0.0, "total": 0.0}
    n = len(attempted)
    prompt = sum(o.tokens.prompt for o in attempted) / n
    completion = sum(o.tokens.completion for o in attempted) / n
    return {"prompt": prompt, "completion": completion, "total": prompt + completion}


def _wall_time(info: dict[str, Any]) -> float | None:
    for key in ("wall_time_s", "wall_time"):
        if key in info and info[key] is not None:
            value = info[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InputError(f"run info {key!r} must be a non-negative number, got {value!r}")
            return float(value)
    return None


def _taxonomy(
    failed: list[Attempt],
) -> tuple[dict[str, int], dict[str, int], dict[str, TaxonomyExample], dict[int, ErrorCategory]]:
    primary: dict[str, int] = defaultdict(int)
    labels: dict[str, int] = defaultdict(int)
    examples: dict[str, TaxonomyExample] = {}
    primaries: dict[int, ErrorCategory] = {}  # id() of the attempt -> its primary category
    for attempt in failed:
        result = classify(attempt)
        primaries[id(attempt)] = result.primary
        primary[result.primary.value] += 1
        for label in result.labels:
            labels[label.value] += 1
        if result.primary.value not in examples:
            examples[result.primary.value] = TaxonomyExample(
                task_id=attempt.task_id,
                sample=attempt.sample,
                message=result.evidence[:_EXAMPLE_CHARS],
            )
    order = [c.value for c in ErrorCategory]
    return (
        {c: primary[c] for c in order if primary[c]},
        {c: labels[c] for c in order if labels[c]},
        {c: examples[c] for c in order if c in examples},
        primaries,
    )


def _environment_tasks(
    per_task: dict[str, list[Attempt]], primaries: dict[int, ErrorCategory]
) -> set[str]:
    """Tasks that cannot compile here (see the module doc); `primaries` maps `id()` of each
    failed attempt to its primary category."""
    found: set[str] = set()
    for task_id, attempts in per_task.items():
        if any(a.error is not None and a.error.kind == ErrorKind.environment for a in attempts):
            found.add(task_id)
        elif attempts and all(primaries.get(id(a)) == ErrorCategory.environment for a in attempts):
            found.add(task_id)  # no attempt passed: a passing one has no primary category
    return found
