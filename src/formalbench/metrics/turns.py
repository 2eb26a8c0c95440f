"""pass@k over turns: the share of tasks solved within k repair turns (CAM-Bench App. D.4).

The sequential solver tries each hole once and repairs it from the checker's errors; an
attempt's trajectory is not a set of independent samples, so the unbiased estimator does
not apply. CAM-Bench reports instead the empirical rate s_i(k) = 1 when every hole of task
i was solved within k attempts and the whole file verified, for k in 1, 2, 4, 8, 16, 32.

Decisions where the paper is silent:
- a turn is one model call at a hole: k = 1 means every hole was closed by its first
  answer, k = 2 allows one repair per hole. The solver records the calls spent at each hole
  (`params["hole_turns"]`); an attempt is solved within k when it passed and the largest of
  them is at most k.
- with n samples per task (n independent trajectories), a task counts the share of its
  samples solved within k, so pass@k over turns is the mean over tasks of that share (with
  n = 1, CAM-Bench's (1/N) sum s_i(k)).
- only attempts that carry `hole_turns` are read (other solvers make one call per sample);
  k values beyond the turns the solver was allowed (`1 + max_turns`) are not reported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from formalbench.core.records import Attempt
from formalbench.metrics.taxonomy import is_pass

TURN_KS = (1, 2, 4, 8, 16, 32)
HOLE_TURNS = "hole_turns"


def has_turns(attempt: Attempt) -> bool:
    """Whether the attempt recorded the calls it spent per hole (the sequential solver)."""
    value = attempt.params.get(HOLE_TURNS)
    return isinstance(value, list) and all(isinstance(v, int) for v in value)


def turns_to_solve(attempt: Attempt) -> int | None:
    """The turns within which the attempt solved its task (the most calls any hole took);
    None when it did not pass or recorded no turns."""
    if not is_pass(attempt) or not has_turns(attempt):
        return None
    spent = attempt.params[HOLE_TURNS]
    return max(spent) if spent else None


def turn_ks(attempts: Sequence[Attempt]) -> list[int]:
    """The k values to report: those of `TURN_KS` the attempts' turn limit reaches."""
    limits = [
        1 + int(a.params["max_turns"])
        for a in attempts
        if has_turns(a) and isinstance(a.params.get("max_turns"), int)
    ]
    if not limits:
        return []
    most = max(limits)
    return [k for k in TURN_KS if k <= most]


def pass_at_turns(per_task: Mapping[str, Sequence[Attempt]], ks: Sequence[int]) -> dict[str, float]:
    """Mean over tasks of the share of their attempts solved within k turns, per k.

    Tasks whose attempts carry no turn record are left out; {} when none does.
    """
    shares: dict[int, list[float]] = {k: [] for k in ks}
    for attempts in per_task.values():
        counted = [a for a in attempts if has_turns(a)]
        if not counted:
            continue
        needed = [turns_to_solve(a) for a in counted]
        for k in ks:
            solved = sum(1 for t in needed if t is not None and t <= k)
            shares[k].append(solved / len(counted))
    return {str(k): math.fsum(v) / len(v) for k, v in shares.items() if v}
