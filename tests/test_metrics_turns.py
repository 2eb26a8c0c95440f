"""pass@k over repair turns (CAM-Bench App. D.4) beside the unbiased pass@k over samples:
computed from the turns each attempt recorded, shown by `report` (table, JSON, HTML)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from formalbench.core.records import Attempt, Task, Verdict
from formalbench.metrics.summary import summarize
from formalbench.metrics.turns import pass_at_turns, turn_ks, turns_to_solve
from formalbench.reporting.html import render_html
from formalbench.reporting.tables import print_report, report_tables


def attempt(tid: str, sample: int, passed: bool, hole_turns: list[int] | None, max_turns=32):  # noqa: ANN001, ANN201
    params: dict = {"max_turns": max_turns}
    if hole_turns is not None:
        params["hole_turns"] = hole_turns
    return Attempt(
        task_id=tid,
        solver="sequential",
        sample=sample,
        params=params,
        turns=sum(hole_turns or [1]),
        verdict=Verdict(passed=passed),
    )


def task(tid: str) -> Task:
    return Task(id=tid, language="coq", formal="Theorem x : True.\nProof.\nAdmitted.\n")


def test_an_attempt_is_solved_within_the_turns_of_its_slowest_hole() -> None:
    assert turns_to_solve(attempt("a", 0, True, [1, 5, 2])) == 5
    assert turns_to_solve(attempt("a", 0, False, [1, 5, 2])) is None  # failed: never
    assert turns_to_solve(attempt("a", 0, True, None)) is None  # no record of turns


def test_pass_at_turns_is_the_share_solved_within_k() -> None:
    per_task = {
        "first_try": [attempt("first_try", 0, True, [1, 1])],
        "third_turn": [attempt("third_turn", 0, True, [3])],
        "never": [attempt("never", 0, False, [33])],
        # two trajectories: one solved at turn 9, one not at all -> half of a task from k=16
        "half": [attempt("half", 0, True, [9]), attempt("half", 1, False, [2, 33])],
    }
    ks = turn_ks([a for group in per_task.values() for a in group])
    assert ks == [1, 2, 4, 8, 16, 32]
    table = pass_at_turns(per_task, ks)
    assert table == pytest.approx(
        {"1": 1 / 4, "2": 1 / 4, "4": 2 / 4, "8": 2 / 4, "16": 2.5 / 4, "32": 2.5 / 4}
    )
    values = [table[str(k)] for k in ks]
    assert values == sorted(values)  # more turns never solve fewer tasks


def test_k_stops_at_the_turns_the_solver_was_allowed() -> None:
    attempts = [attempt("a", 0, True, [2], max_turns=3)]  # 4 calls per hole at most
    assert turn_ks(attempts) == [1, 2, 4]
    assert turn_ks([attempt("a", 0, True, None)]) == []  # other solvers: no table


def test_summary_and_report_show_both_kinds_of_pass_at_k(tmp_path: Path) -> None:
    tasks = [task("a"), task("b"), task("late")]
    attempts = [
        attempt("a", 0, True, [1]),
        attempt("b", 0, True, [4, 2]),
        attempt("late", 0, False, [33]),
    ]
    summary = summarize(tasks, attempts, samples=1)
    assert summary.pass_at_k == pytest.approx({"1": 2 / 3})  # over samples: n = 1
    assert summary.pass_at_k_turns["1"] == pytest.approx(1 / 3)
    assert summary.pass_at_k_turns["4"] == pytest.approx(2 / 3)
    assert json.loads(summary.model_dump_json())["turn_ks"] == [1, 2, 4, 8, 16, 32]
    (table,) = [t for t in report_tables(summary) if t.key == "pass_at_k_turns"]
    assert table.headers[:3] == ["pass@1", "pass@2", "pass@4"]
    assert table.rows[0][:3] == ["33.3%", "33.3%", "66.7%"]
    console = Console(record=True, width=160)
    print_report(summary, console)
    text = console.export_text()
    assert "pass@k over repair turns" in text and "66.7%" in text
    page = render_html(summary)
    assert "pass@k over repair turns" in page and "66.7%" in page


def test_a_run_without_turn_records_has_no_turn_table() -> None:
    summary = summarize([task("a")], [attempt("a", 0, True, None)], samples=1)
    assert summary.pass_at_k_turns == {} and summary.turn_ks == []
    assert "pass_at_k_turns" not in {t.key for t in report_tables(summary)}
    assert "repair turns" not in render_html(summary)
