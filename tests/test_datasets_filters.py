"""select(): split, id globs, labels, seeded samples; order is always the dataset's."""

from __future__ import annotations

import pytest

from formalbench.core.errors import InputError
from formalbench.core.records import Language, Task
from formalbench.datasets import parse_labels, select


def _task(i: int, split: str, **labels: str) -> Task:
    return Task(
        id=f"{'mathd' if i % 2 else 'imo'}_{i}",
        language=Language.coq,
        formal="Theorem x : True.\nProof.\nAdmitted.\n",
        split=split,
        labels=labels,
    )


TASKS = [
    _task(i, "test" if i < 6 else "valid", domain="algebra,analysis" if i % 3 == 0 else "nt")
    for i in range(10)
]


def ids(tasks: list[Task]) -> list[str]:
    return [t.id for t in tasks]


def test_no_filter_keeps_everything_in_order():
    assert select(TASKS) == TASKS


def test_split_pattern_and_labels():
    assert ids(select(TASKS, split="valid")) == ["imo_6", "mathd_7", "imo_8", "mathd_9"]
    assert ids(select(TASKS, pattern="mathd_*", split="test")) == ["mathd_1", "mathd_3", "mathd_5"]
    assert ids(select(TASKS, pattern=["imo_0", "*_9"])) == ["imo_0", "mathd_9"]
    # a comma-separated label matches any of its values
    assert ids(select(TASKS, labels={"domain": "analysis"})) == [
        "imo_0",
        "mathd_3",
        "imo_6",
        "mathd_9",
    ]
    assert ids(select(TASKS, labels=["domain=algebra,analysis"], split="valid")) == [
        "imo_6",
        "mathd_9",
    ]
    assert select(TASKS, labels={"missing": "x"}) == []


def test_sample_is_seeded_stable_and_ordered():
    first = select(TASKS, sample=4, seed=7)
    assert len(first) == 4 and first == select(TASKS, sample=4, seed=7)
    assert [TASKS.index(t) for t in first] == sorted(TASKS.index(t) for t in first)
    others = {tuple(ids(select(TASKS, sample=4, seed=s))) for s in range(20)}
    assert len(others) > 5  # the seed matters
    assert select(TASKS, sample=50) == TASKS
    assert select(TASKS, sample=0) == []
    # sampling applies after the other filters
    assert all(t.split == "test" for t in select(TASKS, split="test", sample=2, seed=3))


def test_bad_filters_are_input_errors():
    with pytest.raises(InputError, match="key=value"):
        parse_labels(["domain"])
    with pytest.raises(InputError, match="sample"):
        select(TASKS, sample=-1)
    assert parse_labels("domain = algebra") == {"domain": "algebra"}
