"""A task with declarations before its target: every candidate is compiled once (issues 18, 28).

The kernel route (`checking/coq_kernel.py`) compiles the task's original once per task (as
`Candidate`, cached) and each candidate once, exactly as submitted; the inductives, records
and postulates before the target are then the same kernel names on both sides and are
compared as kernel objects (issue 18's shared-context split and its whole route first are
gone). Calls of `CoqBackend.compile` are counted, not time (real coqc).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

CONTEXT = "Inductive color := red | green.\nRecord box := { v : color; w : nat }.\n"
TASK = CONTEXT + "Theorem t : forall b : box, v b = red \\/ v b = green.\nAdmitted.\n"
GENUINE = TASK.replace("Admitted.", "Proof. intros [[] n]; auto. Qed.")
# a statement through a `match` on a context inductive: not renamed on the whole route
FLIPPED = (
    CONTEXT
    + "Definition flip (c : color) := match c with red => green | green => red end.\n"
    + "Theorem f : forall c, flip (flip c) = c.\nAdmitted.\n"
)
# a statement that the context's postulate makes true: only the split route can accept it
POSTULATED = "Parameter p : nat.\nAxiom p_pos : p > 0.\nTheorem u : exists n, n > 0.\nAdmitted.\n"


class Counting:
    """Counts the modules `CoqBackend.compile` is asked to compile."""

    def __init__(self, backend: CoqBackend) -> None:
        self.seen: Counter[str] = Counter()
        self._compile = backend.compile

    def __call__(self, work: Path, module: str, text: str, timeout: float, extra=(), **kw):  # type: ignore[no-untyped-def]
        self.seen[module] += 1
        return self._compile(work, module, text, timeout, extra, **kw)


@pytest.fixture(scope="module")
def counted() -> Iterator[tuple[StrictVerifier, Counting]]:
    with CoqBackend(workers=2, timeout=60) as backend:
        counting = Counting(backend)
        backend.compile = counting  # type: ignore[method-assign]
        # no forbidden words: the assistant, not the text pre-filter, refuses the attacks
        yield StrictVerifier(backend, VerifierPolicy(forbidden=[])), counting


def test_a_genuine_candidate_over_a_shared_context_is_compiled_once(
    counted: tuple[StrictVerifier, Counting],
) -> None:
    verifier, counting = counted
    compiles = []
    for _ in range(2):  # the first check of the task (original built) and a later one
        counting.seen.clear()
        verdict = verifier.verify(TASK, GENUINE)
        assert verdict.passed, verdict.findings
        compiles.append(counting.seen[LOCAL_MODULE])
    assert compiles == [2, 1], compiles  # the original once (cached), the candidate once


@pytest.mark.parametrize(
    ("task", "proof"),
    [
        (POSTULATED, "exists p. exact p_pos."),  # rests on the task's own postulate
        (FLIPPED, "destruct c; reflexivity."),  # a `match` on a type declared before
    ],
    ids=["context-postulate", "match-on-context-type"],
)
def test_genuine_proofs_over_the_tasks_declarations_pass_with_one_compile(
    counted: tuple[StrictVerifier, Counting], task: str, proof: str
) -> None:
    verifier, counting = counted
    verifier.verify(task, task)  # the original built and dumped
    counting.seen.clear()
    verdict = verifier.verify(task, task.replace("Admitted.", f"Proof. {proof} Qed."))
    assert verdict.passed, verdict.findings
    assert counting.seen[LOCAL_MODULE] == 1, counting.seen
    if task == POSTULATED:
        assert set(verdict.axioms["u"]) == {"Candidate.p", "Candidate.p_pos"}


@pytest.mark.parametrize(
    ("task", "candidate", "reason"),
    [
        # a weaker statement: refused by the kernel on both routes
        (
            TASK,
            TASK.replace("\\/ v b = green", "\\/ True").replace("Admitted.", "Proof. auto. Qed."),
            Reason.statement_changed,
        ),
        # an axiom of its own, after the context or before it
        (
            TASK,
            TASK.replace("Theorem t", "Axiom big : False.\nTheorem t").replace(
                "Admitted.", "Proof. destruct big. Qed."
            ),
            Reason.disallowed_axiom,
        ),
        (
            TASK,
            "Axiom big : False.\n" + TASK.replace("Admitted.", "Proof. destruct big. Qed."),
            Reason.disallowed_axiom,
        ),
        # the context's types shadowed by look-alikes: the statement speaks of other ones
        (
            TASK,
            TASK.replace(
                "Theorem t",
                "Module M.\nInductive color := red | green.\nRecord box := { v : color }."
                "\nEnd M.\nImport M.\nTheorem t",
            ).replace("Admitted.", "Proof. intros [[]]; auto. Qed."),
            Reason.statement_changed,
        ),
        # the task's postulate changed: pinned to the task's type
        (
            POSTULATED,
            POSTULATED.replace("p > 0.", "False.").replace(
                "Admitted.", "Proof. exfalso. exact p_pos. Qed."
            ),
            Reason.statement_changed,
        ),
        # its own copy of the postulate, changed, under the context's name
        (
            POSTULATED,
            POSTULATED.replace(
                "Theorem u", "Module M.\nAxiom p_pos : 1 > 0.\nEnd M.\nImport M.\nTheorem u"
            ).replace("Admitted.", "Proof. exists 1. exact p_pos. Qed."),
            Reason.disallowed_axiom,
        ),
    ],
    ids=[
        "weaker-statement",
        "added-axiom",
        "axiom-before-context",
        "shadowed-type",
        "changed-postulate",
        "copy-of-postulate",
    ],
)
def test_attacks_over_a_shared_context_are_refused(
    counted: tuple[StrictVerifier, Counting], task: str, candidate: str, reason: Reason
) -> None:
    verifier, _ = counted
    verdict = verifier.verify(task, candidate)
    assert not verdict.passed
    assert reason in verdict.reasons, verdict.findings


def test_a_candidate_that_does_not_compile_is_refused_after_one_compile(
    counted: tuple[StrictVerifier, Counting],
) -> None:
    verifier, counting = counted
    counting.seen.clear()
    verdict = verifier.verify(TASK, GENUINE.replace("auto", "exact I"))
    assert not verdict.passed
    assert Reason.compile_error in verdict.reasons, verdict.findings
    assert counting.seen[LOCAL_MODULE] == 1, counting.seen


MUTUAL = (
    "Inductive even : nat -> Prop := e0 : even 0 | eS n : odd n -> even (S n)\n"
    "with odd : nat -> Prop := oS n : even n -> odd (Nat.succ n).\n"
)


def test_a_command_before_the_context_that_changes_an_inductive_is_refused(
    counted: tuple[StrictVerifier, Counting],
) -> None:
    # before the context, a `Module Nat` makes `Nat.succ` the identity in `odd`'s
    # constructor (its copy then proves `odd 0`), while `even_ind` stays the same
    verifier, _ = counted
    task = MUTUAL + "Theorem t : odd 0.\nAdmitted.\n"
    prefix = "Module Nat.\nDefinition succ (n : nat) := n.\nEnd Nat.\n"
    candidate = prefix + task.replace("Admitted.", "Proof. exact (oS 0 e0). Qed.")
    assert not verifier.verify(task, candidate).passed
