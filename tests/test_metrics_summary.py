"""summarize() on handcrafted runs whose numbers are computed independently here."""

from __future__ import annotations

from fractions import Fraction
from math import comb, isclose

import pytest

from formalbench.core.errors import InputError
from formalbench.core.records import (
    Attempt,
    Diagnostic,
    Reason,
    Severity,
    Task,
    TaskKind,
    TokenUsage,
    Verdict,
)
from formalbench.metrics.summary import RunSummary, summarize


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def task(tid: str, **fields) -> Task:
    return Task(id=tid, language="lean", formal="theorem x : True := sorry", **fields)


def attempts_for(tid: str, outcomes: str, tokens=(100, 20), time=0.5) -> list[Attempt]:
    """One attempt per character: P passes, H fails on a hallucinated name, T on a tactic."""
    made = []
    for i, o in enumerate(outcomes):
        message = {"H": "unknown constant 'Foo.bar'", "T": "linarith failed"}.get(o)
        made.append(
            Attempt(
                task_id=tid,
                solver="whole",
                sample=i,
                code="theorem x : True := by trivial",
                tokens=TokenUsage(prompt=tokens[0], completion=tokens[1]),
                wall_time=time,
                verdict=Verdict(
                    passed=o == "P",
                    reasons=[] if o == "P" else [Reason.compile_error],
                    diagnostics=[]
                    if o == "P"
                    else [Diagnostic(severity=Severity.error, message=message)],
                ),
            )
        )
    return made


@pytest.fixture
def run() -> tuple[list[Task], list[Attempt]]:
    tasks = [
        task("a1", split="test", labels={"domain": "algebra", "difficulty": "easy"}),
        task("a2", split="test", labels={"domain": "algebra", "difficulty": "hard"}),
        task("g1", split="valid", labels={"domain": "geometry", "difficulty": "easy"}),
        task("g2", split="valid", labels={"domain": "geometry"}, kind=TaskKind.evaluation),
        task("late", split="test", labels={"domain": "algebra"}),  # unfinished: 1 of 4
        task("none", split="test"),  # never attempted
    ]
    attempts = (
        attempts_for("a1", "PPHP")
        + attempts_for("a2", "HHHT")
        + attempts_for("g1", "TPTT", tokens=(50, 10))
        + attempts_for("g2", "HTHTH")  # more than `samples`: all five count
        + attempts_for("late", "P", time=2.0)
    )
    return tasks, attempts


def test_overall_numbers(run):
    tasks, attempts = run
    s = summarize(tasks, attempts, samples=4, run_info={"wall_time_s": 30.0, "model": "m"})
    assert (s.tasks, s.attempts, s.samples, s.evaluated) == (6, 18, 4, 4)
    assert s.solved == ["a1", "g1", "late"]
    assert s.incomplete_tasks == ["late", "none"]
    assert s.ks == [1, 2, 4]
    evaluated = [(4, 3), (4, 0), (4, 1), (5, 0)]
    for k in (1, 2, 4):
        want = sum(exact(n, c, k) for n, c in evaluated) / 4
        assert isclose(s.pass_at_k[str(k)], float(want), rel_tol=1e-12)
    assert s.pass_at_k["1"] == pytest.approx((3 / 4 + 0 + 1 / 4 + 0) / 4)


def test_tokens_and_time(run):
    tasks, attempts = run
    s = summarize(tasks, attempts, samples=4, run_info={"wall_time_s": 30.0})
    assert s.tokens_total == TokenUsage(prompt=100 * 14 + 50 * 4, completion=20 * 14 + 10 * 4)
    attempted = 5  # "none" has no attempt and is not in the mean
    assert s.tokens_mean_per_task["prompt"] == pytest.approx((100 * 14 + 50 * 4) / attempted)
    assert s.tokens_mean_per_task["total"] == pytest.approx((120 * 14 + 60 * 4) / attempted)
    per = {o.id: o for o in s.per_task}
    assert per["g1"].tokens == TokenUsage(prompt=200, completion=40)
    assert per["none"].attempts == 0
    assert s.attempt_time_s == pytest.approx(17 * 0.5 + 2.0)
    assert s.run_wall_time_s == 30.0
    assert summarize(tasks, attempts, samples=4).run_wall_time_s is None


