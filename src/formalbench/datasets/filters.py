"""Choosing the tasks of a run: by split, id pattern, labels, and a reproducible sample.

Filters keep the dataset's order, and the sample is drawn with its own seeded generator, so
the same command picks the same tasks on every machine and every rerun (a resumed run must
see the tasks it started with).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from formalbench.core.errors import InputError
from formalbench.core.records import Task

LabelFilter = Mapping[str, str] | Iterable[str]


def parse_labels(labels: LabelFilter | None) -> dict[str, str]:
    """`{"domain": "algebra"}` or `["domain=algebra", ...]` (as typed on a command line)."""
    if labels is None:
        return {}
    if isinstance(labels, Mapping):
        return {str(k): str(v) for k, v in labels.items()}
    if isinstance(labels, str):
        labels = [labels]
    parsed: dict[str, str] = {}
    for item in labels:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"label filter {item!r}: expected key=value, e.g. domain=algebra")
        parsed[key.strip()] = value.strip()
    return parsed


def label_matches(task: Task, key: str, wanted: str) -> bool:
    """True when the task's label `key` matches the glob `wanted`.

    A label may hold several comma-separated values (PutnamBench problems carry several
    domains); matching any one of them is enough.
    """
    value = task.labels.get(key)
    if value is None:
        return False
    items = [value, *(v.strip() for v in value.split(",") if "," in value)]
    return any(fnmatchcase(item, wanted) for item in items)


def select(
    tasks: Sequence[Task],
    split: str | None = None,
    pattern: str | Sequence[str] | None = None,
    labels: LabelFilter | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> list[Task]:
    """The tasks that pass every given filter, in their original order.

    `pattern` is a glob on the task id (several globs: any may match); `labels` must all
    match; `sample` then keeps N of the survivors chosen with `random.Random(seed)`.
    """
    patterns = [pattern] if isinstance(pattern, str) else list(pattern or [])
    wanted = parse_labels(labels)
    chosen = [
        task
        for task in tasks
        if (split is None or task.split == split)
        and (not patterns or any(fnmatchcase(task.id, p) for p in patterns))
        and all(label_matches(task, key, value) for key, value in wanted.items())
    ]
    if sample is None:
        return chosen
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise InputError(f"sample must be a whole number of tasks >= 0, not {sample!r}")
    if sample >= len(chosen):
        return chosen
    keep = sorted(random.Random(seed).sample(range(len(chosen)), sample))
    return [chosen[i] for i in keep]
