"""Extraction of proofs from model answers and assembly of candidate files (no assistant)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from formalbench.core.records import Language
from formalbench.solvers.candidate import from_answer, from_code, with_placeholder
from formalbench.solvers.extract import FormatFailure, code_blocks, extract_fills, pick_block
from tests.shared_data import ROOT, needs_shared

SHARED = ROOT
COQ_TEST = SHARED / "data" / "minif2f-coq" / "test"
L, C = Language.lean, Language.coq


@dataclass
class Hole:
    decl: str | None


def test_code_blocks_keeps_tags_and_an_unterminated_last_block() -> None:
    text = "intro\n```coq\nlia.\n```\nmore\n````lean4\nsimp\n```` \n```\ncut off"
    blocks = code_blocks(text)
    assert [(b.tag, b.body, b.closed) for b in blocks] == [
        ("coq", "lia.", True),
        ("lean4", "simp", True),
        ("", "cut off", False),
    ]


def test_pick_block_prefers_the_one_declaring_the_target_then_the_last() -> None:
    out = (
        "```coq\nTheorem foo : True.\nProof. exact I. Qed.\n```\n"
        "```coq\nLemma helper : True.\nProof. exact I. Qed.\n```\n"
        "```python\nprint(1)\n```"
    )
    assert "foo" in pick_block(out, C, ["foo"]).body
    assert "helper" in pick_block(out, C, []).body  # no target named: the last coq block
    with pytest.raises(FormatFailure, match="no fenced code block"):
        pick_block("Theorem foo : True. Proof. exact I. Qed.", C, ["foo"])


def test_coq_whole_answer_keeps_only_the_proof_and_keeps_an_admitted_ending() -> None:
    out = "```coq\nTheorem foo : forall n, n = n.\nProof.\n  intros n. (* a. b *)\n  reflexivity.\nQed.\n```"
    assert extract_fills(out, C, [Hole("foo")]) == ["intros n. (* a. b *)\nreflexivity."]
    admitted = "```coq\nTheorem foo : 1 = 2.\nProof.\n  intros.\nAdmitted.\n```"
    assert extract_fills(admitted, C, [Hole("foo")]) == ["intros.\nAdmitted."]


def test_proof_only_and_renamed_restatement_give_the_proof_for_a_single_hole() -> None:
    assert extract_fills("```\nProof.\nlia.\nQed.\n```", C, [Hole("foo")]) == ["lia."]
    renamed = "```coq\nLemma my_version : 1 = 1.\nProof. reflexivity. Qed.\n```"
    assert extract_fills(renamed, C, [Hole("foo")]) == ["reflexivity."]
    lean = "```lean\nby\n  intro x\n  simp\n```"
    assert extract_fills(lean, L, [Hole("foo")]) == ["intro x\nsimp"]


def test_lean_declarations_map_to_their_holes_and_terms_become_exact() -> None:
    out = (
        "```lean\ntheorem foo (x : Nat) (h : x = 2 := by rfl) : x + 0 = x := by\n"
        "  simp\n  done\n\ntheorem Ns.bar : True :=\n  trivial\n```"
    )
    assert extract_fills(out, L, [Hole("foo"), Hole("Ns.bar")]) == ["simp\ndone", "exact trivial"]
    with pytest.raises(FormatFailure, match="has no proof for `baz`"):
        extract_fills(out, L, [Hole("foo"), Hole("baz")])


@needs_shared
def test_a_restated_changed_statement_never_reaches_the_candidate() -> None:
    original = (COQ_TEST / "mathd_numbertheory_342.v").read_text()
    answer = "```coq\nTheorem mathd_numbertheory_342 : True.\nProof.\n  exact I.\nQed.\n```"
    candidate = from_answer(original, C, answer)
    assert "54 mod 6 = 0" in candidate and ": True" not in candidate
    assert "exact I." in candidate and "Admitted" not in candidate


def test_lean_hole_inside_a_given_proof_gets_the_whole_declaration_proof() -> None:
    original = (
        "import Mathlib\n\ntheorem foo (x : Nat) : x + 0 = x := by\n"
        "  have h : x = x := by sorry\n  simp\n\ntheorem bar : True := sorry\n"
    )
    answer = "```lean\ntheorem foo (x : Nat) : x = x := by\n  simp\n\ntheorem bar : True := by\n  trivial\n```"
    candidate = from_answer(original, L, answer)
    assert "theorem foo (x : Nat) : x + 0 = x := by\n  simp\n" in candidate
    assert "theorem bar : True := by\n  trivial" in candidate
    assert "sorry" not in candidate
    # a proof-only answer for a single whole-proof hole
    single = "import Mathlib\n\ntheorem t (a : Nat) : a = a := by\n  sorry\n"
    assert from_code(single, L, "rfl").endswith("theorem t (a : Nat) : a = a := by\n  rfl\n")


def test_placeholder_marks_the_current_hole_and_leaves_later_ones() -> None:
    original = (
        "Require Import Arith.\n\nLemma a : 1 = 1.\nProof.\nAdmitted.\n\n"
        "Lemma b : 2 = 2.\nProof.\nAdmitted.\n"
    )
    first, marker = with_placeholder(original, C, [])
    assert first.count(marker) == 1 and first.count("Admitted.") == 1
    assert first.index(marker) < first.index("Lemma b")
    second, _ = with_placeholder(original, C, ["reflexivity."])
    assert "Admitted." not in second and second.index(marker) > second.index("Lemma b")


@needs_shared
def test_coq_requires_of_the_answer_move_into_the_proof() -> None:
    original = (COQ_TEST / "mathd_algebra_478.v").read_text()
    answer = (
        "```coq\nRequire Import Reals.\nFrom Coq Require Import Lra\n  Psatz.\n"
        "Theorem mathd_algebra_478 : forall b h v : R, v = 65.\nProof.\n  intros. lra.\nQed.\n```"
    )
    candidate = from_answer(original, C, answer)
    assert candidate.count("Require Import Reals.") == 1  # already in the task: not repeated
    assert "Proof.\nFrom Coq Require Import Lra Psatz.\nintros. lra.\nQed." in candidate
    assert "(0 < b /\\ 0 < h /\\ 0 < v)" in candidate  # the task's statement
