"""Construction tasks (PutnamBench solution abbrevs, AMBER-style `def answer := sorry`)."""

from __future__ import annotations

import pytest

from formalbench.checking.construction import task_kind
from formalbench.checking.holes import fill_holes
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Finding, Language, Reason, TaskKind
from tests.shared_data import ROOT, needs_shared, read_or_empty

PUTNAM = ROOT / "data" / "putnambench-lean4"
LEAN, COQ = Language.lean, Language.coq
ORIGINAL = read_or_empty(PUTNAM / "lean4" / "src" / "putnam_2016_b1.lean")


def check(candidate: str, kind: TaskKind = TaskKind.evaluation, original: str = ORIGINAL,
          language: Language = LEAN, policy: VerifierPolicy | None = None) -> list[Finding]:  # fmt: skip
    return StrictVerifier(None, policy, language=language).static_findings(
        original, candidate, kind
    )


def with_value(value: str, before: str = "") -> str:
    filled = fill_holes(ORIGINAL, LEAN, ["exact " + value, "simp"])
    at = filled.index("noncomputable abbrev")
    return filled[:at] + before + filled[at:]


@needs_shared
def test_honest_value_passes() -> None:
    assert check(with_value("Real.exp 1 - 1")) == []


@needs_shared
def test_choice_on_an_existence_proof_is_non_constructive() -> None:
    for value, constant in (
        ("Classical.choose (⟨0, rfl⟩ : ∃ x : ℝ, x = 0)", "Classical.choose"),
        ("(⟨0, rfl⟩ : ∃ x : ℝ, x = 0).choose", "choose"),
        ("Classical.epsilon (fun x : ℝ => x = 0)", "Classical.epsilon"),
    ):
        found = check(with_value(value))
        assert [(f.reason, f.subject) for f in found] == [(Reason.non_constructive, constant)]
        assert found[0].line == 5 and "putnam_2016_b1_solution" in found[0].message


@needs_shared
def test_dot_notation_on_a_hypothesis() -> None:
    helper = "theorem ex_zero : ∃ x : ℝ, x = 0 := ⟨0, rfl⟩\n"
    found = check(with_value("let h := ex_zero; h.choose", before=helper))
    assert [f.reason for f in found] == [Reason.non_constructive]


@needs_shared
def test_choice_hidden_in_a_helper_is_followed() -> None:
    helpers = (
        "noncomputable def pick (h : ∃ x : ℝ, x = 0) : ℝ := Classical.choose h\n"
        "noncomputable def pick2 : ℝ := pick ⟨0, rfl⟩\n"
    )
    found = check(with_value("pick2", before=helpers))
    assert [f.reason for f in found] == [Reason.non_constructive]
    assert "through `pick`" in found[0].message


@needs_shared
def test_unused_helper_with_choice_is_fine_and_proof_tasks_allow_choice() -> None:
    unused = "noncomputable def pick (h : ∃ x : ℝ, x = 0) : ℝ := Classical.choose h\n"
    assert check(with_value("Real.exp 1 - 1", before=unused)) == []
    assert check(with_value("Classical.choose (⟨0, rfl⟩ : ∃ x : ℝ, x = 0)"), TaskKind.proof) == []


@needs_shared
def test_partial_helper_is_forbidden() -> None:
    helper = "partial def loop (n : ℕ) : ℕ := loop n\n"
    found = check(with_value("(loop 0 : ℝ)", before=helper))
    assert [(f.reason, f.subject) for f in found] == [(Reason.forbidden_construct, "partial")]


@needs_shared
def test_unfilled_value_is_reported_even_when_sorry_is_allowed() -> None:
    candidate = fill_holes(ORIGINAL, LEAN, ["simp"])  # fills the solution with `by simp`...
    candidate = candidate.replace(": ℝ := by simp", ": ℝ := sorry", 1)  # ...then undoes it
    lenient = VerifierPolicy(forbidden=[])
    (f,) = check(candidate, policy=lenient)
    assert f.reason == Reason.forbidden_construct and f.subject == "putnam_2016_b1_solution"
    assert "not filled" in f.message


@needs_shared
def test_value_taking_the_property_as_a_parameter_changes_the_statement() -> None:
    candidate = with_value("Real.exp 1 - 1").replace(
        "putnam_2016_b1_solution : ℝ", "putnam_2016_b1_solution (h : ∃ s : ℝ, s = 0) : ℝ"
    )
    assert {f.reason for f in check(candidate)} == {Reason.statement_changed}


@needs_shared
def test_coq_definition_filled_transparently() -> None:
    """A Coq value's choice is the value check's (tests/test_checking_value_check.py)."""
    original = (
        "Require Import Classical.\nDefinition answer : nat.\nAdmitted.\n"
        "Theorem answer_spec : answer = 3.\nProof.\nAdmitted.\n"
    )
    honest = fill_holes(original, COQ, ["exact 3.", "reflexivity."])
    # the value closes with Defined (transparent: the theorem may unfold it), the proof with Qed
    assert "exact 3.\nDefined." in honest and honest.count("Qed.") == 1
    assert check(honest, original=original, language=COQ) == []


