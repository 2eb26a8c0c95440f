"""The value-level check of construction tasks with real coqc: a choice operator, a library
infimum, the task's own statement, reached directly or through the file's own helpers, is
refused with non_constructive; an honest value passes."""

from __future__ import annotations

import shutil

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.value_check import value_findings
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

HEAD = "Require Import Reals.\nOpen Scope R_scope.\n"
ORIGINAL = HEAD + (
    "Definition answer : R.\nAdmitted.\n"
    "Theorem answer_spec : answer <= answer.\nProof.\nAdmitted.\n"
)
SPEC = "Theorem answer_spec : answer <= answer.\nProof. apply Rle_refl. Qed.\n"
EPSILON = "Require Import Epsilon.\n"
# the original of a task whose first statement is informative: a value may not be taken from it
WITH_BOUND = HEAD + (
    "Theorem bound : {x : R | x <= 2}.\nProof.\nAdmitted.\n"
    "Definition answer : R.\nAdmitted.\n"
    "Theorem answer_spec : answer <= answer.\nProof.\nAdmitted.\n"
)
BOUND = "Require Import Lra.\nTheorem bound : {x : R | x <= 2}.\nProof. exists 1. lra. Qed.\n"


@pytest.fixture(scope="module")
def backend() -> CoqBackend:
    with CoqBackend(workers=1, timeout=60) as b:
        yield b


def _reasons(backend: CoqBackend, candidate: str, original: str = ORIGINAL) -> list[str]:
    findings = value_findings(backend, original, candidate, VerifierPolicy())
    return [f"{f.reason.value}:{f.subject}" for f in findings]


