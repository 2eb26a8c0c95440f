"""A task with a shared context: a genuine candidate is compiled once, not twice (issue 18, cost).

Where the candidate's file begins with the task's shared context itself, both sides are
compiled whole first (`coq_identity.KernelIdentity._whole_first`): that compile is the file
as submitted, so a clean pass there (no mismatch, no refused axiom) is the verdict with one
candidate compile. Anything else goes the split way (`FbContext`), which reuses that
compile; a context that postulates something goes the split way first (a proof using the
postulate rests on the candidate's own copy on the whole route, `Candidate.p`, refused); a
candidate that does not compile alone is refused after its one compile. Calls of
`CoqBackend.compile` are counted, not time (real coqc).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.checking import coq_identity
from formalbench.checking.verifier import StrictVerifier, kernel_of
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

    def __call__(self, work: Path, module: str, text: str, timeout: float, extra=()):  # type: ignore[no-untyped-def]
        self.seen[module] += 1
        return self._compile(work, module, text, timeout, extra)


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
    for _ in range(2):  # the first check of the task (original built) and a later one
        counting.seen.clear()
        verdict = verifier.verify(TASK, GENUINE)
        assert verdict.passed, verdict.findings
        assert counting.seen[LOCAL_MODULE] == 1, counting.seen


@pytest.mark.parametrize(
    ("task", "proof"),
    [
        # the task's postulate: `FbContext.p_pos` on the split route, taken first
        (POSTULATED, "exists p. exact p_pos."),
        (FLIPPED, "destruct c; reflexivity."),
    ],
    ids=["context-postulate", "match-on-context-type"],
)
def test_what_the_whole_route_cannot_pass_goes_the_split_way(
    counted: tuple[StrictVerifier, Counting], task: str, proof: str
) -> None:
    verifier, counting = counted
    counting.seen.clear()
    verdict = verifier.verify(task, task.replace("Admitted.", f"Proof. {proof} Qed."))
    assert verdict.passed, verdict.findings
    assert counting.seen[LOCAL_MODULE] == 2, counting.seen  # whole (reused) and split


def test_the_whole_route_refuses_the_candidates_copy_of_a_postulate(
    counted: tuple[StrictVerifier, Counting],
) -> None:
    # taken first or not, that route never passes a proof from the context's postulate
    verifier, _ = counted
    kernel = kernel_of(verifier.backend)  # type: ignore[arg-type]
    assert kernel is not None
    candidate = POSTULATED.replace("Admitted.", "Proof. exists p. exact p_pos. Qed.")
    context = "Parameter p : nat.\nAxiom p_pos : p > 0."
    tried = kernel._whole_first(POSTULATED, candidate, ["u"], {"u"}, 60, VerifierPolicy(), context)
    assert tried is not None
    report, _, clean = tried
    assert not clean
    assert f"{LOCAL_MODULE}.p_pos" in report.axioms["u"]
    assert coq_identity.postulates_in(POSTULATED, context)


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
        # the context's postulate changed: refused before any identity file
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


def test_a_command_before_the_context_does_not_reach_the_whole_route_first(
    counted: tuple[StrictVerifier, Counting],
) -> None:
    # before the context, a `Module Nat` makes `Nat.succ` the identity in `odd`'s
    # constructor (its copy then proves `odd 0`), while `even_ind` stays the same
    verifier, _ = counted
    task = MUTUAL + "Theorem t : odd 0.\nAdmitted.\n"
    prefix = "Module Nat.\nDefinition succ (n : nat) := n.\nEnd Nat.\n"
    candidate = prefix + task.replace("Admitted.", "Proof. exact (oS 0 e0). Qed.")
    assert not coq_identity.same_context(task, candidate, MUTUAL)
    assert not verifier.verify(task, candidate).passed
