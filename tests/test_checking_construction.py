"""Construction tasks (PutnamBench solution abbrevs, AMBER-style `def answer := sorry`)."""

from __future__ import annotations

from pathlib import Path

from formalbench.checking.holes import fill_holes
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Language, Reason, TaskKind

PUTNAM = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "putnambench-lean4"
LEAN, COQ = Language.lean, Language.coq
ORIGINAL = (PUTNAM / "lean4" / "src" / "putnam_2016_b1.lean").read_text(encoding="utf-8")


def check(candidate: str, kind: TaskKind = TaskKind.evaluation, original: str = ORIGINAL,
          language: Language = LEAN, policy: VerifierPolicy | None = None) -> list[Finding]:  # fmt: skip
    return StrictVerifier(None, policy, language=language).static_findings(
        original, candidate, kind
    )


def with_value(value: str, before: str = "") -> str:
    filled = fill_holes(ORIGINAL, LEAN, ["exact " + value, "simp"])
    at = filled.index("noncomputable abbrev")
    return filled[:at] + before + filled[at:]


def test_honest_value_passes() -> None:
    assert check(with_value("Real.exp 1 - 1")) == []


def test_choice_on_an_existence_proof_is_non_constructive() -> None:
    for value, constant in (
        ("Classical.choose (⟨0, rfl⟩ : ∃ x : ℝ, x = 0)", "Classical.choose"),
        ("(⟨0, rfl⟩ : ∃ x : ℝ, x = 0).choose", "choose"),
        ("Classical.epsilon (fun x : ℝ => x = 0)", "Classical.epsilon"),
    ):
        found = check(with_value(value))
        assert [(f.reason, f.subject) for f in found] == [(Reason.non_constructive, constant)]
        assert found[0].line == 5 and "putnam_2016_b1_solution" in found[0].message


def test_dot_notation_on_a_hypothesis() -> None:
    helper = "theorem ex_zero : ∃ x : ℝ, x = 0 := ⟨0, rfl⟩\n"
    found = check(with_value("let h := ex_zero; h.choose", before=helper))
    assert [f.reason for f in found] == [Reason.non_constructive]


def test_choice_hidden_in_a_helper_is_followed() -> None:
    helpers = (
        "noncomputable def pick (h : ∃ x : ℝ, x = 0) : ℝ := Classical.choose h\n"
        "noncomputable def pick2 : ℝ := pick ⟨0, rfl⟩\n"
    )
    found = check(with_value("pick2", before=helpers))
    assert [f.reason for f in found] == [Reason.non_constructive]
    assert "through `pick`" in found[0].message


def test_unused_helper_with_choice_is_fine_and_proof_tasks_allow_choice() -> None:
    unused = "noncomputable def pick (h : ∃ x : ℝ, x = 0) : ℝ := Classical.choose h\n"
    assert check(with_value("Real.exp 1 - 1", before=unused)) == []
    assert check(with_value("Classical.choose (⟨0, rfl⟩ : ∃ x : ℝ, x = 0)"), TaskKind.proof) == []


def test_partial_helper_is_forbidden() -> None:
    helper = "partial def loop (n : ℕ) : ℕ := loop n\n"
    found = check(with_value("(loop 0 : ℝ)", before=helper))
    assert [(f.reason, f.subject) for f in found] == [(Reason.forbidden_construct, "partial")]


def test_unfilled_value_is_reported_even_when_sorry_is_allowed() -> None:
    candidate = fill_holes(ORIGINAL, LEAN, ["simp"])  # fills the solution with `by simp`...
    candidate = candidate.replace(": ℝ := by simp", ": ℝ := sorry", 1)  # ...then undoes it
    lenient = VerifierPolicy(forbidden=[])
    (f,) = check(candidate, policy=lenient)
    assert f.reason == Reason.forbidden_construct and f.subject == "putnam_2016_b1_solution"
    assert "not filled" in f.message


def test_value_taking_the_property_as_a_parameter_changes_the_statement() -> None:
    candidate = with_value("Real.exp 1 - 1").replace(
        "putnam_2016_b1_solution : ℝ", "putnam_2016_b1_solution (h : ∃ s : ℝ, s = 0) : ℝ"
    )
    assert {f.reason for f in check(candidate)} == {Reason.statement_changed}


def test_coq_definition_chosen_by_epsilon() -> None:
    original = (
        "Require Import Classical.\nDefinition answer : nat.\nAdmitted.\n"
        "Theorem answer_spec : answer = 3.\nProof.\nAdmitted.\n"
    )
    honest = fill_holes(original, COQ, ["exact 3.", "reflexivity."])
    assert honest.count("Qed.") == 2 and check(honest, original=original, language=COQ) == []
    sneaky = honest.replace("exact 3.", "exact (epsilon (inhabits 0) (fun n => n = 3)).")
    found = check(sneaky, original=original, language=COQ)
    assert [f.reason for f in found] == [Reason.non_constructive]
