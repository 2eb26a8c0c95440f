"""The Lean value-level check on the stand-in REPL (no Lean runs here): `#print` of the
file's declarations, walked for choice, library infima and the task's own statement."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from formalbench.backends.lean.backend import LeanBackend
from formalbench.checking.lean_value_check import lean_value_findings
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason

FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
HEAD = "import Mathlib\n\n"
SPEC = "theorem answer_spec : answer = answer := by\n  rfl\n"
ORIGINAL = HEAD + "noncomputable def answer : ℝ := sorry\n\n" + SPEC.replace("rfl", "sorry")


@pytest.fixture
def lean(tmp_path: Path):
    command = [sys.executable, str(FAKE), "--fixtures", str(tmp_path), "--axioms", "propext"]
    with LeanBackend(repl_command=command, workers=1) as backend:
        yield backend


def _subjects(backend: LeanBackend, candidate: str, original: str = ORIGINAL) -> list[str]:
    return [f.subject for f in lean_value_findings(backend, original, candidate, VerifierPolicy())]


def test_a_choice_behind_a_helper_is_refused_where_the_text_layer_sees_none(lean) -> None:
    candidate = (
        HEAD
        + (
            "noncomputable def pick (s : Nonempty ℝ) : ℝ := Nonempty.some s\n\n"
            "noncomputable def answer : ℝ := pick ⟨0⟩\n\n"
        )
        + SPEC
    )
    verifier = StrictVerifier(lean)
    assert verifier.static_findings(ORIGINAL, candidate) == []
    verdict = verifier.verify(ORIGINAL, candidate)
    assert verdict.reasons == [Reason.non_constructive], verdict.findings
    assert "through `pick`" in verdict.findings[0].message
    honest = HEAD + "noncomputable def answer : ℝ := 2 + 3\n\n" + SPEC
    assert verifier.verify(ORIGINAL, honest).passed


def test_a_library_infimum_and_the_statement_are_refused(lean) -> None:
    infimum = HEAD + "noncomputable def answer : ℝ := sInf {x : ℝ | 1 ≤ x}\n\n" + SPEC
    assert _subjects(lean, infimum) == ["sInf"]
    assert lean_value_findings(lean, ORIGINAL, infimum, VerifierPolicy(value_extrema=[])) == []
    original = HEAD + "theorem bound : ∃ x : ℝ, x ≤ 2 := by\n  sorry\n\n" + ORIGINAL[len(HEAD) :]
    candidate = (
        HEAD
        + (
            "theorem bound : ∃ x : ℝ, x ≤ 2 := ⟨2, le_refl 2⟩\n\n"
            "noncomputable def use (h : ∃ x : ℝ, x ≤ 2) : ℝ := 0\n\n"
            "noncomputable def answer : ℝ := use bound\n\n"
        )
        + SPEC
    )
    assert _subjects(lean, candidate, original) == ["bound"]


def test_a_choice_behind_an_explicit_type_argument_is_refused(lean) -> None:
    """Under `pp.all` Lean prints `@id.{2} Type (@Classical.choice.{2} Type inst)`: the `Type`
    there is an argument, not a universe, so what follows it is read (issue 31 item 1)."""
    hidden = "@id.{2} Type (@Classical.choice.{2} Type instNonempty)"
    candidate = HEAD + f"noncomputable def answer : ℝ := {hidden}\n\n" + SPEC
    assert _subjects(lean, candidate) == ["Classical.choice"]
    sort = HEAD + "noncomputable def answer : ℝ := @id.{1} Prop (@Exists.choose.{1} Sort h)\n\n"
    assert _subjects(lean, sort + SPEC) == ["Exists.choose"]
