"""An exported task is a task: `formalbench review D --export FILE` turns the accepted text into
something left to prove (every theorem's proof a hole, the complete text kept as
`metadata.reference_solution`), so `formalbench eval FILE` runs on it. It used to refuse the
file ("its proof is finished") whenever the accepted candidate came with a proof.
Round trip with real coqc: accepted with a proof -> export -> eval (the portfolio solves it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.core.records import Language
from formalbench.dashboard.export import as_task_text, hole_proofs
from formalbench.datasets.loader import load_tasks
from formalbench.store.review import ReviewStore
from test_dashboard_views import make_run

COQ_PROVED = """From Coq Require Import Lia.

(* n + 0 is n *)
Theorem add_zero (n : nat) : n + 0 = n.
Proof.
  lia.
Qed.
"""
COQ_ONLY_A_DEFINITION = "Definition seven : nat := 7.\n"


def test_coq_proofs_become_holes_and_definitions_stay() -> None:
    text = (
        "Definition d : nat := 2.\n"
        "Lemma a : d = 2.\nProof. reflexivity. Qed.\n"
        "Lemma b : 1 = 1 := eq_refl.\n"
        "Theorem c : True.\nProof.\nAdmitted.\n"
        "Example e : 2 = 2. Proof using. auto. Defined.\n"
    )
    assert hole_proofs(text, Language.coq) == (
        "Definition d : nat := 2.\n"
        "Lemma a : d = 2.\nProof.\nAdmitted.\n"
        "Lemma b : 1 = 1.\nProof.\nAdmitted.\n"
        "Theorem c : True.\nProof.\nAdmitted.\n"  # a hole already: untouched
        "Example e : 2 = 2.\nProof.\nAdmitted.\n"
    )


def test_lean_proofs_become_holes_and_definitions_stay() -> None:
    text = (
        "def f : Nat := 3\n"
        "theorem t (n : Nat) : n + 0 = n := by\n  simp\n"
        "  theorem u : f = 3 := rfl\n"
        "example : 1 = 1 := by sorry\n"
    )
    assert hole_proofs(text, Language.lean) == (
        "def f : Nat := 3\n"
        "theorem t (n : Nat) : n + 0 = n := by\n  sorry\n"
        "  theorem u : f = 3 := by\n    sorry\n"
        "example : 1 = 1 := by sorry\n"
    )


def test_the_reference_solution_is_kept_only_when_it_is_complete() -> None:
    task, reference = as_task_text(COQ_PROVED, Language.coq)
    assert reference == COQ_PROVED and "lia" not in task and "Admitted." in task
    partial = COQ_PROVED + "Lemma more : 1 = 1.\nProof.\nAdmitted.\n"
    assert as_task_text(partial, Language.coq)[1] is None  # not a solution: it has a hole
    assert as_task_text(COQ_ONLY_A_DEFINITION, Language.coq) == (COQ_ONLY_A_DEFINITION, None)


def _accept(run: Path, problem_id: str, code: str) -> None:
    with ReviewStore(run / "formalize.sqlite") as store:
        store.decide(
            ReviewDecision(
                problem_id=problem_id,
                status=ReviewStatus.accepted,
                candidate_id=f"{problem_id}/model-a/0",
                code=code,
                edited=True,
                reviewer="ana",
            ),
            based_on=0,
        )


@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
def test_an_accepted_proof_is_exported_as_a_task_that_eval_runs(tmp_path: Path) -> None:
    from formalbench.pipelines.evaluate import run_evaluation
    from formalbench.pipelines.run_config import EvalConfig
    from formalbench.pipelines.run_files import load_summary

    run = make_run(tmp_path / "run")
    _accept(run, "alg-add-zero", COQ_PROVED)
    _accept(run, "nt-divides", COQ_ONLY_A_DEFINITION)  # nothing left to prove
    out = tmp_path / "accepted.jsonl"
    result = CliRunner().invoke(app, ["review", str(run), "--export", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 1 accepted task to" in result.output
    assert "warning: nt-divides: not exported: it states no theorem" in result.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["header"] + row["formal"] == COQ_PROVED.replace(
        "Proof.\n  lia.\nQed.", "Proof.\nAdmitted."
    )
    assert "lia." in row["metadata"]["reference_solution"]
    assert load_tasks(str(out)).tasks[0].id == "alg-add-zero"  # no "its proof is finished"
    config = EvalConfig(dataset=str(out), tactics=["lia"], workers=1, timeout=60)
    outcome = run_evaluation(config, tmp_path / "eval")
    assert outcome.tasks == 1 and outcome.new_attempts == 1
    assert load_summary(tmp_path / "eval").solved == ["alg-add-zero"]
