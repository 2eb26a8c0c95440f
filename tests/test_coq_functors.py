"""Targets inside a functor or a module type, decided by the kernel (issue 18), real coqc.

The identity file declares generic arguments of the original's parameter types (located by
Coq in the original's scope) and applies both sides to them; genuine proofs pass, and a
candidate that changes the functor's parameters, seals it differently or proves the lemma
from a postulate of its own module type is refused by the identity file alone."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_identity import Instance, TargetPlan, identity_text
from formalbench.backends.coq_queries import UnreadableOutput, read_assumptions
from formalbench.checking.coq_functors import Undecided
from formalbench.checking.coq_plans import plans
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
def test_genuine_proofs_inside_functors_pass(verifier: StrictVerifier, name: str) -> None:
    original, candidate = GENUINE[name]
    verdict = verifier.verify(original, candidate, timeout=60)
    assert verdict.passed, verdict.findings
    # the arguments' fields are no axioms; a module type's own are the original's fields
    assert all(n.startswith("Original.Q.") for names in verdict.axioms.values() for n in names)


@needs_coq
@pytest.mark.parametrize("name", list(ATTACKS))
def test_functor_attacks_are_refused_by_the_identity_file(
    verifier: StrictVerifier, name: str
) -> None:
    original, candidate = ATTACKS[name]
    targets = verifier.targets(original)
    _, findings = verifier.assistant_layer(original, candidate, targets, None)
    assert findings, name
    assert all(f.reason != Reason.undecided for f in findings), findings


def test_plans_name_the_functor_and_its_parameters() -> None:
    (plan,) = plans(TASK_F)
    assert plan.name == "F.f_id" and plan.instance is not None
    assert plan.instance.path == "F" and not plan.instance.module_type
    assert plan.instance.params == (("Sig",), ("Sig2", "#0"))
    (plan,) = plans(TASK_P)
    assert plan.instance is not None and plan.instance.module_type
    (plan,) = plans(TASK_F.replace("Module F", "Module Import F"))
    assert plan.instance is not None and plan.instance.path == "F"


def test_identity_text_applies_both_sides_to_the_same_arguments() -> None:
    instance = Instance("M.F", False, (("Coq.A.T",), ("Coq.A.U", "#0")))
    text, lines = identity_text([TargetPlan("M.F.l", instance=instance)])
    declared = [line for line in text.splitlines() if line.startswith("Declare Module")]
    first = declared[0].split()[2]
    assert declared[1].endswith(f": Coq.A.U {first}.")
    applied = [line for line in text.splitlines() if ":= Candidate.M.F " in line]
    assert applied and lines[text.splitlines().index(applied[0]) + 1] == "M.F.l"
    assert "exact (@" in text and ".l)" in text


@pytest.mark.parametrize(
    "header",
    [
        "Module F (X : Sig with Definition t := nat).\n",  # a `with` constraint
        "Module F (X : Sig).\nModule G (Y : Sig).\n",  # a functor inside a functor
    ],
)
def test_functor_shapes_not_read_here_are_undecided(header: str) -> None:
    ends = "End G.\nEnd F.\n" if "Module G" in header else "End F.\n"
    with pytest.raises(Undecided):
        plans(SIG + header + "Lemma l : True.\nProof.\nAdmitted.\n" + ends)


def test_a_long_assumption_printed_on_two_lines_is_read() -> None:
    # an argument's field with a type over the printing width: the name alone, then ` : T`
    printed = ["Axioms:", "Candidate.t", "  : forall x : nat,", "    x = x", "M.c : nat"]
    assert read_assumptions(printed) == ["Candidate.t", "M.c"]
    with pytest.raises(UnreadableOutput):  # a name alone with no type below stays unread
        read_assumptions(["Axioms:", "Candidate.t", "M.c : nat"])