def test_category_tables(run):
    tasks, attempts = run
    s = summarize(tasks, attempts, samples=4)
    tables = {t.field: {r.value: r for r in t.rows} for t in s.categories}
    assert list(tables) == ["split", "kind", "domain", "difficulty"]  # no source, no category
    algebra = tables["domain"]["algebra"]
    assert (algebra.tasks, algebra.evaluated, algebra.solved) == (3, 2, 2)
    want = (exact(4, 3, 2) + exact(4, 0, 2)) / 2
    assert isclose(algebra.pass_at_k["2"], float(want), rel_tol=1e-12)
    assert [r.value for r in s.categories[2].rows] == ["algebra", "geometry", "(none)"]
    none_row = tables["domain"]["(none)"]
    assert (none_row.tasks, none_row.evaluated, none_row.pass_at_k) == (1, 0, {})
    assert tables["kind"]["evaluation"].pass_at_k == {"1": 0.0, "2": 0.0, "4": 0.0}
    assert tables["split"]["valid"].solved == 1
    assert tables["difficulty"]["easy"].pass_at_k["1"] == pytest.approx((3 / 4 + 1 / 4) / 2)


def test_taxonomy_of_failed_attempts(run):
    tasks, attempts = run
    s = summarize(tasks, attempts, samples=4)
    # H: a1 1, a2 3, g2 3 = 7; T: a2 1, g1 3, g2 2 = 6
    assert s.failed_attempts == 13
    assert s.taxonomy == {"hallucinated_identifier": 7, "tactic_failure": 6}
    assert s.taxonomy_examples["hallucinated_identifier"].task_id == "a1"
    assert s.taxonomy_examples["tactic_failure"].message == "linarith failed"


def test_round_trips_through_json(run):
    tasks, attempts = run
    s = summarize(tasks, attempts, samples=4, run_info={"wall_time_s": 1.5, "seed": 7})
    again = RunSummary.model_validate_json(s.model_dump_json())
    assert again == s


def test_informal_formal_gap():
    tasks = [
        task("a", metadata={"informal_score": True}),
        task("b", labels={"informal_score": "1"}),
        task("c", metadata={"informal_score": 0.0, "formal_score": 1}),
        task("d", metadata={"informal_score": "yes"}),  # unfinished, no formal score: left out
        task("e"),  # no informal score
    ]
    attempts = attempts_for("a", "PH") + attempts_for("b", "HH") + attempts_for("c", "HH")
    attempts += attempts_for("d", "H") + attempts_for("e", "PP")
    gap = summarize(tasks, attempts, samples=2).gap
    assert gap is not None
    assert (gap.tasks, gap.formal_from_run) == (3, 2)
    assert gap.informal == pytest.approx(2 / 3)
    assert gap.formal == pytest.approx((1 + 0 + 1) / 3)
    assert gap.gap == pytest.approx(2 / 3 - 2 / 3)
    assert (gap.both, gap.informal_only, gap.formal_only, gap.neither) == (1, 1, 1, 0)
    assert summarize(tasks[4:], attempts_for("e", "PP"), samples=2).gap is None


def test_bad_input_is_named():
    with pytest.raises(InputError, match="'x'.*twice"):
        summarize([task("x"), task("x")], [], samples=1)
    with pytest.raises(InputError, match="unknown task 'ghost'"):
        summarize([task("x")], attempts_for("ghost", "P"), samples=1)
    with pytest.raises(InputError, match="'x'.*informal_score"):
        summarize([task("x", metadata={"informal_score": 3})], [], samples=1)
    with pytest.raises(InputError, match="wall_time_s"):
        summarize([task("x")], [], samples=1, run_info={"wall_time_s": "soon"})
    with pytest.raises(InputError):
        summarize([task("x")], [], samples=0)


def test_empty_run_is_reported_not_crashed():
    s = summarize([task("x")], [], samples=8)
    assert (s.evaluated, s.pass_at_k, s.incomplete_tasks, s.taxonomy) == (0, {}, ["x"], {})
