"""Attacks on Coq statement identity, on real coqc: each candidate compiles and proves
something, but not the task's statement, and must be refused; the genuine proofs beside them
must pass. For every attack the assistant layer alone (the kernel identity check and the
axioms it reads, without the text layer) must refuse it too: that is the point of the design,
the text layer is only a cheap pre-filter."""

from __future__ import annotations

import shutil

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_known_bugs import parse_version
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Reason

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

NBSP = "\u00a0"
PLUS = "Theorem t : 2 + 3 = 6.\nProof.\nAdmitted.\n"  # false: 2 + 3 is 5
NAT = "Theorem t : 0 - 1 < 0.\nProof.\nAdmitted.\n"  # false in nat, true in Z
CLASS = (
    "Class C := { v : nat }.\n#[export] Instance one : C := { v := 1 }.\n"
    "Theorem t : v = 2.\nProof.\nAdmitted.\n"
)  # false: the task's instance says 1
ADD_AS_MUL = 'Infix "+" := Nat.mul.'
PROVE_PLUS = "Theorem t : 2 + 3 = 6.\nProof. reflexivity. Qed.\n"
PROVE_NAT = "Theorem t : 0 - 1 < 0.\nProof. exact eq_refl. Qed.\n"
TWO = "Instance two : C := { v := 2 }.\n"
PROVE_CLASS = "Theorem t : v = 2.\nProof. reflexivity. Qed.\n"
CLASS_CONTEXT = CLASS[: CLASS.index("Theorem")]

ATTACKS = {
    "Time Variable (global assumption)": (
        PLUS,
        "Time Variable h : False.\nTheorem t : 2 + 3 = 6.\nProof. destruct h. Qed.\n",
    ),
    "Time Variable in a section": (
        PLUS,
        "Section S.\nTime Variable h : False.\nTheorem t : 2 + 3 = 6.\n"
        "Proof. destruct h. Qed.\nEnd S.\n",
    ),
    "Time Notation": (PLUS, 'Time Notation "x + y" := (x * y).\n' + PROVE_PLUS),
    "Timeout Infix": (PLUS, f"Timeout 5 {ADD_AS_MUL}\n" + PROVE_PLUS),
    "Time Local Open Scope": (
        NAT,
        "Require Import ZArith.\nTime Local Open Scope Z_scope.\n" + PROVE_NAT,
    ),
    "Time #[global] Existing Instance": (
        CLASS,
        CLASS_CONTEXT + "Definition two : C := {| v := 2 |}.\n"
        "Time #[global] Existing Instance two.\n" + PROVE_CLASS,
    ),
    "Proof term. swallowing a command": (
        PLUS,
        f"Lemma helper : True.\nProof I.\n{ADD_AS_MUL}\n" + PROVE_PLUS,
    ),
    "Time Qed. swallowing a command": (
        NAT,
        "Require Import ZArith.\nLemma helper : True.\nProof. exact I. Time Qed.\n"
        "Local Open Scope Z_scope.\n" + PROVE_NAT,
    ),
    "where notation on a Fixpoint": (
        PLUS,
        "Fixpoint mul (n m : nat) : nat := match n with 0 => 0 | S p => m + p * m end\n"
        'where "x + y" := (mul x y).\n' + PROVE_PLUS,
    ),
    "where notation on an Inductive": (
        PLUS,
        'Inductive my : Prop := mk : my\nwhere "x + y" := (Nat.mul x y).\n' + PROVE_PLUS,
    ),
    "Require Import shadowing a name of the statement": (
        "Definition fact (n : nat) := 0.\nTheorem t : fact 3 = 6.\nProof.\nAdmitted.\n",
        "Definition fact (n : nat) := 0.\nRequire Import Coq.Arith.Factorial.\n"
        "Theorem t : fact 3 = 6.\nProof. reflexivity. Qed.\n",
    ),
    "Hint Resolve : typeclass_instances": (
        CLASS,
        CLASS_CONTEXT + "Definition two : C := {| v := 2 |}.\n"
        "#[global] Hint Resolve two | 0 : typeclass_instances.\n" + PROVE_CLASS,
    ),
    "Hint Extern : typeclass_instances": (
        CLASS,
        CLASS_CONTEXT + "Definition two : C := {| v := 2 |}.\n"
        "#[global] Hint Extern 0 C => exact two : typeclass_instances.\n" + PROVE_CLASS,
    ),
    "Time Module with a second t": (
        PLUS,
        "Time Module M.\nTheorem t : 2 + 3 = 6.\nProof.\nAdmitted.\nEnd M.\n"
        f"{ADD_AS_MUL}\n" + PROVE_PLUS,
    ),
    "functor holding the target's name": (
        PLUS,
        "Module Type Sig.\nEnd Sig.\nModule F (X : Sig).\n"
        f"{ADD_AS_MUL}\n" + PROVE_PLUS + "End F.\nModule E.\nEnd E.\nModule N := F E.\n"
        "Definition t := N.t.\n",
    ),
    "U+00A0 inside a name": (
        "Definition x := 1.\nTheorem t : x + 1 = 6.\nProof.\nAdmitted.\n",
        f"Definition x := 1.\nDefinition x{NBSP}:= 5.\n"
        f"Theorem t : x{NBSP}+ 1 = 6.\nProof. reflexivity. Qed.\n",
    ),
}

