"""Tasks with several holes: solved only when every hole is filled and the whole file
verifies, whichever solver fills them (real coqc, scripted models)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import ErrorKind, Language, Reason, Task
from formalbench.llm.replay import ScriptedModel
from formalbench.metrics.turns import turns_to_solve
from formalbench.solvers import SolverConfig, make_solver

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

# a packaged exercise: block comments, a definition, three theorem holes
BLOCKS = """Require Import Arith Lia.

(* [BLOCK Exercise 1.2 | 1 | defn] *)
Definition dbl (n : nat) : nat := n + n.

(* [BLOCK Exercise 1.2 | 2 | thm] *)
Lemma dbl_one : dbl 1 = 2.
Proof.
Admitted.

(* [BLOCK Exercise 1.2 | 3 | thm] *)
Theorem dbl_twice : forall n : nat, dbl n = 2 * n.
Proof.
Admitted.

(* [BLOCK Exercise 1.2 | 4 | thm] *)
Theorem dbl_mono : forall n m : nat, n <= m -> dbl n <= dbl m.
Proof.
Admitted.
"""
TASK = Task(id="ex_1_2", language=Language.coq, formal=BLOCKS)
GOOD = ["reflexivity.", "intros n. unfold dbl. lia.", "intros n m h. unfold dbl. lia."]


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    backend = CoqBackend(workers=2, timeout=60)
    yield StrictVerifier(backend)
    backend.close()


def block(body: str) -> str:
    return f"```coq\n{body}\n```\n"


def run(name: str, verifier: StrictVerifier, model: ScriptedModel, **config: int):  # noqa: ANN201
    solver = make_solver(name, verifier, model, SolverConfig(**config))
    return asyncio.run(solver.solve(TASK, 0))


def test_sequential_fills_every_hole_and_records_the_turns_each_took(
    verifier: StrictVerifier,
) -> None:
    # hole 2 is repaired once (`reflexivity` cannot prove a quantified goal)
    model = ScriptedModel([block(GOOD[0]), block("reflexivity."), block(GOOD[1]), block(GOOD[2])])
    attempt = run("sequential", verifier, model)
    assert attempt.verdict is not None and attempt.verdict.passed, attempt.verdict
    assert attempt.params["hole_turns"] == [1, 2, 1] and attempt.turns == 4
    assert turns_to_solve(attempt) == 2
    assert "Admitted" not in attempt.code and attempt.code.count("(* [BLOCK") == 4


def test_sequential_stops_at_a_hole_it_cannot_close_and_the_task_fails(
    verifier: StrictVerifier,
) -> None:
    model = ScriptedModel([block(GOOD[0]), block("reflexivity."), block("reflexivity.")])
    attempt = run("sequential", verifier, model, max_turns=1)
    assert len(model.calls) == 3  # the third hole is never asked for
    assert attempt.params["hole_turns"] == [1, 2]
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert turns_to_solve(attempt) is None
    assert attempt.code.count("Admitted.") == 1  # the last hole is still open


def test_whole_answer_must_prove_every_target(verifier: StrictVerifier) -> None:
    lemma = "Lemma dbl_one : dbl 1 = 2.\nProof. reflexivity. Qed."
    twice = f"Theorem dbl_twice : forall n : nat, dbl n = 2 * n.\nProof. {GOOD[1]} Qed."
    mono = f"Theorem dbl_mono : forall n m : nat, n <= m -> dbl n <= dbl m.\nProof. {GOOD[2]} Qed."
    partial = run("whole", verifier, ScriptedModel([block(f"{lemma}\n{twice}")]))
    assert partial.error is not None and partial.error.kind == ErrorKind.format_
    assert "dbl_mono" in partial.error.message
    assert partial.verdict is not None and not partial.verdict.passed
    admitted = f"{lemma}\n{twice}\nTheorem dbl_mono : forall n m : nat, n <= m -> dbl n <= dbl m.\nProof. Admitted."
    escape = run("whole", verifier, ScriptedModel([block(admitted)]))
    assert escape.verdict is not None and not escape.verdict.passed
    assert Reason.forbidden_construct in escape.verdict.reasons
    full = run("whole", verifier, ScriptedModel([block(f"{lemma}\n{twice}\n{mono}")]))
    assert full.verdict is not None and full.verdict.passed, full.verdict


def test_the_verifier_refuses_a_file_with_one_hole_left(verifier: StrictVerifier) -> None:
    proofs = iter(GOOD)
    filled = BLOCKS
    for _ in range(2):  # the first two holes only
        filled = filled.replace("Proof.\nAdmitted.", f"Proof.\n{next(proofs)}\nQed.", 1)
    verdict = verifier.verify(BLOCKS, filled)
    assert not verdict.passed and verdict.reasons == [Reason.forbidden_construct]
    complete = filled.replace("Proof.\nAdmitted.", f"Proof.\n{next(proofs)}\nQed.", 1)
    assert verifier.verify(BLOCKS, complete).passed


def test_a_lean_file_with_two_sorries_in_one_proof_needs_both_filled() -> None:
    original = (
        "import Mathlib\n\n/- [BLOCK Ex 1 | 1 | thm] -/\n"
        "theorem t (a b : ℕ) : a + b = b + a ∧ a * b = b * a := by\n"
        "  constructor\n  · sorry\n  · sorry\n"
    )
    one = original.replace("sorry", "exact Nat.add_comm a b", 1)
    verifier = StrictVerifier(None, language=Language.lean)
    assert [f.subject for f in verifier.static_findings(original, one)] == ["sorry"]
    both = one.replace("sorry", "exact Nat.mul_comm a b", 1)
    assert verifier.static_findings(original, both) == []
