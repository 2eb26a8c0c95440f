"""RunStore: round trip, resume without duplicates, refused mixes, schema checks, threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from formalbench.core.records import Attempt, AttemptError, Language, Reason, Task, Verdict
from formalbench.store import RunMismatchError, RunStore, StoreError, connect, integrity_ok

CONFIG = {"dataset": "example-coq", "solver": "portfolio", "backend": "coq", "samples": 2}
VERSIONS = {"backend": "coqc 8.16.1", "formalbench": "0.1.0"}


def _tasks(n: int = 3) -> list[Task]:
    return [
        Task(id=f"t{i}", language=Language.coq, formal=f"Theorem t{i} : True.\nProof.\nAdmitted.\n")
        for i in range(n)
    ]


def _attempt(task_id: str, sample: int, passed: bool = True, solver: str = "portfolio") -> Attempt:
    reasons = [] if passed else [Reason.compile_error]
    return Attempt(
        task_id=task_id,
        solver=solver,
        sample=sample,
        code=f"(* {task_id}/{sample} *)",
        verdict=Verdict(passed=passed, reasons=reasons),
    )


@pytest.fixture
def store(tmp_path: Path):
    with RunStore(tmp_path / "run" / "run.sqlite") as opened:
        yield opened


def test_round_trip(store: RunStore):
    run_id = store.open_run(CONFIG, VERSIONS)
    tasks = _tasks()
    assert store.add_tasks(run_id, tasks) == 3
    written = [_attempt("t2", 0), _attempt("t0", 1, passed=False), _attempt("t0", 0)]
    for attempt in written:
        assert store.record_attempt(run_id, attempt)
    got = list(store.attempts(run_id))
    # task order of the run, then sample: not insertion order
    assert [(a.task_id, a.sample) for a in got] == [("t0", 0), ("t0", 1), ("t2", 0)]
    assert got[1] == written[1]
    assert store.tasks(run_id) == tasks
    info = store.get_run(run_id)
    assert info.config == CONFIG and info.versions == VERSIONS and info.status == "running"
    assert store.counts(run_id) == {"tasks": 3, "attempts": 3, "passed": 2, "unverified": 0}
    store.set_status(run_id, "finished")
    assert store.get_run(run_id).status == "finished"
    with pytest.raises(StoreError, match="unknown run status"):
        store.set_status(run_id, "done-ish")


def test_resume_never_records_twice(tmp_path: Path):
    path = tmp_path / "run.sqlite"
    with RunStore(path) as first:
        run_id = first.open_run(CONFIG, VERSIONS)
        first.add_tasks(run_id, _tasks())
        first.record_attempt(run_id, _attempt("t0", 0))
        first.record_attempt(run_id, _attempt("t1", 0, passed=False))
    with RunStore(path) as again:
        assert again.open_run(dict(CONFIG), VERSIONS) == run_id  # same config: resume
        assert again.done_samples(run_id) == {("t0", 0), ("t1", 0)}
        assert again.add_tasks(run_id, _tasks()) == 0
        assert not again.record_attempt(run_id, _attempt("t0", 0, passed=False))
        assert again.record_attempts(run_id, [_attempt("t0", 0), _attempt("t2", 0)]) == 1
        assert [a.verdict.passed for a in again.attempts(run_id, task_id="t0")] == [True]
        assert again.get_run(run_id).n_attempts == 3
        assert len(again.get_run(run_id).history) == 1


def test_forget_retryable_takes_back_only_machinery_failures(store: RunStore):
    run_id = store.open_run(CONFIG, VERSIONS)
    store.add_tasks(run_id, _tasks(3))
    crashed = _attempt("t2", 0, passed=False).model_copy(
        update={"verdict": Verdict(passed=False, reasons=[Reason.backend_crash])}
    )
    written = [
        _attempt("t0", 0).model_copy(update={"error": None}),
        _attempt("t0", 1, passed=False).model_copy(
            update={"error": AttemptError.parse("model: HTTP 503")}
        ),
        _attempt("t1", 0, passed=False).model_copy(
            update={"error": AttemptError.parse("backend: coqc missing")}
        ),
        _attempt("t1", 1, passed=False).model_copy(
            update={"error": AttemptError.parse("format: no code block")}
        ),
        _attempt("t1", 1, solver="whole").model_copy(
            update={"error": AttemptError.parse("model: timeout")}
        ),
        _attempt("t2", 1, passed=False).model_copy(
            update={"error": AttemptError.parse("budget: task budget")}
        ),
        crashed,
    ]
    assert store.record_attempts(run_id, written) == 7
    assert store.forget_retryable(run_id, solver="portfolio") == 3
    left = {(a.task_id, a.solver, a.sample) for a in store.attempts(run_id)}
    assert left == {
        ("t0", "portfolio", 0),
        ("t1", "portfolio", 1),
        ("t1", "whole", 1),  # another solver's attempts stay
        ("t2", "portfolio", 1),  # a spent budget is the prover's failure
    }
    info = store.get_run(run_id)
    assert info.n_attempts == 4 == store.counts(run_id)["attempts"]
    assert info.history[-1]["forgotten_attempts"] == 3
    assert store.done_samples(run_id, solver="portfolio") == {("t0", 0), ("t1", 1), ("t2", 1)}
    assert store.forget_retryable(run_id, solver="portfolio") == 0  # nothing left to take
    assert len(store.get_run(run_id).history) == 1
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.forget_retryable("nope")


def test_config_mismatch_is_refused_with_the_keys(tmp_path: Path):
    path = tmp_path / "run.sqlite"
    with RunStore(path) as store:
        run_id = store.open_run(CONFIG, VERSIONS)
        with pytest.raises(RunMismatchError, match=r"solver: 'portfolio' -> 'whole'"):
            store.open_run({**CONFIG, "solver": "whole"}, VERSIONS)
        with pytest.raises(RunMismatchError, match="model: None -> 'gpt'"):
            store.open_run({**CONFIG, "model": "gpt"}, VERSIONS)
        with pytest.raises(RunMismatchError, match="samples: 2 -> 1 .may grow, never shrink"):
            store.open_run({**CONFIG, "samples": 1}, VERSIONS)
        with pytest.raises(RunMismatchError, match="versions.backend"):
            store.open_run(CONFIG, {**VERSIONS, "backend": "coqc 8.18.0"})
        # harmless changes resume the same run: more samples, more workers, a newer formalbench
        grown = {**CONFIG, "samples": 4, "workers": 8}
        assert store.open_run(grown, {**VERSIONS, "formalbench": "0.2.0"}) == run_id
        assert store.get_run(run_id).config["samples"] == 4
        # an explicit run id makes a second run in the same file
        other = store.open_run({**CONFIG, "solver": "whole"}, VERSIONS, run_id="second")
        assert other == "second" and {r.id for r in store.runs()} == {run_id, "second"}


def test_changed_task_and_unregistered_task(store: RunStore):
    run_id = store.open_run(CONFIG, VERSIONS)
    store.add_tasks(run_id, _tasks(1))
    changed = _tasks(1)[0].model_copy(update={"formal": "Theorem t0 : False.\nAdmitted.\n"})
    with pytest.raises(RunMismatchError, match="task 't0'.*differs"):
        store.add_tasks(run_id, [changed])
    with pytest.raises(StoreError, match="has no task t9"):
        store.record_attempt(run_id, _attempt("t9", 0))
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.add_tasks("nope", _tasks(1))
    assert store.counts(run_id)["attempts"] == 0


def test_unknown_schema_and_not_a_database(tmp_path: Path):
    path = tmp_path / "run.sqlite"
    RunStore(path).close()
    conn = connect(path)
    conn.execute("UPDATE schema_version SET version = 99 WHERE component = 'runs'")
    conn.close()
    with pytest.raises(StoreError, match="runs schema version 99 was written by a newer"):
        RunStore(path)
    junk = tmp_path / "junk.sqlite"
    junk.write_text("this is not a database, just text " * 100)
    with pytest.raises(StoreError, match="junk.sqlite"):
        RunStore(junk)
    with pytest.raises(StoreError, match="is a folder"):
        RunStore(tmp_path)


def test_threads_write_concurrently_without_loss_or_duplicates(store: RunStore):
    run_id = store.open_run(CONFIG, VERSIONS)
    store.add_tasks(run_id, _tasks(20))
    inserted = [0] * 8
    barrier = threading.Barrier(8)

    def worker(index: int) -> None:
        barrier.wait()
        for i in range(20):
            for sample in range(4):  # every thread writes the same 80 attempts
                if store.record_attempt(run_id, _attempt(f"t{i}", sample)):
                    inserted[index] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(inserted) == 80
    assert len(store.done_samples(run_id)) == 80
    assert store.get_run(run_id).n_attempts == 80


def test_two_processes_share_one_file(tmp_path: Path):
    """A second connection (as another process would hold) sees and respects the rows."""
    path = tmp_path / "run.sqlite"
    with RunStore(path) as one, RunStore(path) as two:
        run_id = one.open_run(CONFIG, VERSIONS)
        assert two.open_run(CONFIG, VERSIONS) == run_id
        one.add_tasks(run_id, _tasks(1))
        assert one.record_attempt(run_id, _attempt("t0", 0))
        assert not two.record_attempt(run_id, _attempt("t0", 0))
        assert two.done_samples(run_id) == {("t0", 0)}
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert integrity_ok(conn)
