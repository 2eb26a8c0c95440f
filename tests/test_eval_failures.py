"""`formalbench eval` in which no attempt reached a verdict (here: the only task cannot compile
here, so preflight records it as an environment failure) says so on stderr, with the count
and the reason, and exits 1; it used to print an empty table and exit 0. Real coqc."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.records import Attempt, AttemptError, ErrorKind, Language, Task
from formalbench.pipelines.evaluate import every_attempt_failed

TASK = Task(
    id="needs_a_library",
    language=Language.coq,
    header="Require Import NoSuchLibraryHere.\n",
    formal="Theorem t : 1 = 1.\nProof.\nAdmitted.\n",
)


def _attempt(sample: int, error: AttemptError | None) -> Attempt:
    return Attempt(task_id="t", solver="whole", sample=sample, error=error)


def test_the_line_counts_every_failed_attempt_and_groups_the_reasons() -> None:
    down = AttemptError(kind=ErrorKind.model, message="endpoint refused the key")
    assert every_attempt_failed([]) is None
    assert every_attempt_failed([_attempt(0, down), _attempt(1, None)]) is None
    assert every_attempt_failed([_attempt(0, down), _attempt(1, down)]) == (
        "2 of 2 attempts failed before a verdict: model: endpoint refused the key (2)"
    )


@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
def test_a_run_with_no_verdict_at_all_exits_1_and_says_why(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(TASK.model_dump_json() + "\n", encoding="utf-8")
    run = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(tmp_path / "r"), "--quiet"])
    assert run.exit_code == 1, run.output
    # nothing was attempted (issue 30 item 7): the line says so, and that a rerun retries
    out = " ".join(run.output.split())
    assert "formalbench: error: 1 task(s) not attempted: environment:" in out
    assert "rerun the same command: they are tried again" in out
    assert "NoSuchLibraryHere" in run.output
