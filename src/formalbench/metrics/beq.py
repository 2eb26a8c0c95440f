"""BEq@k: a problem passes if at least one of k of its candidates is BEq-equivalent to the
reference. With n candidates of which c pass, the unbiased estimate is pass@k over (n, c),
so BEq@k is pass@k with "passes BEq" as the success (the BEq repository does not define it;
later papers use it this way)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from formalbench.metrics.passk import ks_for, mean_pass_at_k


def beq_at_k(results: Mapping[str, Sequence[bool]], k: int) -> float:
    """Mean over problems of the chance that one of k candidates (drawn from each problem's
    judged candidates) passes BEq."""
    return mean_pass_at_k(((len(v), sum(map(bool, v))) for v in results.values()), k)


def beq_table(results: Mapping[str, Sequence[bool]]) -> dict[str, float]:
    """BEq@k for k = 1, 2, 4, ... up to the smallest candidate count, plus the BEq count
    (problems with at least one passing candidate)."""
    smallest = min((len(v) for v in results.values()), default=0)
    table = {f"beq@{k}": beq_at_k(results, k) for k in (ks_for(smallest) if smallest else [])}
    table["beq_count"] = float(sum(1 for v in results.values() if any(v)))
    return table