CASES = {
    "epsilon": EPSILON + "Definition answer : R := epsilon (inhabits 0) (fun x => x * x = 4).\n",
    "indefinite description": "Require Import IndefiniteDescription.\n"
    "Lemma two : exists x : R, x = 2. Proof. exists 2. reflexivity. Qed.\n"
    "Definition answer : R := proj1_sig (constructive_indefinite_description _ two).\n",
    # the choice sits in the proof term of a lemma the value projects out of
    "hidden in a lemma": "Require Import IndefiniteDescription.\n"
    "Lemma pick : {x : R | x = 2}.\nProof. apply constructive_indefinite_description. "
    "exists 2. reflexivity. Qed.\n"
    "Definition twice (y : R) := y + proj1_sig pick.\n"
    "Definition answer : R := twice 0.\n",
    # a notation hides the name from the text layer; the elaborated value shows it
    "hidden behind a notation and a helper": EPSILON + "Notation pick := epsilon.\n"
    "Definition helper (P : R -> Prop) : R := pick (inhabits 0) P.\n"
    "Definition answer : R := helper (fun x => x = 2).\n",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_choice_in_the_value_is_refused(backend: CoqBackend, case: str) -> None:
    found = _reasons(backend, HEAD + CASES[case] + SPEC)
    assert found and all(f.startswith("non_constructive:") for f in found), found


def test_a_library_infimum_is_refused_unless_the_rule_is_off(backend: CoqBackend) -> None:
    candidate = (
        "Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R_scope.\n"
        "Definition answer : R := real (Glb_Rbar (fun x => 1 <= x)).\n" + SPEC
    )
    original = "Require Import Reals Coquelicot.Coquelicot.\n" + ORIGINAL
    assert _reasons(backend, candidate, original) == ["non_constructive:Glb_Rbar"]
    off = VerifierPolicy(value_extrema=[])
    assert value_findings(backend, original, candidate, off) == []


def test_a_value_taken_from_the_statement_is_refused(backend: CoqBackend) -> None:
    direct = HEAD + BOUND + "Definition answer : R := proj1_sig bound.\n" + SPEC
    assert _reasons(backend, direct, WITH_BOUND) == ["non_constructive:bound"]
    through = HEAD + BOUND + "Definition b2 := bound.\nDefinition answer : R := proj1_sig b2.\n"
    findings = value_findings(backend, WITH_BOUND, through + SPEC, VerifierPolicy())
    assert [f.subject for f in findings] == ["bound"]
    assert "through `b2`" in findings[0].message


def test_an_honest_value_passes_even_with_a_bound_variable_named_epsilon(
    backend: CoqBackend,
) -> None:
    candidate = (
        HEAD
        + EPSILON
        + "Definition half (epsilon : R) : R := epsilon / 2.\n"
        + "Definition answer : R := half 3 + Rabs (-1).\n"
        + SPEC
    )
    assert _reasons(backend, candidate) == []


def test_the_verifier_refuses_what_only_the_value_shows_and_passes_an_honest_answer(
    backend: CoqBackend,
) -> None:
    verifier = StrictVerifier(backend)
    hidden = HEAD + CASES["hidden behind a notation and a helper"] + SPEC
    assert verifier.static_findings(ORIGINAL, hidden) == []  # the text layer sees nothing
    verdict = verifier.verify(ORIGINAL, hidden)
    assert not verdict.passed
    assert verdict.reasons == [Reason.non_constructive], verdict.findings
    honest = HEAD + "Definition answer : R := 2 * 3.\n" + SPEC
    assert verifier.verify(ORIGINAL, honest).passed
    # a value built by tactics, a `Require` inside its proof (no Coq text rule reads choices)
    tactic = HEAD + "Definition answer : R.\nProof.\nRequire Import Epsilon.\n"
    tactic += "exact (epsilon (inhabits 0) (fun m => m = 2)).\nDefined.\n" + SPEC
    assert verifier.verify(ORIGINAL, tactic).reasons == [Reason.non_constructive]


def test_a_choice_in_a_constant_the_text_never_names_is_found_in_a_second_round(
    backend: CoqBackend,
) -> None:
    # `abstract` puts the choice into `pick_subproof`, a constant the text does not name
    candidate = (
        HEAD
        + (
            "Require Import IndefiniteDescription.\n"
            "Definition pick : {x : R | x = 2}.\nProof. abstract (apply "
            "constructive_indefinite_description; exists 2; reflexivity). Defined.\n"
            "Definition answer : R := proj1_sig pick.\n"
        )
        + SPEC
    )
    findings = value_findings(backend, ORIGINAL, candidate, VerifierPolicy())
    assert [f.reason for f in findings] == [Reason.non_constructive], findings
    assert "constructive_indefinite_description" in findings[0].message
    assert "pick_subproof" in findings[0].message  # reached in the second run


def test_a_record_of_the_file_is_followed_through_its_projection(backend: CoqBackend) -> None:
    candidate = (
        HEAD + ("Record box := { val : R }.\nDefinition answer : R := val {| val := 2 |}.\n") + SPEC
    )
    assert _reasons(backend, candidate) == []


def test_a_choice_operator_printed_by_rocq_9_matches_its_coq_8_entry() -> None:
    """`COQ_VALUE_CHOICE` names `Coq.Logic.ChoiceFacts.FunctionalChoice`; Rocq 9 prints the
    same object `Stdlib.Logic.ChoiceFacts.FunctionalChoice`, and it must still be refused."""
    from formalbench.checking.value_check import matches
    from formalbench.core.config import COQ_VALUE_CHOICE

    for path in (
        "Stdlib.Logic.ChoiceFacts.FunctionalChoice",
        "Coq.Logic.ChoiceFacts.FunctionalChoice",
    ):
        assert matches(path, COQ_VALUE_CHOICE) == "Coq.Logic.ChoiceFacts.FunctionalChoice"
    assert matches("Stdlib.Logic.ClassicalEpsilon.epsilon", COQ_VALUE_CHOICE) == "epsilon"
    assert matches("Stdlib.Logic.ChoiceFacts.FunctionalChoiceX", COQ_VALUE_CHOICE) is None
    assert matches(
        "Coq.Logic.ChoiceFacts.FunctionalChoice", ["Stdlib.Logic.ChoiceFacts.FunctionalChoice"]
    )
