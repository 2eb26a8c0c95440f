"""The kernel identity check's fast path (real coqc): a candidate whose file is the
original's byte for byte up to the end of the target's statement sentence (as coqc
delimited it), followed by an ASCII blank, is not checked by the third file; anything else
is. The rule itself is tested on a real compiled original, the verdicts end to end."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_identity import CoqIdentity, same_statement
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Reason

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

HEAD = "Definition x := 2.\n(* the task *)\nTheorem t : x + 3 = 5.\n"
ORIGINAL = HEAD + "Proof.\nAdmitted.\n"
PROOF = "Proof. reflexivity. Qed.\n"
FALSE = "Theorem t : 2 + 3 = 6.\nProof.\nAdmitted.\n"  # 2 + 3 is 5
REDEFINED = "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n"


@pytest.fixture(scope="module")
def backend():
    with CoqBackend(workers=1, timeout=60) as coq:
        yield coq


@pytest.fixture(scope="module")
def verifier(backend: CoqBackend) -> StrictVerifier:
    return StrictVerifier(backend)


@pytest.fixture(scope="module")
def build(backend: CoqBackend):
    built = CoqIdentity(backend).original(ORIGINAL, None, 60)
    assert built.folder is not None, built.problem
    return built


START = ORIGINAL.index("Theorem")


@pytest.mark.parametrize(
    "candidate",
    [HEAD + PROOF, HEAD.rstrip("\n"), HEAD[:-1] + " " + PROOF, HEAD[:-1] + "\t" + PROOF],
)
def test_same_statement_with_a_blank_or_the_end_after_it(build, candidate: str) -> None:
    assert same_statement(build, START, candidate, "t")


@pytest.mark.parametrize(
    "candidate",
    [
        HEAD.replace("x + 3", "x + 4") + PROOF,  # one byte of the statement
        HEAD.replace(":= 2", ":= 3") + PROOF,  # one byte of the context
        HEAD.replace("task", "tasks") + PROOF,  # even inside a comment
        "Require Import Arith.\n" + HEAD + PROOF,  # a command before it
        HEAD[:-1] + "\u00a0" + PROOF,  # Coq does not end a sentence at `.` + U+00A0
        HEAD[:-1] + "x" + PROOF,
        HEAD[:-2] + "\n",  # the statement cut short (no final `.`)
        HEAD + "Proof.\nAbort.\n" + REDEFINED,  # the proof abandoned, `t` stated again
        HEAD + "Proof.\nReset t.\n" + REDEFINED,
        HEAD + "Proof. reflexivity. Defined.\n",  # (`Defined u` would rename the proof)
    ],
)
def test_no_fast_path_when_anything_may_differ(build, candidate: str) -> None:
    assert not same_statement(build, START, candidate, "t")


def test_a_misplaced_declaration_start_is_not_trusted(build) -> None:
    assert not same_statement(build, START + 3, HEAD + PROOF, "t")  # inside the sentence
    assert not same_statement(build, 0, HEAD + PROOF, "t")  # `x`'s sentence, not `t`'s


def test_unchanged_statement_skips_the_third_file(verifier: StrictVerifier) -> None:
    kernel = verifier.coq_identity
    fast, full = kernel.fast_paths, kernel.kernel_checks
    assert verifier.verify(ORIGINAL, HEAD + PROOF).passed
    assert (kernel.fast_paths, kernel.kernel_checks) == (fast + 1, full)
    # a helper added before the statement: the third file decides (and accepts)
    helper = "Lemma h : True.\nProof. exact I. Qed.\n"
    assert verifier.verify(ORIGINAL, helper + HEAD + PROOF).passed
    assert (kernel.fast_paths, kernel.kernel_checks) == (fast + 1, full + 1)


def test_an_admitted_candidate_on_the_fast_path_is_refused(verifier: StrictVerifier) -> None:
    """The fast path skips only the type comparison: the candidate's axioms are still read."""
    kernel = verifier.coq_identity
    fast = kernel.fast_paths
    _, findings = verifier.assistant_layer(ORIGINAL, ORIGINAL, ["t"], None)
    assert kernel.fast_paths == fast + 1
    assert Reason.disallowed_axiom in {f.reason for f in findings}


@pytest.mark.parametrize("undo", ["Abort.", "Reset t.", "Abort All."])
def test_a_proof_abandoned_and_restated_is_refused(verifier: StrictVerifier, undo: str) -> None:
    candidate = FALSE.replace("Admitted.", undo + "\n") + REDEFINED
    targets = verifier.targets(FALSE)
    result, findings = verifier.assistant_layer(FALSE, candidate, targets, None)
    assert result.compiled, result.diagnostics  # coqc accepts it ...
    assert Reason.statement_changed in {f.reason for f in findings}  # ... the kernel does not


def test_a_target_in_a_section_takes_the_kernel_path(verifier: StrictVerifier) -> None:
    """A section's `t` gets its final type at `End` (variables its proof uses are added)."""
    original = (
        "Section S.\nVariable h : False.\nTheorem t : 2 + 3 = 6.\nProof.\nAdmitted.\nEnd S.\n"
    )
    candidate = original.replace("Admitted.", "destruct h. Qed.")
    kernel = verifier.coq_identity
    fast = kernel.fast_paths
    verifier.assistant_layer(original, candidate, verifier.targets(original), None)
    assert kernel.fast_paths == fast


def test_coq_text_findings_survive_a_compiling_candidate(backend: CoqBackend) -> None:
    """The Lean-only deferral (`settle_deferred`) must never drop a Coq finding: with
    `compile_always` the candidate compiles and the changed statement is still refused."""
    strict = StrictVerifier(backend, compile_always=True)
    candidate = FALSE.replace("6.", "5.").replace("Admitted.", "reflexivity. Qed.")
    for verdict in (
        strict.verify(FALSE, candidate),
        asyncio.run(strict.averify(FALSE, candidate)),
    ):
        assert not verdict.passed
        assert Reason.statement_changed in verdict.reasons


def test_fast_path_on_top_of_a_shared_context(verifier: StrictVerifier) -> None:
    """A task-declared inductive: both sides compile on `FbContext`; the offsets of the
    split file are the ones compared."""
    original = (
        "Inductive color := red | green.\n"
        "Theorem t : forall c : color, c = red \\/ c = green.\nProof.\nAdmitted.\n"
    )
    kernel = verifier.coq_identity
    fast = kernel.fast_paths
    assert verifier.verify(original, original.replace("Admitted.", "destruct c; auto. Qed.")).passed
    assert kernel.fast_paths == fast + 1
    proof = "destruct c; auto. Qed."
    swapped = original.replace("Admitted.", proof).replace("red \\/ c = green", "green \\/ c = red")
    _, findings = verifier.assistant_layer(original, swapped, ["t"], None)
    assert Reason.statement_changed in {f.reason for f in findings}
    assert kernel.fast_paths == fast + 1
