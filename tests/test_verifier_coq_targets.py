"""The verifier's reading of the Coq backend's "target not found" errors (real coqc)."""

from __future__ import annotations

import shutil

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language, Reason

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
    assert len(missing) == 2, verdict.findings  # the text layer's and the assistant's


def test_load_and_redirect_are_forbidden_in_coq_candidates() -> None:
    for command in ('Load "other".', 'Redirect "out" Print nat.'):
        candidate = f"{command}\nTheorem foo : True.\nProof. exact I. Qed.\n"
        verdict = StrictVerifier(None, language=Language.coq).verify(ORIGINAL, candidate)
        assert Reason.forbidden_construct in verdict.reasons, command
