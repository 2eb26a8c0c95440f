"""The Coq portfolio probe in chunks (solvers/probe_chunks.py): the same answer as one
undivided probe, later chunks on spare slots, abandoned chunks killed (real coqc)."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from formalbench.backends import sandbox
from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Attempt, Language, Task
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig
from formalbench.solvers import SolverConfig, make_solver
from formalbench.solvers.probe_chunks import MIN_CHUNK, chunk
from formalbench.store.runs import RunStore

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

COMM = "Theorem comm : forall n m : nat, n + m = m + n.\nProof.\nAdmitted.\n"
NEVER = "Theorem never : forall P Q : Prop, P -> Q.\nProof.\nAdmitted.\n"
# four that cannot prove `comm`, then `lia` (index 5) among four more
TACTICS = ["reflexivity", "assumption", "constructor", "easy", "trivial", "lia", "ring", "auto"]


def test_chunks_are_contiguous_and_not_too_small() -> None:
    assert chunk(list(range(8)), 2) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert chunk(list(range(9)), 2) == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]
    assert chunk(list(range(7)), 4) == [list(range(7))]  # fewer than 2 x MIN_CHUNK: one
    assert chunk([1, 3, 8, 9, 10, 12, 13, 14], 8) == [[1, 3, 8, 9], [10, 12, 13, 14]]
    assert all(len(c) >= MIN_CHUNK for c in chunk(list(range(40)), 16))
    assert chunk(list(range(40)), 1) == [list(range(40))]


def solve(text: str, workers: int, tactics: list[str], timeout: int = 3) -> Attempt:
    backend = CoqBackend(workers=workers, timeout=120)
    try:
        config = SolverConfig(
            tactics={Language.coq: tactics}, prefixes={Language.coq: [""]}, tactic_timeout=timeout
        )
        solver = make_solver("portfolio", StrictVerifier(backend), None, config)
        task = Task(id="t", language=Language.coq, formal=text)
        return asyncio.run(solver.solve(task, 0))
    finally:
        backend.close()


def test_a_winner_in_a_later_chunk_is_the_one_the_undivided_probe_finds() -> None:
    whole = solve(COMM, 1, TACTICS)  # one slot: one chunk, one probe
    split = solve(COMM, 2, TACTICS)  # two slots: two chunks checked at once
    for attempt in (whole, split):
        assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
        assert attempt.raw_output.splitlines() == ["hole 1 (comm): lia"]
    assert whole.params["probes"] == 1 and "speculative_probes" not in whole.params
    assert split.params["probes"] == 2 and split.params["speculative_probes"] == 1
    assert split.params["abandoned_probes"] == 0  # the second chunk decided


def test_a_hole_no_chunk_closes_fails_with_every_tactic_named() -> None:
    attempt = solve(NEVER, 2, TACTICS)
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert attempt.params["probes"] == 2
    message = attempt.verdict.diagnostics[0].message
    assert "no tactic of the portfolio closed the goal" in message
    assert f"(tried {', '.join(TACTICS)})" in message


def test_a_chunk_after_the_winner_is_killed_not_left_running() -> None:
    # chunk 0 closes the goal at once; chunk 1 would spin for 4 x 60 s
    tactics = ["lia", "easy", "auto", "trivial"] + [f"do {i} (repeat idtac)" for i in range(1, 5)]
    backend = CoqBackend(workers=2, timeout=300)
    try:
        config = SolverConfig(
            tactics={Language.coq: tactics}, prefixes={Language.coq: [""]}, tactic_timeout=60
        )
        solver = make_solver("portfolio", StrictVerifier(backend), None, config)
        task = Task(id="t", language=Language.coq, formal=COMM)
        attempt = asyncio.run(solver.solve(task, 0))
        assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
        assert attempt.params["speculative_probes"] == 1
        assert attempt.params["abandoned_probes"] == 1
        deadline = time.monotonic() + 5
        while sandbox.live_count() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sandbox.live_count() == 0  # the spinning coqc was killed, its slot free
    finally:
        backend.close()


def test_a_run_splits_probes_only_near_its_end(tmp_path: Path) -> None:
    never2 = NEVER.replace("never", "never2")
    tasks = [Task(id=n, language=Language.coq, formal=t) for n, t in (("a", NEVER), ("b", never2))]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    config = EvalConfig(dataset=str(data), workers=2, timeout=60, tactics=TACTICS)
    run_evaluation(config, tmp_path / "run")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        (run,) = store.runs()
        probes = {a.task_id: a.params["probes"] for a in store.attempts(run.id)}
    # "a" starts while "b" still waits: mid-run, one undivided probe; "b" is the last to
    # start, so a long probe of it would end the run alone: it is split over both slots
    assert probes == {"a": 1, "b": 2}
