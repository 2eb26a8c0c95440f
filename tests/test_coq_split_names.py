"""Proofs that broke issue 18's shared-context split (R4, R5), under the kernel route (issue 28).

`destruct` names a record's hypotheses after its fields, avoiding the names of constants of
the file being compiled but not those of an imported library: `f0` in the real file, `f`
once the record was in issue 18's `FbContext` (coq-topology NeighborhoodBases.v, Filters.v).
Both sides are now compiled whole as `Candidate`, so these proofs compile as written and are
decided on kernel objects; what issue 18 left `undecided` is decided (real coqc).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Reason

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

CONTEXT = (
    "Parameter p : nat.\nParameter q : 0 = 0.\n"
    "Record R (n : nat) : Prop := { f : n = n; g : True }.\n"
    "Definition r0 : R 0 := {| f := eq_refl; g := I |}.\n"
)
STATEMENT = "Theorem t : 0 = 0."
# `f0` is the hypothesis `destruct` makes here; on top of `FbContext` it is `f`
GENUINE = CONTEXT + STATEMENT + "\nProof. destruct r0. exact f0. Qed.\n"
TASK = CONTEXT + STATEMENT + "\nAdmitted.\n"


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    with CoqBackend(workers=2, timeout=60) as backend:
        yield StrictVerifier(backend)


def test_a_proof_using_a_generated_name_passes_on_the_whole_route(
    verifier: StrictVerifier,
) -> None:
    verdict = verifier.verify(TASK, GENUINE)
    assert verdict.passed, verdict.findings
    assert not verifier.verify(TASK, TASK).passed


def test_an_original_that_breaks_split_is_decided_whole(verifier: StrictVerifier) -> None:
    # the original's own later proof uses `f0` (it is compiled up to its last target)
    task = CONTEXT + "Lemma l : 0 = 0.\nProof. destruct r0. exact f0. Qed.\n" + TASK[len(CONTEXT) :]
    verdict = verifier.verify(task, task.replace("Admitted.", "Proof. reflexivity. Qed."))
    assert verdict.passed, verdict.findings


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        # another statement about the task's postulate
        (
            CONTEXT + "Theorem t : p = p.\nProof. destruct r0. clear f0. reflexivity. Qed.\n",
            Reason.statement_changed,
        ),
        # the shadowed name is another constant, whatever the text says
        (
            CONTEXT
            + "Module M.\nDefinition p := 0.\nEnd M.\nImport M.\n"
            + "Theorem t : 0 = 0 /\\ p = 0.\nProof. destruct r0. clear f0. split; reflexivity. Qed.\n",
            Reason.statement_changed,
        ),
        # the task's postulate made a definition where the statement uses it
        (
            GENUINE.replace("Parameter p : nat.", "Definition p : nat := 0.")
            .replace("Theorem t : 0 = 0.", "Theorem t : 0 = 0 /\\ p = 0.")
            .replace("exact f0.", "split; [exact f0 | reflexivity]."),
            Reason.statement_changed,
        ),
    ],
    ids=["other-statement", "shadowed-postulate", "changed-postulate"],
)
def test_breaking_the_split_on_purpose_gains_nothing(
    verifier: StrictVerifier, candidate: str, reason: Reason
) -> None:
    original = TASK
    if "p = 0" in candidate:
        original = TASK.replace(STATEMENT, "Theorem t : 0 = 0 /\\ p = 0.")
    verdict = verifier.verify(original, candidate)
    assert not verdict.passed
    assert reason in verdict.reasons, verdict.findings


SECTION_UNFOLDS = (  # TietzeExtension.v's shape: `d` unfolds to `l`, proved (opaque) before
    "Section S.\nVariable n : nat.\nLemma l : n = n.\nProof. reflexivity. Qed.\n"
    "Definition d : {m : nat | m = m} := exist _ n l.\n"
    "Lemma t : d = d.\nProof. reflexivity. Qed.\nEnd S.\n"
)


def test_a_section_definition_over_a_proved_lemma_is_decided(verifier: StrictVerifier) -> None:
    # R5, `undecided` in issue 18 (each side had its own opaque `l`): one `Candidate.l` now
    task = SECTION_UNFOLDS.replace("d = d.\nProof. reflexivity. Qed.", "d = d.\nAdmitted.")
    verdict = verifier.verify(task, SECTION_UNFOLDS)
    assert verdict.passed, verdict.findings


def test_a_proof_from_the_tasks_postulate_before_the_target_passes(
    verifier: StrictVerifier,
) -> None:
    # issue 18 refused it on its whole route (`Candidate.q`, the candidate's own copy)
    candidate = CONTEXT + STATEMENT + "\nProof. destruct r0. clear f0. exact q. Qed.\n"
    verdict = verifier.verify(TASK, candidate)
    assert verdict.passed, verdict.findings
    assert verdict.axioms == {"t": ["Candidate.q"]}
