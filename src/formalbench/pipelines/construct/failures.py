"""Which stages of a construct run failed, for how many exercises, and why.

A run in which every model reply of a stage was unreadable used to end like a good one
(exit 0, "6 usable", `format_failures: 0`): the failures sat in the store, one per
exercise, and nothing added them up. Here they are added up from the stored records, so
the end of a run, `formalbench report` (text and `--json`) and the exit code all tell the
same thing:

- source: an exercise fails when it stopped at a format failure (the step's stored error)
  or could not be finished (a model error, from the run log's `incomplete` list);
- formal: an exercise fails when it ended with no task: its block split could not be read,
  a block never compiled, or a block was never reviewed usable (the exercise's package).

`format_failures` counts every model reply that could not be used after its re-ask: source
steps stored as format failures, and in the formal stages unreadable block splits and
reviews, and translations or rewrites with no code in them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from formalbench.core.records import Record
from formalbench.store.construct import ConstructStore
from formalbench.store.construct_formal import ConstructFormalStore
from formalbench.store.db import StoreError

REASON_CHARS = 160
MAX_REASONS = 3  # shown in a stage's line, most frequent first


class StageFailure(Record):
    """`failed` of the `total` exercises a stage worked on ended without its result."""

    stage: str  # source | formal
    failed: int
    total: int
    reasons: dict[str, int]  # reason -> exercises, most frequent first

    @property
    def whole(self) -> bool:
        """Every exercise of the stage failed (the run produced nothing past it)."""
        return self.total > 0 and self.failed == self.total

    def line(self) -> str:
        """One line: `formal: 6 of 6 exercises failed: no `thm` block in the model's plan`."""
        if len(self.reasons) == 1:
            why = next(iter(self.reasons))
        else:
            shown = list(self.reasons.items())[:MAX_REASONS]
            why = "; ".join(f"{reason} ({n})" for reason, n in shown)
            if len(self.reasons) > MAX_REASONS:
                why += f"; {len(self.reasons) - MAX_REASONS} other reason(s)"
        return f"{self.stage}: {self.failed} of {self.total} exercises failed: {why}"


def short_reason(text: str) -> str:
    """A stored error as one short line: pydantic's "1 validation error for X" preamble and
    its "For further information" links dropped, white space folded, cut at REASON_CHARS."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    kept = [
        re.sub(r"(?:the object: )?(?:Value error|Assertion failed), ", "", ln)
        for ln in lines
        if not re.match(r"\d+ validation errors? for ", ln)
        and not ln.startswith("For further information")
    ]
    one = " ".join(" ".join(kept or lines).split())
    one = re.sub(r"\s*\[type=[^\]]*\]", "", one)
    return one if len(one) <= REASON_CHARS else one[: REASON_CHARS - 1] + "…"


def _model_error(text: str) -> str:
    """A model error without its per-request details (a trailing parenthesis: the request's
    key, its last message...), so the same error on many exercises reads as one reason."""
    head, sep, _ = text.partition(" (")
    return short_reason(head if sep and len(head) >= 20 else text)


def _failure(stage: str, total: int, reasons: Iterable[str]) -> StageFailure | None:
    counted = Counter(reasons)
    if not counted:
        return None
    ordered = dict(sorted(counted.items(), key=lambda kv: (-kv[1], kv[0])))
    return StageFailure(stage=stage, failed=sum(counted.values()), total=total, reasons=ordered)


def source_failure(
    stopped: Sequence[tuple[str, str | None]], total: int, unfinished: Sequence[str]
) -> StageFailure | None:
    """`stopped`: (step, its stored error) of each exercise that stopped at a format
    failure; `unfinished`: the run log's `incomplete` lines (`ID: why`); `total`: the
    exercises the source stages were asked to do."""
    reasons = [
        f"stopped at {step}: {short_reason(error or 'format failure')}" for step, error in stopped
    ]
    reasons += [_model_error(line.split(": ", 1)[-1]) for line in unfinished]
    return _failure("source", total, reasons)


