"""Step 7: the funnel of the source stages per pool (Tables 5-7 of CAM-Bench).

Pools: OI, every exercise's first review; RI, the re-reviews of repaired `revise` items;
HI, the re-reviews of repaired `hold` items. Per pool: how many were accepted, revised and
held, and the histograms of the flags of the revised and of the held ones (multi-label: an
item counts once under each of its flags). `usable` is every exercise accepted at its first
review or at its re-review, `usable_fraction` its share of the exercises reviewed.
Exercises stopped by a format failure are counted by the step they stopped at.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import Field

from formalbench.core.construct import ConstructProblem, Pool, ReviewLabel
from formalbench.core.records import Record


class PoolStats(Record):
    items: int = 0
    accept: int = 0
    revise: int = 0
    hold: int = 0
    revise_reasons: dict[str, int] = Field(default_factory=dict)
    hold_reasons: dict[str, int] = Field(default_factory=dict)


class Funnel(Record):
    exercises: int = 0  # exercises that went through the source stages (stored problems)
    reviewed: int = 0  # with a first review
    accepted: int = 0  # accepted at the first review (OI)
    revised: int = 0  # sent to revise at the first review
    held: int = 0  # held at the first review
    repaired: int = 0  # repaired and re-reviewed (RI + HI)
    dropped: int = 0  # holds not repaired: the missing piece is not in the textbook
    usable: int = 0
    usable_fraction: float | None = None
    pools: dict[str, PoolStats] = Field(default_factory=dict)
    failed: dict[str, int] = Field(default_factory=dict)  # step -> exercises stopped there


def funnel(problems: Iterable[tuple[ConstructProblem, str | None]]) -> Funnel:
    pools = {pool.value: PoolStats() for pool in Pool}
    reasons: dict[str, dict[str, Counter[str]]] = {
        p: {"revise": Counter(), "hold": Counter()} for p in pools
    }
    out = Funnel()
    failed: Counter[str] = Counter()
    for problem, failed_step in problems:
        out.exercises += 1
        if failed_step:
            failed[failed_step] += 1
        out.usable += problem.usable
        for review in problem.reviews:
            stats = pools[review.pool.value]
            stats.items += 1
            setattr(stats, review.label.value, getattr(stats, review.label.value) + 1)
            if review.label != ReviewLabel.accept:
                reasons[review.pool.value][review.label.value].update(f.value for f in review.flags)
        first = problem.reviews[0] if problem.reviews else None
        if first is None:
            continue
        out.reviewed += 1
        out.accepted += first.label == ReviewLabel.accept
        out.revised += first.label == ReviewLabel.revise
        out.held += first.label == ReviewLabel.hold
        if len(problem.reviews) > 1:
            out.repaired += 1
        elif first.label == ReviewLabel.hold and failed_step is None:
            out.dropped += 1
    for name, stats in pools.items():
        stats.revise_reasons = dict(sorted(reasons[name]["revise"].items()))
        stats.hold_reasons = dict(sorted(reasons[name]["hold"].items()))
    out.pools = pools
    out.failed = dict(sorted(failed.items()))
    out.usable_fraction = out.usable / out.reviewed if out.reviewed else None
    return out
