"""Refusal classes found by running the Coq verifier over real code at scale (issue 18).

`bench/bench_real_proofs.py` over the standard library and coq-topology turned up genuine
proofs refused for reasons that were the verifier's, not the proof's; each class is here
in a few lines of real Coq (real coqc), plus the project file of coq-topology:

- a `Program Instance` with no body (its fields become obligations, no proof opens) was read
  as a proof left open, so every later command until the next declaration (`Local Open
  Scope ...`) became part of it and the instance a second target (RelationClasses.v);
- `Generalizable Variables` of the shared context, which ends with that file, was not
  replayed after the context's import (SetoidClass.v);
- the context's replayed `Require Import`s came after its own import, so a library name
  shadowed the context's own (`equiv` of SetoidClass.v against RelationClasses'); the
  context is imported again after the replay where the split does not compile otherwise
  (not always: that re-imports what the context exports over a later import, as
  coq-topology's Powerset_facts.v needs);
- where the original cannot be compiled on top of its shared context, the verdict said the
  candidate changed the statement; both sides are compiled whole then (issue 18 R4,
  tests/test_coq_split_names.py), and a mismatch there is `undecided`;
- a statement that unfolds to a lemma the file proves before it with `Qed` (opaque: two
  different constants on the two sides) was "changed" (ClassicalEpsilon.v's `epsilon`); the
  whole text before the first target is now shared when the candidate keeps it;
- a lemma proved by `Proof <term>.` was read as a proof left open, hence as a target
  (inside a functor: the whole task `undecided`; EqdepFacts.v, Eqdep_dec.v);
- the original was compiled whole, so a later proof that breaks once the target is admitted
  (a section lemma then takes every section variable: Completeness.v of coq-topology)
  made the task undecided; it is compiled up to its last target now.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_project import read_coq_project
from formalbench.checking.holes import hole_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.errors import InputError
from formalbench.core.records import Language, Reason

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


def test_a_program_instance_with_no_body_opens_no_proof() -> None:
    text = "#[global] Program Instance i : C.\n\nLocal Open Scope list_scope.\n"
    decls, holes = hole_decls(text, Language.coq)
    assert [d.kind for d in decls] == ["Instance", "Open"]
    assert not holes
    # without `Program` the instance does open a proof, which `Admitted` leaves a hole
    decls, holes = hole_decls("Instance i : C.\nProof. Admitted.\n", Language.coq)
    assert holes == {0}


def test_a_proof_given_as_a_term_is_no_hole() -> None:
    text = "Lemma a : True.\nProof I.\nLemma b : True.\nProof using.\n"
    decls, holes = hole_decls(text, Language.coq)
    assert [decls[i].name for i in holes] == ["b"]


def test_a_project_may_set_proof_style_options_only(tmp_path: Path) -> None:
    (tmp_path / "theories").mkdir()
    project = tmp_path / "_CoqProject"
    project.write_text(
        "-R theories Topology\n-arg -set -arg \"'Default Goal Selector=!'\"\n"
    )  # coq-topology's own line
    assert read_coq_project(tmp_path).args[-2:] == ("-set", "Default Goal Selector=!")
    for bad in ("'Guard Checking=no'", "'Dump Arith=x'"):
        project.write_text(f'-arg -set -arg "{bad}"\n')
        with pytest.raises(InputError, match="only proof-style settings"):
            read_coq_project(tmp_path)
    project.write_text("-arg -unset -arg \"'Universe Checking'\"\n")
    with pytest.raises(InputError, match="not passed"):
        read_coq_project(tmp_path)


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    with CoqBackend(workers=2, timeout=60) as backend:
        yield StrictVerifier(backend)


def task_of(real: str, statement: str) -> str:
    """The real file with the proof after `statement` replaced by `Admitted.`."""
    head, _, rest = real.partition(statement)
    return head + statement + "\nAdmitted." + rest.split("Qed.", 1)[1]


PROGRAM_INSTANCE = (
    "Section S.\nContext {A : Type}.\n"
    "Class Triv (R : A -> A -> Prop) : Prop := { triv : True }.\n"
    "Lemma t : forall x : A, x = x.\nProof. reflexivity. Qed.\nEnd S.\n"
    "Local Obligation Tactic := exact I.\n"
    "#[global] Program Instance nat_triv : Triv (@eq nat).\n"
    "Local Open Scope list_scope.\nDefinition l := 1 :: nil.\n"
)
OPAQUE_BEFORE = (
    "Lemma l : True.\nProof. exact I. Qed.\n"
    "Definition d : nat := match l with I => 0 end.\n"
    "Theorem t : d = d.\nProof. reflexivity. Qed.\n"
)
PROOF_TERM_IN_FUNCTOR = (
    "Lemma t : True.\nProof. exact I. Qed.\n"
    "Module Type T.\nAxiom a : True.\nEnd T.\n"
    "Module F (M : T).\nLemma b : True.\nProof M.a.\nEnd F.\n"
)
USED_LATER = (  # admitted, `t` takes `m` too, and the last line no longer compiles
    "Section S.\nVariable n m : nat.\nHypothesis H : n = 1.\n"
    "Lemma t : n = 1.\nProof. exact H. Qed.\nEnd S.\nCheck (t 1 eq_refl).\n"
)
LATER_IMPORT_WINS = (  # `Import N` after the context's exported List: `map` is `N.map`
    "Require Export Coq.Lists.List.\nModule N.\nDefinition map := 0.\nEnd N.\nImport N.\n"
    "Inductive c := A.\nTheorem t : map = 0.\nProof. reflexivity. Qed.\n"
)
CONTEXT_SETTINGS = (
    "Require Import Coq.Lists.List.\nGeneralizable Variables A.\n"
    "Class Box (A : Type) := { unbox : A }.\nDefinition map := 0.\n"
    "Theorem t `{Box A} : map = 0 /\\ unbox = unbox.\nProof. split; reflexivity. Qed.\n"
)


@needs_coq
@pytest.mark.parametrize(
    ("real", "statement"),
    [
        (PROGRAM_INSTANCE, "Lemma t : forall x : A, x = x."),
        (CONTEXT_SETTINGS, "Theorem t `{Box A} : map = 0 /\\ unbox = unbox."),
        (OPAQUE_BEFORE, "Theorem t : d = d."),
        (PROOF_TERM_IN_FUNCTOR, "Lemma t : True."),
        (USED_LATER, "Lemma t : n = 1."),
        (LATER_IMPORT_WINS, "Theorem t : map = 0."),
    ],
    ids=[
        "program-instance-after-target",
        "generalizable-and-shadowing-context",
        "opaque-before",
        "proof-term-in-functor",
        "section-lemma-used-after-the-target",
        "replayed-import-over-context-exports",
    ],
)
def test_genuine_proofs_of_these_shapes_pass(
    verifier: StrictVerifier, real: str, statement: str
) -> None:
    verdict = verifier.verify(task_of(real, statement), real)
    assert verdict.passed, verdict.findings
    # and the task text offered as its own proof is still refused
    assert not verifier.verify(task_of(real, statement), task_of(real, statement)).passed


@needs_coq
def test_an_original_that_did_not_compile_split_is_decided(verifier: StrictVerifier) -> None:
    # a local definition before the inductive was not imported with issue 18's shared
    # context; both sides are now compiled whole as `Candidate`
    real = (
        "Local Definition d := 1.\nInductive c := A | B.\n"
        "Theorem t : d = 1 /\\ A = A.\nProof. split; reflexivity. Qed.\n"
    )
    task = task_of(real, "Theorem t : d = 1 /\\ A = A.")
    verdict = verifier.verify(task, real)
    assert verdict.passed, verdict.findings
    # another statement there is refused as such (issue 18: `undecided`)
    verdict = verifier.verify(task, real.replace("A = A", "B = B"))
    assert verdict.reasons == [Reason.statement_changed], verdict.findings


@needs_coq
def test_sharing_the_text_before_the_target_still_refuses_another_statement(
    verifier: StrictVerifier,
) -> None:
    original = task_of(OPAQUE_BEFORE, "Theorem t : d = d.")
    other = OPAQUE_BEFORE.replace("Theorem t : d = d.", "Theorem t : 0 = 0.")
    verdict = verifier.verify(original, other)
    assert not verdict.passed
    assert Reason.statement_changed in verdict.reasons
