"""The kernel route end to end (issue 28), real coqc and the kernel-dump plugin.

Both sides are compiled as the library `Candidate`, dumped, and compared
(`checking/coq_kernel.py`, `checking/coq_compare.py`). Each case of the issue: several targets
with an inductive, a record and a parameter between them; a `Global Set` after a target; a
functor application in the context; sections; universe constraints the candidate adds; a
changed definition; a changed postulate. Genuine proofs must pass, attacks must be refused
by the comparison itself (the text pre-filter is off: `forbidden=[]`)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason
from tests.suite_coq import std

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


@pytest.fixture(scope="module")
def verifier() -> Iterator[StrictVerifier]:
    with CoqBackend(workers=1, timeout=60) as backend:
        yield StrictVerifier(backend, VerifierPolicy(forbidden=[]))


def solved(task: str, *proofs: str) -> str:
    """`task` with its `Admitted.` holes replaced by `proofs`, in order."""
    out = task
    for proof in proofs:
        out = out.replace("Admitted.", f"Proof. {proof} Qed.", 1)
    return out


BETWEEN = (
    "Inductive color := red | green.\n"
    "Theorem t1 : forall c : color, c = red \\/ c = green.\nProof.\nAdmitted.\n"
    "Record box := { v : color; w : nat }.\n"
    "Parameter p : nat.\n"
    "Inductive even : nat -> Prop := e0 : even 0 | e2 n : even n -> even (S (S n)).\n"
    "Theorem t2 : forall b : box, even (w b + w b) -> v b = v b.\nProof.\nAdmitted.\n"
    "Theorem t3 : even 4 /\\ p = p.\nProof.\nAdmitted.\n"
)
BETWEEN_PROOFS = ("destruct c; auto.", "reflexivity.", "split; [repeat constructor | reflexivity].")

GLOBAL_SET = (
    "Theorem t : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n"
    'Global Set Default Proof Mode "Classic".\n'
    "Global Set Implicit Arguments.\n"
    "Definition later (A : Type) (x : A) := x.\n"
)

FUNCTOR = (
    "Module Type NUM.\nParameter t : Type.\nParameter one : t.\nParameter add : t -> t -> t.\n"
    "End NUM.\n"
    "Module SmallN <: NUM.\nDefinition t := nat.\nDefinition one := 1.\n"
    "Definition add := Nat.add.\nEnd SmallN.\n"
    "Module Make (N : NUM).\nDefinition one := N.one.\nDefinition two := N.add one one.\n"
    "End Make.\n"
    "Module Big := Make SmallN.\n"
    "Theorem big_two : Big.two = 2.\nProof.\nAdmitted.\n"
)

SECTION = (
    "Section S.\nVariable A : Type.\nVariables (n m : nat).\nHypothesis H : n = 0.\n"
    "Context {B : Type} (b : B).\n"
    "Definition d := n + 1.\n"
    "Theorem refl_A : forall x : A, x = x.\nProof.\nAdmitted.\n"
    "Theorem d_one : d = 1.\nProof.\nAdmitted.\n"
    "End S.\n"
)
SECTION_PROOFS = ("reflexivity.", "unfold d; rewrite H; reflexivity.")

# two levels of the library, unrelated in the task; a proof of `t` forces `Lo <= Hi`
UNIVERSES = (
    "Definition Lo := Type.\nDefinition Hi := Type.\nTheorem t : Lo -> Hi.\nProof.\nAdmitted.\n"
)

# stdpp's fin_map_dom.v `dom_alt {A} ...` shape: the statement's own `Type` (fresh, free
# while admitted) is bounded by the proof, through a class field over `A : Type@{u}`, by `u`
CLASS_FIELD = (
    "Class C := { f : forall A : Type, A -> A; g : nat }.\n"
    "Theorem t `{C} : forall B : Type, B -> B.\nProof.\nAdmitted.\n"
)
# the same task with a later definition that forces the class's level below the statement's
CLASS_FIELD_LATER = CLASS_FIELD + "Definition later (c : C) := @t c C.\n"

# stdlib's FSetPositive.v shape: a module checked against a signature with a `with Module`
# constraint (`<: ST with Module E := NatS`), whose `:=` is the constraint's: the module opens
# a scope, its lemmas are `P.u_pos`
WITH_MODULE = (
    "Module Type S.\nParameter t : Type.\nParameter z : t.\nEnd S.\n"
    "Module Type ST.\nDeclare Module E : S.\nParameter u : E.t.\nEnd ST.\n"
    "Module NatS <: S.\nDefinition t := nat.\nDefinition z := 0.\nEnd NatS.\n"
    "Module P <: ST with Module E := NatS.\nModule E := NatS.\nDefinition u : E.t := 1.\n"
    "Lemma u_pos : u = 1.\nProof.\nAdmitted.\nEnd P.\n"
)

DEFINED = "Definition double (n : nat) := n + n.\nTheorem t : double 2 = 4.\nProof.\nAdmitted.\n"
POSTULATE = "Parameter p : nat.\nAxiom p_pos : p > 0.\nTheorem t : p <> 0.\nProof.\nAdmitted.\n"

GENUINE = {
    "targets with an inductive, a record and a parameter between them": (
        BETWEEN,
        solved(BETWEEN, *BETWEEN_PROOFS),
    ),
    "Global Set after a target": (
        GLOBAL_SET,
        solved(GLOBAL_SET, "induction n; simpl; congruence."),
    ),
    "a functor application in the context": (FUNCTOR, solved(FUNCTOR, "reflexivity.")),
    "targets in a section, fewer section variables": (SECTION, solved(SECTION, *SECTION_PROOFS)),
    "a proof resting on the task's postulate": (
        POSTULATE,
        solved(POSTULATE, "intro E. pose proof p_pos as P. rewrite E in P. inversion P."),
    ),
}
GENUINE["a statement's own level bounded by a class field's"] = (
    CLASS_FIELD,
    solved(CLASS_FIELD, "exact (fun B => f B)."),
)
GENUINE["a module with a `with Module` signature constraint"] = (
    WITH_MODULE,
    solved(WITH_MODULE, "reflexivity."),
)
GENUINE["a definition of the context used by the proof"] = (
    DEFINED,
    solved(DEFINED, "reflexivity."),
)


@pytest.mark.parametrize("name", list(GENUINE))
def test_genuine_proofs_pass(verifier: StrictVerifier, name: str) -> None:
    original, candidate = GENUINE[name]
    verdict = verifier.verify(original, candidate)
    assert verdict.passed, (name, verdict.findings)


ATTACKS = {
    # a record between the targets changed: t2 is about another `box`
    "a record between targets changed": (
        BETWEEN,
        solved(
            BETWEEN.replace("w : nat }", "w : bool }").replace("w b + w b", "0"), *BETWEEN_PROOFS
        ),  # fmt: skip
        Reason.statement_changed,
    ),
    # the parameter between the targets made a definition: `p = p` unchanged, `p` is not
    "a parameter between targets defined": (
        BETWEEN,
        solved(BETWEEN.replace("Parameter p : nat.", "Definition p := 0."), *BETWEEN_PROOFS),
        Reason.statement_changed,
    ),
    "an inductive between targets with one more constructor": (
        BETWEEN,
        solved(BETWEEN.replace("| e2 n", "| e4 : even 4 | e2 n"), *BETWEEN_PROOFS),
        Reason.statement_changed,
    ),
    # the functor's argument changed: `Big.two` unfolds to 4 instead of 2
    "the functor's argument changed": (
        FUNCTOR.replace("Big.two = 2", "Big.two = 4"),
        solved(
            FUNCTOR.replace("Big.two = 2", "Big.two = 4").replace(
                "Definition one := 1.", "Definition one := 2."
            ),
            "reflexivity.",
        ),  # fmt: skip
        Reason.statement_changed,
    ),
    # the section target proved outside the section for a fixed `n`
    "a section target's variable instantiated": (
        SECTION,
        solved(
            SECTION.replace("Definition d := n + 1.", "Definition d := 0 + 1."),
            "reflexivity.",
            "reflexivity.",
        ),  # fmt: skip
        Reason.statement_changed,
    ),
    "a proof that holds only under an extra universe constraint": (
        UNIVERSES,
        solved(UNIVERSES, "intro A; exact A."),
        Reason.statement_changed,
    ),
    "an explicit constraint between the task's levels": (
        UNIVERSES,
        UNIVERSES.replace("Theorem t", "Definition fb_force : Hi := Lo.\nTheorem t").replace(
            "Admitted.", "exact (fun A => A). Qed."
        ),
        Reason.statement_changed,
    ),
    # the bound of a statement's own level that the task's later definition contradicts:
    # the candidate drops the definition to compile
    "an own level bounded against the task's constraints": (
        CLASS_FIELD_LATER,
        solved(CLASS_FIELD, "exact (fun B => f B)."),
        Reason.statement_changed,
    ),
    "a definition of a `with Module` constrained module changed": (
        WITH_MODULE,
        WITH_MODULE.replace("E.t := 1.", "E.t := 2.").replace(
            "u = 1.\nProof.\nAdmitted.", "u = 2.\nProof. reflexivity. Qed."
        ),
        Reason.statement_changed,
    ),
    "a changed definition in the closure": (
        DEFINED,
        solved(DEFINED.replace("n + n", "n * n"), "reflexivity."),
        Reason.statement_changed,
    ),
    "a changed postulate": (
        POSTULATE,
        solved(POSTULATE.replace("p > 0", "p = 1"), "rewrite p_pos; discriminate."),
        Reason.statement_changed,
    ),
    # the task's postulate kept word for word, but what it speaks of made a definition: the
    # allowed `p_pos` now says `0 > 0`
    "a postulate's meaning changed through what it mentions": (
        POSTULATE.replace("Theorem t : p <> 0.", "Theorem t : False."),
        solved(
            POSTULATE.replace("Parameter p : nat.", "Definition p := 0.").replace(
                "Theorem t : p <> 0.", "Theorem t : False."
            ),
            "pose proof p_pos as H. inversion H.",
        ),
        Reason.statement_changed,
    ),
    "an axiom of its own": (
        POSTULATE,
        solved(
            POSTULATE.replace("Theorem t", "Axiom cheat : False.\nTheorem t"), "destruct cheat."
        ),  # fmt: skip
        Reason.disallowed_axiom,
    ),
    "the task text itself": (BETWEEN, BETWEEN, Reason.forbidden_construct),
    # the attribute forms of bypassed checks, which no gate word names: the dump's `unsafe`
    # list and the assumptions' `guarded`/`positive` entries refuse them
    "a fixpoint with its guard check bypassed": (
        "Theorem t : 1 = 2.\nProof.\nAdmitted.\n",
        "#[bypass_check(guard)] Fixpoint f (n : nat) : 1 = 2 := f n.\n"
        "Theorem t : 1 = 2.\nProof. exact (f 0). Qed.\n",
        Reason.forbidden_construct,
    ),
    "an inductive with its positivity check bypassed": (
        "Theorem t : 1 = 2.\nProof.\nAdmitted.\n",
        "#[bypass_check(positivity)] Inductive bad := C : (bad -> False) -> bad.\n"
        "Theorem t : 1 = 2.\nProof. assert (n : bad -> False) by (intros [h]; exact (h (C h))).\n"
        "exfalso; exact (n (C n)). Qed.\n",
        Reason.disallowed_axiom,
    ),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attacks_are_refused_by_the_comparison(verifier: StrictVerifier, name: str) -> None:
    original, candidate, reason = ATTACKS[name]
    targets = verifier.targets(original)
    result, findings = verifier.assistant_layer(original, candidate, targets, None)
    assert result is not None and result.compiled, (name, result and result.errors)
    assert reason in {f.reason for f in findings}, (name, findings)
    assert not verifier.verify(original, candidate).passed


def test_the_verdict_names_each_targets_axioms(verifier: StrictVerifier) -> None:
    original = "Require Import Classical.\nTheorem t : forall P, P \\/ ~ P.\nProof.\nAdmitted.\n"
    verdict = verifier.verify(original, solved(original, "exact classic."))
    assert verdict.passed, verdict.findings
    assert verdict.axioms == {"t": [std("Coq.Logic.Classical_Prop.classic")]}


def test_a_proof_that_instantiates_a_task_axiom_at_the_statements_level_passes(
    verifier: StrictVerifier,
) -> None:
    # ClassicalEpsilon.v's shape: the proof uses the task's axiom at the target's `Type`,
    # which adds `t's level <= the axiom's level` to the candidate's graph: a constraint on
    # a level no statement has (only the axiom's type), like any lemma a proof instantiates
    task = (
        "Axiom choose : forall A : Type, A -> A.\n"
        "Theorem t : forall B : Type, B -> B.\nProof.\nAdmitted.\n"
    )
    verdict = verifier.verify(task, solved(task, "exact choose."))
    assert verdict.passed, verdict.findings


def test_a_proof_that_uses_library_lemmas_at_the_statements_level_passes(
    verifier: StrictVerifier,
) -> None:
    # `rev`/`map` at `A : Type@{Candidate.1}` add `Candidate.1 <= Coq.Lists.List.*` to the
    # candidate's graph (the dump's `universes.external`), which the task's admitted
    # statement does not have: every genuine proof over `Type` does this, so such pairs
    # are not compared (docs/decisions.md, "Coq verdicts on kernel objects")
    task = (
        "Require Import List.\nTheorem t : forall A : Type, list A -> list A.\nProof.\nAdmitted.\n"
    )
    verdict = verifier.verify(task, solved(task, "exact (fun A l => rev (map (fun x => x) l))."))
    assert verdict.passed, verdict.findings


SEALED = (
    "Module Type S.\nParameter t : forall n : nat, n + 0 = n.\nEnd S.\n"
    "Module M : S.\nLemma t : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\nEnd M.\n"
)


def test_a_target_in_a_module_sealed_by_its_signature(verifier: StrictVerifier) -> None:
    # ssrunder.v's shape: the environment holds the signature's `Parameter M.t` on both
    # sides; the kernel's assumptions walk reaches the implementation, proved or admitted
    proof = "induction n; simpl; congruence."
    verdict = verifier.verify(SEALED, solved(SEALED, proof))
    assert verdict.passed, verdict.findings
    task_text = verifier.verify(SEALED, SEALED)
    assert Reason.forbidden_construct in task_text.reasons, task_text.findings
    axiom = SEALED.replace(
        "Module M : S.", "Axiom cheat : forall n : nat, n + 0 = n.\nModule M : S."
    )
    cheat = verifier.verify(axiom, solved(axiom, "exact cheat."))
    assert cheat.passed  # the task's own axiom, before the target
    sneaky = solved(
        SEALED.replace("Module M : S.", "Axiom cheat : forall n, n + 0 = n.\nModule M : S."),
        "exact cheat.",
    )
    refused = verifier.verify(SEALED, sneaky)
    assert refused.reasons == [Reason.disallowed_axiom], refused.findings


# a task whose original is slow to compile: a `Goal` whose `Qed` costs seconds before the hole
SLOW = (
    "Require Import PArith.\n"
    "Goal Pos.iter (fun x : nat => x) 0 1500000 = 0.\nProof. reflexivity. Qed.\n"
    "Theorem t : 1 + 1 = 2.\nProof.\nAdmitted.\n"
)


def test_a_slow_original_does_not_shorten_the_candidates_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # rocq-9.2 tensor.v `const_tK` timed out: the first check of a task paid for the
    # original's compile out of the candidate's limit. The limit each compile is given is
    # recorded (not a time measured against the machine's load): the candidate's must be
    # the whole limit however long the original took.
    genuine = solved(SLOW, "reflexivity.")
    limit = 240.0
    with CoqBackend(workers=1, timeout=limit) as backend:
        given: list[float] = []
        check = backend.check

        def recording(text: str, **kw: Any) -> Any:
            given.append(float(kw["timeout"]))
            return check(text, **kw)

        monkeypatch.setattr(backend, "check", recording)
        started = time.monotonic()
        verdict = StrictVerifier(backend, VerifierPolicy(forbidden=[])).verify(SLOW, genuine)
        took = time.monotonic() - started
    assert verdict.passed, verdict.findings
    assert took > 2.0, took  # the original's `Qed` really took time (else nothing is shown)
    assert given and given[0] > limit - 1.0, (given, took)


def test_a_tasks_dump_is_parsed_once_and_the_cache_is_bounded(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service checks the same tasks over and over: the task's dump file is parsed at its
    first check only; parsed dumps past the size bound are dropped, least recent first,
    and read again from their file when asked."""
    from formalbench.checking import coq_kernel

    parses = []
    real = coq_kernel.loads_dump
    monkeypatch.setattr(coq_kernel, "loads_dump", lambda text: parses.append(1) or real(text))
    monkeypatch.setattr(coq_kernel, "PARSED_DUMP_CHARS", 100)
    files = []
    for i in range(3):
        path = tmp_path / f"dump-{i}.json"
        path.write_text('{"pad": "' + "x" * 30 + f'", "i": {i}}}')  # 48 characters each
        files.append(path)
    kernel = coq_kernel.KernelCheck(CoqBackend(workers=1), tmp_path, session=False)
    a = kernel._parsed(files[0])
    assert kernel._parsed(files[0]) is a and len(parses) == 1
    kernel._parsed(files[1])
    assert len(parses) == 2 and kernel._parsed(files[0]) is a  # 96 characters kept: both
    kernel._parsed(files[2])  # 144: the least recent (files[1]) goes
    assert len(parses) == 3
    assert kernel._parsed(files[0]) is a and len(parses) == 3
    assert kernel._parsed(files[1])["i"] == 1 and len(parses) == 4
