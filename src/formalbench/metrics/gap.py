"""The informal-vs-formal gap: how much more often a model gets a problem right on paper
than in a verified proof (CAM-Bench compares informal pass@1, judged, with verified pass@k).

A task takes part when its metadata or labels carry `informal_score` (a bool, or a number
in [0, 1], e.g. a judge's verdict on an informal solution). Its formal score is the task's
own `formal_score` when recorded, else this run's estimate pass@n for it (n = samples:
1 or 0, whether a sample verified, when the task has exactly n attempts). The gap is mean informal minus mean
formal score, in [-1, 1]; with a 0.5 threshold each task also falls in one cell of a 2x2
table (both right, informal only, formal only, neither), which says where the gap comes from.
"""

from __future__ import annotations

import math
from collections import defaultdict

from pydantic import BaseModel

from formalbench.core.errors import InputError
from formalbench.core.records import Task
from formalbench.metrics.passk import pass_at_k


class InformalFormalGap(BaseModel):
    tasks: int  # tasks with an informal score (and a formal one)
    informal: float  # mean informal score
    formal: float  # mean formal score
    gap: float  # informal - formal
    formal_from_run: int  # tasks whose formal score is this run's pass@n
    both: int
    informal_only: int
    formal_only: int
    neither: int


def informal_formal_gap(
    tasks: list[Task], counts: dict[str, tuple[int, int]], samples: int
) -> InformalFormalGap | None:
    """The gap over tasks with an informal score; `counts` maps evaluated task ids to
    (n, c) of this run. None when no task carries an informal score."""
    pairs: list[tuple[float, float]] = []
    from_run = 0
    for task in tasks:
        informal = _score(task, "informal_score")
        if informal is None:
            continue
        formal = _score(task, "formal_score")
        if formal is None:
            if task.id not in counts:
                continue  # no recorded formal score and the run did not finish this task
            n, c = counts[task.id]
            formal = pass_at_k(n, c, samples)
            from_run += 1
        pairs.append((informal, formal))
    if not pairs:
        return None
    informal_mean = math.fsum(i for i, _ in pairs) / len(pairs)
    formal_mean = math.fsum(f for _, f in pairs) / len(pairs)
    cells: defaultdict[tuple[bool, bool], int] = defaultdict(int)
    for i, f in pairs:
        cells[(i >= 0.5, f >= 0.5)] += 1
    return InformalFormalGap(
        tasks=len(pairs),
        informal=informal_mean,
        formal=formal_mean,
        gap=informal_mean - formal_mean,
        formal_from_run=from_run,
        both=cells[(True, True)],
        informal_only=cells[(True, False)],
        formal_only=cells[(False, True)],
        neither=cells[(False, False)],
    )


def _score(task: Task, key: str) -> float | None:
    """A task's score under `key` in metadata (preferred) or labels, as a number in [0, 1]."""
    raw = task.metadata.get(key, task.labels.get(key))
    if raw is None:
        return None
    value: float | None = None
    if isinstance(raw, int | float):  # bool is an int: True -> 1.0
        value = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().lower()
        words = {"true": 1.0, "yes": 1.0, "pass": 1.0, "false": 0.0, "no": 0.0, "fail": 0.0}
        if text in words:
            value = words[text]
        else:
            try:
                value = float(text)
            except ValueError:
                value = None
    if value is None or not 0.0 <= value <= 1.0 or math.isnan(value):
        raise InputError(
            f"task {task.id!r}: {key} must be true/false or a number in [0, 1], got {raw!r}"
        )
    return value
