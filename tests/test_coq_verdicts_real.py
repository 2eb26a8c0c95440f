"""Coq verdicts decided by the assistant on real-code shapes (issue 18), with real coqc.

Genuine proofs in the shapes real library files have (sections with variables and
hypotheses, notations after the target, inductives before it, statements over `Type`, a
`Parameter` of a module type, a value hole answered in another definitional form, an
original left open at the end of the file) must pass; attacks in the classes of the issue
must be refused by the assistant layer alone (the identity file), without the text layer."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import UnreadableOutput, read_assumptions
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Reason

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    with CoqBackend(workers=2, timeout=60) as backend:
        yield StrictVerifier(backend)


def task(statement: str, before: str = "", after: str = "") -> str:
    return f"{before}{statement}\nProof.\nAdmitted.\n{after}"


SECTION = (
    "Section S.\nVariable A : Type.\nVariable n : nat.\nHypothesis H : n = 2.\n"
    "Let two := 2.\nContext {B : Type}.\n"
)
GENUINE = {
    "section variables, a hypothesis the proof uses, a Let": (
        task("Theorem t : n + 0 = two.", SECTION, "End S.\n"),
        SECTION + "Theorem t : n + 0 = two.\nProof. rewrite H. reflexivity. Qed.\nEnd S.\n",
    ),
    "notation and infix after the target": (
        task("Theorem t : forall l : list nat, length l = length l."),
        "Theorem t : forall l : list nat, length l = length l.\nProof. reflexivity. Qed.\n"
        'Notation "x +++ y" := (app x y) (at level 60).\nInfix "**" := Nat.mul (at level 40).\n',
    ),
    "an inductive and a record before the target": (
        task(
            "Theorem t : forall c, c = A \\/ c = B.",
            "Inductive color := A | B.\nRecord pt := { px : nat }.\n",
        ),
        "Inductive color := A | B.\nRecord pt := { px : nat }.\n"
        "Theorem t : forall c, c = A \\/ c = B.\nProof. destruct c; auto. Qed.\n",
    ),
    "a statement over Type (universe levels of two libraries)": (
        task("Theorem t : forall (X : Type) (f : X -> X) (x : X), f x = f x."),
        "Theorem t : forall (X : Type) (f : X -> X) (x : X), f x = f x.\n"
        "Proof. reflexivity. Qed.\n",
    ),
    "an inductive inside a section, used by the statement": (
        task(
            "Theorem t : forall x : c, x = A \\/ x = B.",
            "Section S.\nVariable n : nat.\nInductive c := A | B.\n",
            "End S.\n",
        ),
        "Section S.\nVariable n : nat.\nInductive c := A | B.\n"
        "Theorem t : forall x : c, x = A \\/ x = B.\nProof. destruct x; auto. Qed.\nEnd S.\n",
    ),
    "a Parameter inside a Module Type": (
        task("Theorem t : 1 + 1 = 2.", "Module Type T.\nParameter p : nat.\nEnd T.\n"),
        "Module Type T.\nParameter p : nat.\nEnd T.\nTheorem t : 1 + 1 = 2.\nProof. reflexivity. Qed.\n",
    ),
    "a value hole written in another definitional form": (
        "Definition step : nat -> nat.\nAdmitted.\nTheorem step_ok : step 1 = 2.\nProof.\nAdmitted.\n",
        "Definition step (x : nat) : nat := 2 * x.\n"
        "Theorem step_ok : step 1 = 2.\nProof. reflexivity. Qed.\n",
    ),
    "an original left open at the end of the file": (
        "Theorem t : 2 + 2 = 4.\nProof.\n",
        "Theorem t : 2 + 2 = 4.\nProof. reflexivity. Qed.\n",
    ),
}


@needs_coq
@pytest.mark.parametrize("name", list(GENUINE))
def test_genuine_proofs_in_real_code_shapes_pass(verifier: StrictVerifier, name: str) -> None:
    original, candidate = GENUINE[name]
    verdict = verifier.verify(original, candidate)
    assert verdict.passed, verdict.findings


FALSE_T = task("Theorem t : 1 = 2.")
NOTATION_T = "Module M.\nNotation t := I.\nEnd M.\n"
ATTACKS = {
    # a postulate of the candidate named like one of the original's
    "Parameter named like the original's, after the target": (
        FALSE_T + "Parameter p : 1 = 2.\n",
        "Parameter p : 1 = 2.\nTheorem t : 1 = 2.\nProof. exact p. Qed.\n",
    ),
    "global Hypothesis named like the original's section hypothesis": (
        task("Theorem t : 1 = 2.", "Section S.\nHypothesis H : 1 = 2.\n", "End S.\n"),
        "Hypothesis H : 1 = 2.\nSection S.\nTheorem t : 1 = 2.\nProof. exact H. Qed.\nEnd S.\n",
    ),
    "global Variable named like the original's section variable": (
        task("Theorem t : n = n + 1.", "Section S.\nVariable n : nat.\n", "End S.\n"),
        "Variable n : nat.\nVariable h : n = n + 1.\nSection S.\n"
        "Theorem t : n = n + 1.\nProof. exact h. Qed.\nEnd S.\n",
    ),
    # the assumptions query answered for something else than the target
    "Notation t := I in a module imported after the proof": (
        task("Theorem t : True."),
        "Axiom ax : True.\nTheorem t : True.\nProof. exact ax. Qed.\n" + NOTATION_T + "Import M.\n",
    ),
    "the same import under Time": (
        task("Theorem t : True."),
        "Axiom ax : True.\nTheorem t : True.\nProof. exact ax. Qed.\n"
        + NOTATION_T
        + "Time Import M.\n",
    ),
    "the same import under Timeout": (
        task("Theorem t : True."),
        "Axiom ax : True.\nTheorem t : True.\nProof. exact ax. Qed.\n"
        + NOTATION_T
        + "Timeout 5 Import M.\n",
    ),
    # value tasks are on the kernel route now: a re-notation or shadowing before them fails
    "Infix + := Nat.mul before a value task": (
        "Definition f : nat.\nAdmitted.\nTheorem f_ok : f = 2 + 3.\nProof.\nAdmitted.\n",
        'Infix "+" := Nat.mul.\nDefinition f : nat := 6.\nTheorem f_ok : f = 2 + 3.\n'
        "Proof. reflexivity. Qed.\n",
    ),
    "shadowing Module Nat before a value task": (
        "Definition f : nat.\nAdmitted.\nTheorem f_ok : f = Nat.add 2 2.\nProof.\nAdmitted.\n",
        "Module Nat.\nDefinition add (a b : nat) := 0.\nEnd Nat.\nDefinition f : nat := 0.\n"
        "Theorem f_ok : f = Nat.add 2 2.\nProof. reflexivity. Qed.\n",
    ),
    # an inductive of a section renamed side to side must have the same constructors
    "an extra constructor for an inductive in a section": (
        task(
            "Theorem t : exists x : c, x <> A /\\ x <> B.",
            "Section S.\nInductive c := A | B.\n",
            "End S.\n",
        ),
        "Section S.\nInductive c := A | B | C.\nTheorem t : exists x : c, x <> A /\\ x <> B.\n"
        "Proof. exists C; split; discriminate. Qed.\nEnd S.\n",
    ),
    "swapped constructors for an inductive in a section": (
        task(
            "Theorem t : forall x : c, x = A -> A = A.",
            "Section S.\nInductive c := A | B.\n",
            "End S.\n",
        ),
        "Section S.\nInductive c := B | A.\nTheorem t : forall x : c, x = A -> A = A.\n"
        "Proof. reflexivity. Qed.\nEnd S.\n",
    ),
    # the candidate must compile alone, exactly as submitted
    "an unterminated Comments sentence at the end": (
        task("Theorem t : True."),
        "Theorem t : True.\nProof. exact I. Qed.\nComments swallow",
    ),
    "an unterminated comment at the end": (
        task("Theorem t : True."),
        "Theorem t : True.\nProof.\n(* exact I. Qed.",
    ),
    "a proof left open at the end": (task("Theorem t : True."), "Theorem t : True.\nProof.\n"),
}


@needs_coq
@pytest.mark.parametrize("name", list(ATTACKS))
def test_attacks_are_refused_by_the_identity_file_alone(
    verifier: StrictVerifier, name: str
) -> None:
    original, candidate = ATTACKS[name]
    targets = verifier.targets(original)
    _, findings = verifier.assistant_layer(original, candidate, targets, None)
    assert findings, name


@needs_coq
@pytest.mark.parametrize(
    ("original", "proof"),
    [
        (
            "Section S.\nInductive c := A | B.\nDefinition f (x : c) := match x with A => 0 | B => 1 end.\n"
            "Theorem t : f B = 1.\nProof.\nAdmitted.\nEnd S.\n",
            "reflexivity",
        ),
        (
            "Module M.\nParameter p : nat.\nTheorem t : p = p.\nProof.\nAdmitted.\nEnd M.\n",
            "reflexivity",
        ),
    ],
)
def test_tasks_in_a_section_or_module_are_decided_on_kernel_objects(
    verifier: StrictVerifier, original: str, proof: str
) -> None:
    # issue 18 left these `undecided` (each side had its own copy of `c`, `M.p`); under one
    # library name they are the same objects. A re-notation of `+` the statement does not
    # use changes no kernel object: a pass. The same re-notation where the statement uses
    # `+` gives another statement: refused.
    head, tail = original.split("Theorem t", 1)
    candidate = (
        head
        + 'Infix "+" := Nat.mul.\nTheorem t'
        + tail.replace("Proof.\nAdmitted.", f"Proof. {proof}. Qed.")
    )
    verdict = verifier.verify(original, candidate, timeout=60)
    assert verdict.passed, verdict.findings
    plus = original.replace("Theorem t : ", "Theorem t : 1 + 1 = 1 /\\ ")
    changed = candidate.replace("Theorem t : ", "Theorem t : 1 + 1 = 1 /\\ ").replace(
        f"Proof. {proof}. Qed.", f"Proof. split; [reflexivity | {proof}]. Qed."
    )
    refused = verifier.verify(plus, changed, timeout=60)
    assert Reason.statement_changed in refused.reasons, refused.findings


def test_assumptions_are_read_with_a_strict_grammar() -> None:
    assert read_assumptions(["Closed under the global context"]) == []
    printed = [
        "Axioms:",
        "Classical_Prop.classic : forall P : Prop, P \\/ ~ P",
        "Candidate.x :",
        "  nat",
    ]
    assert read_assumptions(printed) == ["Classical_Prop.classic", "Candidate.x"]
    assert read_assumptions(["Axioms:", "loop is assumed to be guarded."]) == ["loop"]
    for bad in (
        ["Section Variables:", "n : nat"],  # no section is open in the identity file
        ["Axioms:", "classic\u00a0z : False"],  # a Unicode blank is no part of a name
        ["Axioms:", "(weird) : False"],
        ["Axioms:", "  : False"],  # a continuation with no entry above it
        [],
    ):
        with pytest.raises(UnreadableOutput):
            read_assumptions(bad)
