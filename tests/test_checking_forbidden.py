"""Forbidden constructs: found in code, never in comments or strings, configurable."""

from __future__ import annotations

import pytest

from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Language, Reason
from tests.shared_data import ROOT, needs_shared

DATA = ROOT / "data"
LEAN, COQ = Language.lean, Language.coq

ORIGINAL = "import Mathlib\n\ntheorem t (n : ℕ) : n + 0 = n := by\n  sorry\n"


def lean_findings(candidate: str, policy: VerifierPolicy | None = None):
    return StrictVerifier(None, policy, language=LEAN).static_findings(ORIGINAL, candidate)


def with_proof(proof: str, before: str = "", after: str = "") -> str:
    return f"import Mathlib\n{before}\ntheorem t (n : ℕ) : n + 0 = n := by\n  {proof}\n{after}"


@pytest.mark.parametrize(
    "proof, token",
    [
        ("sorry", "sorry"),
        ("admit", "admit"),
        ("exact sorryAx _ false", "sorryAx"),
        ("exact _root_.sorryAx _ false", "sorryAx"),
        ("exact?", "exact?"),
        ("apply?", "apply?"),
        ("native_decide", "native_decide"),
    ],
)
def test_lean_forbidden_in_proof(proof: str, token: str) -> None:
    (finding,) = lean_findings(with_proof(proof))
    assert finding.reason == Reason.forbidden_construct and finding.subject == token
    word = proof.split()[1] if proof.startswith("exact ") else proof
    assert (finding.line, finding.column) == (4, 2 + proof.index(word))


@pytest.mark.parametrize(
    "before, token",
    [
        ("axiom cheat : False", "axiom"),
        ("set_option debug.skipKernelTC true", "debug.skipKernelTC"),
        ("@[implemented_by foo] def bar : ℕ := 0", "implemented_by"),
        ('@[extern "c_fn"] def baz : ℕ := 0', "extern"),
        ("unsafe def u : ℕ := 0", "unsafe"),
        ('macro "cheat" : tactic => `(tactic| sorry)', "sorry"),
    ],
)
def test_lean_forbidden_helpers(before: str, token: str) -> None:
    found = lean_findings(with_proof("simp", before=before))
    assert token in {f.subject for f in found if f.reason == Reason.forbidden_construct}


def test_lean_exit_after_target() -> None:
    found = lean_findings(with_proof("simp", after="#exit\n"))
    assert [(f.subject, f.line) for f in found] == [("#exit", 5)]


def test_comments_and_strings_never_match() -> None:
    candidate = with_proof(
        'simp -- no sorry here\n  /- admit, native_decide -/\n  have : "sorry" = "sorry" := rfl'
    )
    assert lean_findings(candidate) == []


def test_forbidden_list_is_configurable() -> None:
    candidate = with_proof("native_decide")
    allow = VerifierPolicy(forbidden=["sorry", "admit"])
    assert lean_findings(candidate, allow) == []
    strict = VerifierPolicy(forbidden=["sorry", "simp"])
    assert [f.subject for f in lean_findings(with_proof("simp"), strict)] == ["simp"]


COQ_ORIGINAL = "Theorem t : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n"


def coq_findings(candidate: str, original: str = COQ_ORIGINAL):
    return StrictVerifier(None, language=COQ).static_findings(original, candidate)


@pytest.mark.parametrize(
    "proof, token",
    [
        ("Proof.\n  intros n. admit.\nAdmitted.", "admit"),
        ("Proof.\nAdmitted.", "Admitted"),
        ("Proof.\n  intros n.\nAbort.", "Abort"),
    ],
)
def test_coq_forbidden_in_proof(proof: str, token: str) -> None:
    candidate = f"Theorem t : forall n : nat, n + 0 = n.\n{proof}\n"
    assert token in {f.subject for f in coq_findings(candidate)}


@pytest.mark.parametrize("command", ["Axiom", "Parameter", "Hypothesis", "Conjecture"])
def test_coq_added_postulates(command: str) -> None:
    candidate = (
        f"{command} cheat : forall n : nat, n + 0 = n.\n"
        "Theorem t : forall n : nat, n + 0 = n.\nProof. exact cheat. Qed.\n"
    )
    found = coq_findings(candidate)
    forbidden = [(f.subject, f.line) for f in found if f.reason == Reason.forbidden_construct]
    assert forbidden == [(command, 1)] and len(found) == 1


@needs_shared
def test_coq_task_postulates_are_part_of_the_statement() -> None:
    """miniF2F-Coq amc12a_2016_p3 declares `Parameter Rfloor` and `Axiom Rfloor_spec`."""
    original = (DATA / "minif2f-coq" / "valid" / "amc12a_2016_p3.v").read_text()
    proof = "Proof.\n  intros f h. rewrite h by lra. lra.\nQed.\n"
    candidate = original.replace("Proof.\n", proof, 1)
    assert coq_findings(candidate, original) == []
    extra = candidate.replace("Theorem amc12a", "Axiom cheat : False.\n\nTheorem amc12a", 1)
    assert [f.subject for f in coq_findings(extra, original)] == ["Axiom"]
    changed = candidate.replace("IZR (Rfloor x) + 1.", "IZR (Rfloor x) + 2.", 1)
    found = coq_findings(changed, original)  # a changed postulate is no copy of the task's
    assert [(f.reason, f.subject) for f in found] == [(Reason.forbidden_construct, "Axiom")]


