"""Targets inside a functor or a module type (issue 28), real coqc.

A field of a functor or a module type is no constant of the library until the functor is
applied, so the kernel dump has no object to compare for it: the verdict is `undecided`,
naming the case, for a genuine proof as for an attack (issue 18's identity file applied both
sides to declared arguments; that planning is gone, see docs/decisions.md). No candidate of
either kind passes."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import UnreadableOutput, read_assumptions
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Reason

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

# an inductive before the module types: shared by both sides (the task's context), and a
# field type of the parameter, so both functors must take the same `color`
SIG = (
    "Inductive color := red | green.\n"
    "Module Type Sig.\nParameter t : Type.\nParameter f : t -> t.\nParameter paint : t -> color.\n"
    "Axiom f_id : forall x, f x = x.\nEnd Sig.\n"
    "Module Type Sig2 (X : Sig).\nParameter g : X.t -> X.t.\nEnd Sig2.\n"
)
TWICE = "Lemma twice : forall x, f (f x) = x."
PROOF = "Proof. intros; unfold f; rewrite !X.f_id; reflexivity. Qed."
FUNCTOR = "Module F (Import X : Sig) (Y : Sig2 X) <: Sig.\nDefinition t := X.t.\n"
FUNCTOR += "Definition paint := X.paint.\nDefinition f x := X.f (X.f x).\nLemma f_id : forall x, f x = x.\n"
MODTYPE = "Module Type P (Import X : Sig) (Y : Sig2 X).\n"
GAP = "Lemma gap : forall x y : t, f x = f y."


def functor(proof: str, header: str = FUNCTOR, end: str = "End F.\n") -> str:
    return SIG + header + proof + "\n" + end


TASK_F = functor("Proof.\nAdmitted.")
TASK_P = SIG + MODTYPE + GAP + "\nProof.\nAdmitted.\nEnd P.\n"
GENUINE = {
    "a functor with a dependent second parameter": (TASK_F, functor(PROOF)),
    "a module type with a proof": (
        SIG + MODTYPE + TWICE + "\nProof.\nAdmitted.\nEnd P.\n",
        SIG + MODTYPE + TWICE + "\nProof. intros; rewrite !f_id; reflexivity. Qed.\nEnd P.\n",
    ),
}
# a field the signature needs comes after the target: the original is not cut there
# (NZCyclic.v; cut, its `End` failed: "The field paint is missing")
LATE = FUNCTOR.replace("Definition paint := X.paint.\n", "")
GENUINE["a functor whose signature needs a field after the target"] = (
    SIG + LATE + "Proof.\nAdmitted.\nDefinition paint := X.paint.\nEnd F.\n",
    SIG + LATE + PROOF + "\nDefinition paint := X.paint.\nEnd F.\n",
)
OWN = "Module Type Q (Import X : Sig).\nParameter u : t.\nAxiom u_fix : f u = u.\n"
FIX = "Lemma fix2 : f (f u) = u."
GENUINE["a module type with its own parameter and axiom"] = (
    SIG + OWN + FIX + "\nProof.\nAdmitted.\nEnd Q.\n",
    SIG + OWN + FIX + "\nProof. rewrite !u_fix; reflexivity. Qed.\nEnd Q.\n",
)
ATTACKS = {
    "its own axiom made stronger": (
        SIG + OWN + FIX + "\nProof.\nAdmitted.\nEnd Q.\n",
        SIG
        + OWN.replace("f u = u", "forall y, f y = y")
        + FIX
        + "\nProof. rewrite !u_fix; reflexivity. Qed.\nEnd Q.\n",
    ),
    "a stronger parameter type": (
        TASK_P,
        SIG
        + "Module Type Strong.\nInclude Sig.\nAxiom gap : forall x y : t, f x = f y.\nEnd Strong.\n"
        + "Module Type P (Import X : Strong) (Y : Sig2 X).\n"
        + GAP
        + "\nProof. exact gap. Qed.\nEnd P.\n",
    ),
    "one more parameter": (
        TASK_F,
        functor(PROOF, FUNCTOR.replace("(Y : Sig2 X)", "(Y : Sig2 X) (Z : Sig)")),
    ),
    "a functor sealed by its signature": (TASK_F, functor(PROOF, FUNCTOR.replace("<:", ":"))),
    "an axiom of its own module type": (
        TASK_P,
        SIG
        + MODTYPE
        + "Axiom cheat : forall x y : t, f x = f y.\n"
        + GAP
        + "\nProof. exact cheat. Qed.\nEnd P.\n",
    ),
}


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    with CoqBackend(workers=2, timeout=60) as backend:
        yield StrictVerifier(backend)


@needs_coq
@pytest.mark.parametrize("name", list(GENUINE))
def test_genuine_proofs_inside_functors_are_undecided_and_named(
    verifier: StrictVerifier, name: str
) -> None:
    original, candidate = GENUINE[name]
    verdict = verifier.verify(original, candidate, timeout=60)
    assert not verdict.passed
    assert verdict.reasons == [Reason.undecided], verdict.findings
    assert all("functor or module type" in f.message for f in verdict.findings)


@needs_coq
@pytest.mark.parametrize("name", list(ATTACKS))
def test_functor_attacks_never_pass(verifier: StrictVerifier, name: str) -> None:
    original, candidate = ATTACKS[name]
    verdict = verifier.verify(original, candidate, timeout=60)
    assert not verdict.passed and verdict.findings, name


def test_a_long_assumption_printed_on_two_lines_is_read() -> None:
    # an argument's field with a type over the printing width: the name alone, then ` : T`
    printed = ["Axioms:", "Candidate.t", "  : forall x : nat,", "    x = x", "M.c : nat"]
    assert read_assumptions(printed) == ["Candidate.t", "M.c"]
    with pytest.raises(UnreadableOutput):  # a name alone with no type below stays unread
        read_assumptions(["Axioms:", "Candidate.t", "M.c : nat"])