def answer_task(value: str, header: str = "") -> tuple[str, str]:
    """An AMBER-style task (a value hole and its specification) and a candidate for it."""
    original = (
        f"import Mathlib\n{header}\nabbrev answer : ℕ := sorry\n\n"
        "theorem answer_spec : answer = 6 := by\n  sorry\n"
    )
    return original, fill_holes(original, LEAN, ["exact " + value, "rfl"])


@needs_shared
@pytest.mark.parametrize(
    "value, header",
    [
        ("(fun k => (2 * k).choose k) 2", ""),  # Nat.choose in dot form
        ("Nat.choose 4 2", ""),
        ("(4 : ℕ).choose 2", ""),
        ("choose 4 2", "open Nat"),  # the bare name under `open Nat` is Nat.choose
        ("((Finset.range 3).map ⟨id, fun _ _ h => h⟩).card * 2", ""),
        ("List.sum ((List.range 4).map (fun n => n.choose 2))", ""),
        ("Classical.choose_spec (⟨6, rfl⟩ : ∃ n : ℕ, n = 6) ▸ 6", ""),  # not a choice
    ],
)
def test_binomial_coefficients_and_look_alikes_are_not_choice(value: str, header: str) -> None:
    original, candidate = answer_task(value, header)
    assert check(candidate, original=original) == []


@needs_shared
@pytest.mark.parametrize(
    "value, header",
    [
        ("Classical.choose (⟨6, rfl⟩ : ∃ n : ℕ, n = 6)", ""),
        ("_root_.Classical.choose (⟨6, rfl⟩ : ∃ n : ℕ, n = 6)", ""),
        ("«Classical».«choose» (⟨6, rfl⟩ : ∃ n : ℕ, n = 6)", ""),
        ("Exists.choose (⟨6, rfl⟩ : ∃ n : ℕ, n = 6)", ""),
        ("(⟨6, rfl⟩ : ∃ n : ℕ, n = 6).choose", ""),
        ("choose (⟨6, rfl⟩ : ∃ n : ℕ, n = 6)", "open Classical"),
        ("pick (⟨6, rfl⟩ : ∃ n : ℕ, n = 6)", "open Classical renaming choose → pick"),
        ("epsilon (fun n : ℕ => n = 6)", "open Classical"),
        ("by\n    choose f hf using (fun _ : ℕ => (⟨6, rfl⟩ : ∃ n : ℕ, n = 6))\n    exact f 0", ""),
    ],
)
def test_every_spelling_of_a_choice_is_non_constructive(value: str, header: str) -> None:
    original, candidate = answer_task(value, header)
    found = check(candidate, original=original)
    assert [f.reason for f in found] == [Reason.non_constructive], found


@needs_shared
def test_dot_choice_applied_to_an_argument_counts_when_the_receiver_is_an_existence() -> None:
    helper = (
        "noncomputable def pickf (h : ∃ f : ℕ → ℕ, f 0 = 6) (n : ℕ) : ℕ := h.choose n\n"
        "def binom (s : ℕ) (k : ℕ) : ℕ := s.choose k\n"
    )
    original, candidate = answer_task("pickf ⟨fun _ => 6, rfl⟩ 0 + binom 4 0 - 1")
    at = candidate.index("abbrev answer")
    found = check(candidate[:at] + helper + candidate[at:], original=original)
    assert [(f.reason, f.subject) for f in found] == [(Reason.non_constructive, "h.choose")]


@needs_shared
def test_task_kind_is_read_off_the_original() -> None:
    verifier = StrictVerifier(None, language=LEAN)
    assert verifier.task_kind(ORIGINAL) == TaskKind.evaluation
    assert task_kind(ORIGINAL, LEAN) == TaskKind.evaluation
    proof_only = "import Mathlib\n\ntheorem t (n : ℕ) : n + 0 = n := by\n  sorry\n"
    assert verifier.task_kind(proof_only) == task_kind(proof_only, LEAN) == TaskKind.proof
    coq = "Definition answer : nat.\nAdmitted.\nTheorem spec : answer = 3.\nProof.\nAdmitted.\n"
    assert task_kind(coq, COQ) == TaskKind.evaluation
    # without a kind, the verifier applies the construction rules the original calls for
    chosen = with_value("Classical.choose (⟨0, rfl⟩ : ∃ x : ℝ, x = 0)")
    found = verifier.static_findings(ORIGINAL, chosen)
    assert [f.reason for f in found] == [Reason.non_constructive]
    assert verifier.static_findings(ORIGINAL, chosen, TaskKind.proof) == []


@needs_shared
def test_partial_is_a_policy_entry() -> None:
    helper = "partial def loop (n : ℕ) : ℕ := loop n\n"
    candidate = with_value("(loop 0 : ℝ)", before=helper)
    assert VerifierPolicy().construction_forbidden == ["partial"]
    assert check(candidate, policy=VerifierPolicy(construction_forbidden=[])) == []
    stricter = VerifierPolicy(construction_forbidden=["partial", "Real.exp"])
    found = check(with_value("Real.exp 1 - 1"), policy=stricter)
    assert [(f.reason, f.subject) for f in found] == [(Reason.forbidden_construct, "Real.exp")]