@pytest.mark.parametrize(
    "command, subject",
    [
        ("Unset Guard Checking.", "Unset Guard Checking"),
        ("Local Unset Positivity Checking.", "Unset Positivity Checking"),
        ("Unset Universe Checking.", "Unset Universe Checking"),
        ("#[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n.", "bypass_check"),
    ],
)
def test_coq_kernel_switches_are_always_refused(command: str, subject: str) -> None:
    candidate = command + "\nTheorem t : forall n : nat, n + 0 = n.\nProof. auto. Qed.\n"
    lenient = VerifierPolicy(forbidden=[])
    found = StrictVerifier(None, lenient, language=COQ).static_findings(COQ_ORIGINAL, candidate)
    assert subject in {f.subject for f in found if f.reason == Reason.forbidden_construct}


@pytest.mark.parametrize(
    "command, subject",
    [
        ('Require Extraction.\nExtraction "/tmp/fb/pwn.ml" nat.', "Extraction"),
        ("Require Extraction.\nSeparate Extraction nat.", "Extraction"),
        ("Require Extraction.\nRecursive Extraction Library Nat.", "Extraction"),
        ('Cd "/tmp".', "Cd"),
        ('Declare ML Module "evil_plugin".', "Declare ML Module"),
        ('Add ML Path "/tmp".', "Add ML Path"),
        ('Add LoadPath "/tmp" as Evil.', "Add LoadPath"),
        ('Add Rec LoadPath "/tmp" as Evil.', "Add LoadPath"),
        ('Print Universes "/tmp/u.dot".', "Print Universes to a file"),
        ('Load "/tmp/other.v".', "Load"),
        ('Redirect "/tmp/out" Print nat.', "Redirect"),
    ],
)
def test_coq_commands_that_reach_the_file_system_are_always_refused(
    command: str, subject: str
) -> None:
    """The gate's refusal (core/gate.py), in every verdict: a policy cannot open these."""
    lenient = VerifierPolicy(forbidden=[])
    for where in ("before", "in the proof"):
        if where == "before":
            candidate = command + "\nTheorem t : forall n : nat, n + 0 = n.\nProof. auto. Qed.\n"
        else:
            candidate = f"Theorem t : forall n : nat, n + 0 = n.\nProof.\n{command}\nauto. Qed.\n"
        found = StrictVerifier(None, lenient, language=COQ).verify(COQ_ORIGINAL, candidate).findings
        assert subject in {f.subject for f in found if f.reason == Reason.forbidden_construct}


@pytest.mark.parametrize(
    "proof, subject",
    [
        ("set_option «debug».skipKernelTC true in omega", "debug.skipKernelTC"),
        ("set_option «debug.skipKernelTC» true in omega", "debug.skipKernelTC"),
        ("exact «sorry»", "sorry"),
        ("exact _root_.«sorryAx» _ false", "sorryAx"),
    ],
)
def test_lean_names_in_guillemets_are_compared_without_them(proof: str, subject: str) -> None:
    (finding,) = lean_findings(with_proof(proof))
    assert (finding.reason, finding.subject) == (Reason.forbidden_construct, subject)


@pytest.mark.parametrize(
    "proof, token",
    [
        ("rw? at h", "rw?"),
        ("simp?", "simp?"),
        ("simp? says simp only [Nat.add_zero]", "simp?"),
        ("simp?! [foo]", "simp?!"),
        ("simp_all?", "simp_all?"),
        ("aesop?", "aesop?"),
        ("solve_by_elim?", "solve_by_elim?"),
        ("library_search", "library_search"),
    ],
)
def test_lean_cam_bench_search_tactics_are_forbidden(proof: str, token: str) -> None:
    """CAM-Bench refuses the search tactics that print a suggestion (App. D / A3 note)."""
    (finding,) = lean_findings(with_proof(proof))
    assert (finding.reason, finding.subject) == (Reason.forbidden_construct, token)
    assert finding.line == 4


def test_lean_opaque_in_the_proof_is_forbidden_but_a_task_opaque_is_not() -> None:
    opaque = "opaque secret : ℕ"
    found = lean_findings(with_proof("simp", before=opaque))
    assert [f.subject for f in found if f.reason == Reason.forbidden_construct] == ["opaque"]
    # the task's own `opaque`, copied unchanged, is part of the statement
    original = f"import Mathlib\n{opaque}\n\ntheorem t (n : ℕ) : n + 0 = n := by\n  sorry\n"
    verifier = StrictVerifier(None, language=LEAN)
    assert verifier.static_findings(original, with_proof("simp", before=opaque + "\n")) == []


def test_names_that_only_look_like_search_tactics_pass() -> None:
    # `rw` itself, and the words in comments
    candidate = with_proof("rw [Nat.add_zero] -- not rw? nor simp?\n  /- aesop? -/")
    assert lean_findings(candidate) == []