def formal_failure(results: Sequence[Mapping[str, Any]], total: int) -> StageFailure | None:
    """From the formal stages' stored packages (one per finished exercise)."""
    return _failure("formal", total, (r for r in map(_formal_reason, results) if r))


def _formal_reason(result: Mapping[str, Any]) -> str | None:
    if result.get("task"):
        return None
    meta = _metadata(result)
    status = str(result.get("status", ""))
    if status == "split_failed":
        return short_reason(meta.get("failure") or "the block split could not be read")
    failed = [b for b in meta.get("blocks", []) if b.get("failure")]
    if failed:
        block = failed[0]
        return short_reason(f"{block.get('kind', 'a')} block {status}: {block['failure']}")
    compile_ = meta.get("final_compile") or {}
    if status == "compile_failed" and compile_ and not compile_.get("compiled"):
        return "the assembled file does not compile"
    if status == "validated":
        return "the file has no hole left to prove"
    return short_reason(status or "no task")


def _metadata(result: Mapping[str, Any]) -> Mapping[str, Any]:
    files = result.get("files") or {}
    return next(
        (v for k, v in files.items() if k.endswith(".json") and not k.endswith(".trail.json")),
        {},
    )


def formal_format_failures(results: Sequence[Mapping[str, Any]]) -> int:
    """Model replies of the formal stages that could not be used (see the module doc)."""
    count = 0
    for result in results:
        if result.get("status") == "split_failed":
            count += 1
        files = result.get("files") or {}
        trail: Mapping[str, Any] = next(
            (v for k, v in files.items() if k.endswith(".trail.json")), {}
        )
        for block in trail.get("blocks", []):
            rounds = list(block.get("compiles", []))
            for review in block.get("reviews", []):
                rounds += review.get("compiles", [])
                count += bool(review.get("review_error"))
                count += sum(str(r).startswith("no code") for r in review.get("rejected", []))
            count += sum(bool(r.get("format_failure")) for r in rounds)
    return count


class RunFailures(Record):
    """The failed stages of a run and its unusable replies (see the module doc)."""

    stages: list[StageFailure]
    format_failures: int

    @property
    def whole(self) -> list[StageFailure]:
        return [f for f in self.stages if f.whole]


def formal_packages(store_path: Path) -> tuple[list[dict[str, Any]], int]:
    """(the stored packages of the finished exercises, how many exercises the formal stages
    were given) of the run whose store is `store_path`; nothing when they never ran."""
    if not store_path.is_file():
        return [], 0
    try:
        formal = ConstructFormalStore(store_path, readonly=True)
    except StoreError:  # the formal tables were never made
        return [], 0
    try:
        return formal.results(), len(formal.statuses())
    finally:
        formal.close()


def run_failures(store: ConstructStore, unfinished: Sequence[str]) -> RunFailures:
    """The failures of the run whose source store is `store` (open); `unfinished`: the
    run log's `incomplete` lines of the last session."""
    stats = store.extraction_stats() or {}
    problems = store.problems()
    stopped = [(step, _step_error(store, p.id, step)) for p, step in problems if step]
    total = int(stats.get("exercises", len(problems)))
    found = [source_failure(stopped, total, unfinished)]
    results, given = formal_packages(store.path)
    found.append(formal_failure(results, given))
    source_formats = store.step_counts().get("format_failure", 0)
    return RunFailures(
        stages=[f for f in found if f is not None],
        format_failures=source_formats + formal_format_failures(results),
    )


def _step_error(store: ConstructStore, exercise_id: str, step: str) -> str | None:
    """The error of the exercise's failed step (stored under a longer key, e.g.
    `naturalize:NMUS/NM` for the stage `naturalize`)."""
    failed = [r for _, r in store.steps(exercise_id) if r.error and r.step.startswith(step)]
    return failed[-1].error if failed else None
