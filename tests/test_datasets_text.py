"""The text surgery behind the importers: header split, holes, leaked answers, categories."""

from __future__ import annotations

import pytest

from formalbench.core.records import Language, TaskKind
from formalbench.datasets import text as tx

LEAN = Language.lean
COQ = Language.coq


def test_lean_header_stops_at_scoped_open_and_docstrings():
    source = (
        "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen Real Nat\n\n"
        "open Finset in\n/-- doc -/\ntheorem t : True := sorry\n"
    )
    header, formal = tx.split_header(source, LEAN)
    assert (
        header
        == "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen Real Nat\n\n"
    )
    assert formal.startswith("open Finset in\n/-- doc -/")
    assert header + formal == source
    header, formal = tx.split_header(
        "set_option maxRecDepth 100 in\ntheorem t : True := sorry", LEAN
    )
    assert header == ""


def test_coq_header_keeps_multiline_sentences_whole():
    source = (
        "From Coq Require Import\n  Reals Lia.\n(* a comment *)\nLocal Open Scope R_scope.\n"
        "Set Implicit Arguments.\n\nDefinition f (x : R) := x.\nTheorem t : f 1 = 1.\nProof.\nAdmitted.\n"
    )
    header, formal = tx.split_header(source, COQ)
    assert header.endswith("Set Implicit Arguments.\n\n")
    assert formal.startswith("Definition f")
    assert tx.split_header("Theorem t : True.\nProof.\nAdmitted.", COQ) == (
        "",
        "Theorem t : True.\nProof.\nAdmitted.",
    )


@pytest.mark.parametrize(
    ("formal", "language", "expected"),
    [
        ("theorem t : 1 = 1 := by\n", LEAN, "theorem t : 1 = 1 := by\n  sorry\n"),
        ("theorem t : 1 = 1 :=", LEAN, "theorem t : 1 = 1 := sorry\n"),
        ("theorem t : 1 = 1 := by sorry", LEAN, "theorem t : 1 = 1 := by sorry"),
        ("theorem t : 1 = 1 := rfl", LEAN, None),
        ("-- sorry\ntheorem t : 1 = 1 := rfl", LEAN, None),  # a hole in a comment is no hole
        ("Theorem t : True.\nProof.\n", COQ, "Theorem t : True.\nProof.\nAdmitted.\n"),
        ("Theorem t : True.\nProof. admit. Qed.", COQ, "Theorem t : True.\nProof. admit. Qed."),
        ("Theorem t : True.\nProof. exact I. Qed.", COQ, None),
        ("(* Admitted. *)\nTheorem t : True.\nProof. exact I. Qed.", COQ, None),
    ],
)
def test_ensure_hole(formal: str, language: Language, expected: str | None):
    assert tx.ensure_hole(formal, language) == expected


def test_leaked_solution_comment_is_taken_out():
    formal = (
        "noncomputable abbrev p_solution : ℝ := sorry\n-- Real.pi / 8\n"
        "theorem p : x = p_solution :=\nsorry\n"
    )
    cleaned, answers = tx.split_leaked_solutions(formal)
    assert answers == ["Real.pi / 8"]
    assert (
        cleaned
        == "noncomputable abbrev p_solution : ℝ := sorry\ntheorem p : x = p_solution :=\nsorry\n"
    )
    assert tx.kind_of(cleaned, LEAN) == TaskKind.evaluation
    # an ordinary comment after an ordinary theorem stays
    plain = "theorem q : True := sorry\n-- note\n"
    assert tx.split_leaked_solutions(plain) == (plain, [])
    assert tx.kind_of(plain, LEAN) == TaskKind.proof


def test_docstring_and_categories():
    assert tx.docstring_text("/-- Show that $x=1$.\n-/\n") == "Show that $x=1$."
    assert tx.docstring_text("no doc") == ""
    assert tx.name_category("mathd_numbertheory_5") == "mathd_numbertheory"
    assert tx.name_category("amc12a_2019_p21") == "amc12a"
    assert tx.name_category("single") is None
    statement, proof = tx.split_informal_proof("Show X.\n\\begin{proof}\nBecause.\n\\end{proof}")
    assert (statement, proof) == ("Show X.", "Because.")
