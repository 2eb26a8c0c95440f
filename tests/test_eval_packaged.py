"""`formalbench eval D/tasks.jsonl --solver sequential` on packaged exercises (issue 9):
whole Coq files with block comments and several holes, real coqc, a replay model, and
`report` showing pass@k over repair turns beside pass@k over samples."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.records import Informal, Language, Task
from formalbench.llm.replay import RecordingModel, ScriptedCall, ScriptedModel
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig
from formalbench.store.runs import RunStore

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

# What the packaging step writes: one file per exercise, every block under its immutable
# comment, holes only in theorem proofs (a hints block has no code).
EXERCISE = """(* [BLOCK Exercise 2.4 | 1 | hints] *)
(* Unfold the definition and use linear arithmetic. *)

(* [BLOCK Exercise 2.4 | 2 | defn] *)
Definition dbl (n : nat) : nat := n + n.

(* [BLOCK Exercise 2.4 | 3 | thm] *)
Lemma dbl_zero : dbl 0 = 0.
Proof.
Admitted.

(* [BLOCK Exercise 2.4 | 4 | thm] *)
Theorem dbl_twice : forall n : nat, dbl n = 2 * n.
Proof.
Admitted.
"""
HARD = """(* [BLOCK Exercise 2.5 | 1 | defn] *)
Definition sq (n : nat) : nat := n * n.

(* [BLOCK Exercise 2.5 | 2 | thm] *)
Theorem sq_mono : forall n m : nat, n <= m -> sq n <= sq m.
Proof.
Admitted.
"""
# the model's answers, per declaration and turn: `dbl_twice` needs one repair; `sq_mono`
# is answered with `admit` every time (refused before any check: cheap, never solved)
ANSWERS = {
    "dbl_zero": ["reflexivity."],
    "dbl_twice": ["reflexivity.", "Require Import Lia. intros n. unfold dbl. lia."],
    "sq_mono": ["admit."],
}


def answer(call: ScriptedCall) -> str:
    prompt = call.messages[-1].content
    decl = re.search(r"the placeholder is in the proof of `([^`]+)`", prompt)
    assert decl is not None, prompt
    turn = re.search(r"This is repair turn (\d+)", prompt)
    tries = ANSWERS[decl.group(1)]
    return f"```coq\n{tries[min(int(turn.group(1)) if turn else 0, len(tries) - 1)]}\n```\n"


def write_tasks(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tasks = [
        Task(
            id=name,
            language=Language.coq,
            formal=text,
            source="Exercises for a test",
            informal=Informal(statement=f"Exercise {name}"),
            labels={"book": "test book", "exercise": name},
        )
        for name, text in (("ex_2_4", EXERCISE), ("ex_2_5", HARD))
    ]
    path = folder / "tasks.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    return path


def test_sequential_eval_of_packaged_exercises_end_to_end(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "D")
    replay = tmp_path / "replay.jsonl"
    # record the model's answers once (as a live model's would be), then evaluate offline
    config = EvalConfig(dataset=str(tasks), solver="sequential", workers=2, timeout=60)
    recorder = RecordingModel(ScriptedModel(answer), replay)
    run_evaluation(config, tmp_path / "recording", model=recorder)

    run = tmp_path / "run"
    args = ["eval", str(tasks), "--solver", "sequential", "--model", f"replay:{replay}"]
    result = CliRunner().invoke(app, [*args, "--run-dir", str(run), "--workers", "2", "--quiet"])
    assert result.exit_code == 0, result.output

    with RunStore(run / "run.sqlite") as store:
        (run_id,) = [r.id for r in store.runs()]
        attempts = {a.task_id: a for a in store.attempts(run_id)}
    solved = attempts["ex_2_4"]
    assert solved.verdict is not None and solved.verdict.passed, solved.verdict
    assert solved.params["hole_turns"] == [1, 2]  # dbl_twice took one repair
    assert "Admitted" not in solved.code
    assert solved.code.count("(* [BLOCK Exercise 2.4 |") == 4  # the blocks stay as packaged
    assert "Definition dbl (n : nat) : nat := n + n." in solved.code
    failed = attempts["ex_2_5"]
    assert failed.verdict is not None and not failed.verdict.passed
    assert failed.params["hole_turns"] == [33]  # a first try and 32 repair turns, all refused

    report = CliRunner().invoke(app, ["report", str(run), "--json"])
    assert report.exit_code == 0, report.output
    summary = json.loads(report.output)
    assert summary["solved"] == ["ex_2_4"]
    assert summary["pass_at_k"] == {"1": 0.5}  # over samples: n = 1
    assert summary["turn_ks"] == [1, 2, 4, 8, 16, 32]
    assert summary["pass_at_k_turns"] == {
        "1": 0.0,
        "2": 0.5,
        "4": 0.5,
        "8": 0.5,
        "16": 0.5,
        "32": 0.5,
    }
    table = CliRunner().invoke(app, ["report", str(run)])
    assert "pass@k over repair turns" in table.output
    assert "pass@k over repair turns" in (run / "report.html").read_text(encoding="utf-8")
