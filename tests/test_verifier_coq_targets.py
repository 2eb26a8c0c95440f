"""The verifier with real coqc: "target not found" errors, shadowed statement names, and
commands that would reach outside the sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.holes import fill_holes
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language, Reason, Severity
from tests.shared_data import ROOT, needs_shared

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

ORIGINAL = "Theorem foo : True.\nProof.\nAdmitted.\n"


def test_a_target_hidden_in_a_module_is_missing_not_a_compile_error() -> None:
    candidate = "Module M.\nTheorem foo : True.\nProof. exact I. Qed.\nEnd M.\nImport M.\n"
    with CoqBackend(workers=1, timeout=30) as backend:
        verdict = StrictVerifier(backend, compile_always=True).verify(ORIGINAL, candidate)
    assert not verdict.passed
    assert Reason.missing_target in verdict.reasons
    assert Reason.compile_error not in verdict.reasons, verdict.findings
    missing = [f for f in verdict.findings if f.reason == Reason.missing_target]
    assert len(missing) == 1, verdict.findings  # the identity file's (no text rule under it)


def test_load_and_redirect_are_forbidden_in_coq_candidates() -> None:
    for command in ('Load "other".', 'Redirect "out" Print nat.'):
        candidate = f"{command}\nTheorem foo : True.\nProof. exact I. Qed.\n"
        verdict = StrictVerifier(None, language=Language.coq).verify(ORIGINAL, candidate)
        assert Reason.forbidden_construct in verdict.reasons, command


MINIF2F = ROOT / "data" / "minif2f-coq"


@needs_shared
def test_a_helper_that_shadows_a_statement_name_compiles_but_the_kernel_refuses_it() -> None:
    original = (MINIF2F / "test/mathd_numbertheory_495.v").read_text()
    candidate = fill_holes(original, Language.coq, ["intros. unfold Nat.lcm. repeat constructor."])
    at = candidate.index("Theorem")
    added = "Module Nat.\nDefinition gcd (a b : nat) := 0.\nDefinition lcm (a b : nat) := 200.\n"
    candidate = candidate[:at] + added + "End Nat.\n" + candidate[at:]
    with CoqBackend(workers=1, timeout=60) as backend:
        verdict = StrictVerifier(backend, compile_always=True).verify(original, candidate)
    # coqc accepts the proof of the shadowed statement; the kernel identity check refuses it
    assert not any(d.severity == Severity.error for d in verdict.diagnostics), verdict.findings
    assert verdict.reasons == [Reason.statement_changed], verdict.findings
    assert any("does not state the task's statement" in f.message for f in verdict.findings)


@needs_shared
def test_a_shadowing_helper_whose_statement_only_converts_is_refused() -> None:
    """`fact := 0` makes the candidate state `Candidate.fact 9 mod 10 = 0`, which converts to
    the original `fact 9 mod 10 = 0` but is another term. Issue 18's identity file accepted it
    (kernel conversion); the kernel route compares statements as terms, as the comparators
    do (issue 28), so the statement must be the task's own, not one that computes to it."""
    original = (MINIF2F / "valid/mathd_numbertheory_739.v").read_text()
    candidate = fill_holes(original, Language.coq, ["reflexivity."])
    at = candidate.index("Theorem")
    candidate = candidate[:at] + "Definition fact (n : nat) := 0.\n" + candidate[at:]
    with CoqBackend(workers=1, timeout=60) as backend:
        verdict = StrictVerifier(backend).verify(original, candidate)
    assert verdict.reasons == [Reason.statement_changed], verdict.findings
    assert "Candidate.fact" in verdict.findings[0].message


def test_extraction_is_refused_and_never_run(tmp_path: Path) -> None:
    target = tmp_path / "pwn.ml"
    candidate = (
        f'Require Extraction.\nExtraction "{target}" nat.\n'
        "Theorem foo : True.\nProof. exact I. Qed.\n"
    )
    with CoqBackend(workers=1, timeout=60) as backend:
        for compile_always in (False, True):
            verifier = StrictVerifier(backend, compile_always=compile_always)
            verdict = verifier.verify(ORIGINAL, candidate)
            assert not verdict.passed and Reason.forbidden_construct in verdict.reasons
            assert verdict.diagnostics == []  # coqc was not run
    assert not target.exists() and not (tmp_path / "pwn.mli").exists()