TASK_CONTEXT = (
    "Require Import Arith.\nInductive color := red | green.\nParameter f : nat -> nat.\n"
    "Axiom f_spec : forall n, f n = n.\n"
    "Theorem t : forall c : color, c = red \\/ c = green.\nProof.\nAdmitted.\n"
    "Theorem u : f 2 = 2.\nProof.\nAdmitted.\n"
)
GENUINE = {
    "section Variable used by a helper": (
        PLUS.replace("2 + 3 = 6", "2 + 3 = 5"),
        "Section S.\nVariable n : nat.\nLemma helper : n + 0 = n.\nProof. auto. Qed.\nEnd S.\n"
        "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n",
    ),
    "Open Scope after the target": (
        PLUS.replace("2 + 3 = 6", "2 + 3 = 5"),
        "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\nRequire Import ZArith.\n"
        "Open Scope Z_scope.\n",
    ),
    "Set Default Goal Selector": (
        PLUS.replace("2 + 3 = 6", "2 + 3 = 5"),
        'Set Default Goal Selector "all".\nTheorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n',
    ),
    "task-declared inductive, parameter and axiom": (
        TASK_CONTEXT,
        "Require Import Lia.\n"
        + TASK_CONTEXT.replace("Admitted.", "destruct c; auto. Qed.", 1).replace(
            "Admitted.", "apply f_spec. Qed.", 1
        ),
    ),
    "a helper module before the target": (
        "Theorem t : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n",
        "Module H.\nLemma z : forall k, k + 0 = k. Proof. auto. Qed.\nEnd H.\n"
        "Theorem t : forall n : nat, n + 0 = n.\nProof. exact H.z. Qed.\n",
    ),
    "a value to construct and a theorem about it": (
        "Definition answer : nat.\nProof.\nAdmitted.\n"
        "Theorem t : answer + 1 = 3.\nProof.\nAdmitted.\n",
        "Definition answer : nat.\nProof.\nexact 2.\nDefined.\n"
        "Theorem t : answer + 1 = 3.\nProof. reflexivity. Qed.\n",
    ),
    "Reals and Coquelicot imports": (
        "Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R_scope.\n"
        "Theorem t : forall x : R, Rabs x >= 0.\nProof.\nAdmitted.\n",
        "Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R_scope.\n"
        "Theorem t : forall x : R, Rabs x >= 0.\nProof. intros. apply Rle_ge, Rabs_pos. Qed.\n",
    ),
}


@pytest.fixture(scope="module")
def verifier():
    with CoqBackend(workers=1, timeout=60) as backend:
        yield StrictVerifier(backend)


def _since_8_20(verifier: StrictVerifier) -> bool:
    version = parse_version(verifier.backend.toolchain.version())  # type: ignore[attr-defined]
    return version is not None and version >= (8, 20, 0)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_is_refused_by_the_kernel(verifier: StrictVerifier, name: str) -> None:
    original, candidate = ATTACKS[name]
    targets = verifier.targets(original)
    result, findings = verifier.assistant_layer(original, candidate, targets, None)
    reasons = {f.reason for f in findings}
    refusals = {Reason.statement_changed, Reason.disallowed_axiom, Reason.missing_target}
    if name == "U+00A0 inside a name":  # the gate refuses it before coqc (core/hidden_chars.py)
        refusals = {Reason.forbidden_construct}
    if name == "Time Variable (global assumption)" and _since_8_20(verifier):
        # an assumption outside a section is an error by default since Coq 8.20
        # (declaration-outside-section): coqc itself refuses the candidate
        refusals = {Reason.compile_error}
    assert reasons & refusals, (
        name,
        findings,
        result.diagnostics,
    )
    assert not verifier.verify(original, candidate).passed


@pytest.mark.parametrize("name", sorted(GENUINE))
def test_genuine_proof_passes(verifier: StrictVerifier, name: str) -> None:
    original, candidate = GENUINE[name]
    verdict = verifier.verify(original, candidate)
    assert verdict.passed, (name, verdict.findings)
