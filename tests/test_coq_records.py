"""Records, structures and classes declared in a section still open at the target (issue 18,
class R3 of the scale run), with real coqc.

Both sides are compiled as the library `Candidate`, so a record is the same kernel name on
both sides and is compared as a kernel object (every field of the inductive, its projections
with it: `checking/coq_compare.py`). A genuine proof passes; a candidate that changes the
record in a way that changes what the statement means is refused."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

HEAD = "Section S.\nVariable A : Type.\nVariable n0 : nat.\n"
PAIR = "Record pair := mkp { fst' : A; snd' : A }.\n"
POS = "Class Pos := { pos : nat; pos_ok : 0 < pos }.\n"


def task(statement: str, records: str = PAIR + POS) -> str:
    return f"{HEAD}{records}{statement}\nProof.\nAdmitted.\nEnd S.\n"


def proved(statement: str, proof: str, records: str = PAIR + POS) -> str:
    return f"{HEAD}{records}{statement}\nProof. {proof} Qed.\nEnd S.\n"


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    with CoqBackend(workers=2, timeout=60) as backend:
        yield StrictVerifier(backend)


GENUINE_T = "Theorem t : forall (P : Pos) (x y : A), fst' (mkp x y) = x /\\ 0 < pos."


@needs_coq
def test_genuine_proof_over_section_records_passes(verifier: StrictVerifier) -> None:
    original = task(GENUINE_T)
    verdict = verifier.verify(original, proved(GENUINE_T, "split; [reflexivity | apply pos_ok]."))
    assert verdict.passed, verdict.findings


@needs_coq
def test_genuine_proof_over_a_record_indexed_by_another_passes(verifier: StrictVerifier) -> None:
    # coq-topology Comparability.v: `partial_injection_ord (pi1 pi2 : partial_injection)`
    records = PAIR + "Record le (p q : pair) : Prop := { le_fst : fst' p = fst' q }.\n"
    statement = "Theorem t : forall p : pair, le p p."
    original = task(statement, records)
    verdict = verifier.verify(original, proved(statement, "intros; split; reflexivity.", records))
    assert verdict.passed, verdict.findings


@needs_coq
def test_a_record_no_statement_uses_is_not_compared(verifier: StrictVerifier) -> None:
    # a `Prop` record of data has no projections (Coq warns and defines none); a target that
    # does not mention it does not have it in its closure
    records = PAIR + "Record wit : Prop := { w : nat; w_ok : w = 0 }.\n"
    statement = "Theorem t : forall x y : A, fst' (mkp x y) = x."
    verdict = verifier.verify(task(statement, records), proved(statement, "reflexivity.", records))
    assert verdict.passed, verdict.findings


SWAP_T = "Theorem t : forall x y : A, fst' (mkp x y) = y."
EXISTS_T = "Theorem t : exists P : Pos, @pos P = 0."
ATTACKS = {
    # same field types, names swapped: the scheme is the same, the projections are not
    "fields swapped": (
        task(SWAP_T),
        proved(SWAP_T, "reflexivity.", "Record pair := mkp { snd' : A; fst' : A }.\n" + POS),
    ),
    "field retyped": (
        task("Theorem t : forall P : Pos, pos = 0."),
        proved(
            "Theorem t : forall P : Pos, pos = 0.",
            "intros; apply pos_ok.",
            PAIR + "Class Pos := { pos : nat; pos_ok : pos = 0 }.\n",
        ),
    ),
    "extra field": (
        task("Theorem t : forall P : Pos, pos = 0."),
        proved(
            "Theorem t : forall P : Pos, pos = 0.",
            "intros; apply pos_z.",
            PAIR + "Class Pos := { pos : nat; pos_ok : 0 < pos; pos_z : pos = 0 }.\n",
        ),
    ),
    "missing field": (
        task(EXISTS_T),
        proved(
            EXISTS_T, "exists (Build_Pos 0). reflexivity.", PAIR + "Class Pos := { pos : nat }.\n"
        ),
    ),
    "another constructor": (
        task(EXISTS_T),
        proved(
            EXISTS_T,
            "exists other. reflexivity.",
            PAIR
            + "Inductive Pos := Build_Pos (p : nat) (ok : 0 < p) | other.\n"
            + "Definition pos (P : Pos) := match P with Build_Pos p _ => p | other => 0 end.\n"
            + "Definition pos_ok := 0.\n",
        ),
    ),
    # a record's parameter retyped (Coq decides its sort from its fields: a record in
    # `Type` whose fields are all proofs is lowered to `Prop` on both sides alike)
    "parameter retyped": (
        task(
            "Theorem t : forall p : pair, p = p /\\ box = box.",
            PAIR + "Record box (k : nat) := { b : nat }.\n",
        ),
        proved(
            "Theorem t : forall p : pair, p = p /\\ box = box.",
            "split; reflexivity.",
            PAIR + "Record box (k : bool) := { b : nat }.\n",
        ),
    ),
    "class turned into a definition": (
        task(EXISTS_T),
        proved(
            EXISTS_T,
            "exists 0. reflexivity.",
            PAIR
            + "Definition Pos := nat.\nDefinition pos (P : Pos) : nat := P.\n"
            + "Definition Build_Pos := 0.\nDefinition pos_ok := 0.\n",
        ),
    ),
}


@needs_coq
@pytest.mark.parametrize("name", list(ATTACKS))
def test_changed_records_are_refused_by_the_kernel_comparison(
    verifier: StrictVerifier, name: str
) -> None:
    original, candidate = ATTACKS[name]
    targets = verifier.targets(original)
    result, findings = verifier.assistant_layer(original, candidate, targets, None)
    assert result.compiled, result.errors  # the attack is a real proof of its own statement
    assert findings, name
