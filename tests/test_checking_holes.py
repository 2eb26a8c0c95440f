"""Finding and filling holes, on hand-made cases, recorded REPL inputs and every shipped task."""

from __future__ import annotations

import json

import pytest

from formalbench.checking.holes import fill_holes, find_holes, target_names
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.errors import InputError
from formalbench.core.records import Language, TaskKind
from tests.shared_data import ROOT, needs_shared

SHARED = ROOT
DATA = SHARED / "data"
LEAN, COQ = Language.lean, Language.coq


def repl_commands(name: str) -> list[str]:
    """The `cmd` texts sent in one recorded REPL session."""
    raw = (SHARED / "fixtures" / "lean-repl" / f"{name}.in").read_text(encoding="utf-8")
    return [json.loads(block)["cmd"] for block in raw.split("\n\n") if '"cmd"' in block]


@needs_shared
def test_recorded_repl_inputs_term_and_tactic_sorry() -> None:
    term, tactic = repl_commands("term_sorry")[0], repl_commands("tactic_sorry")[0]
    assert [h.mode for h in find_holes(term, LEAN)] == ["term"]
    assert [h.mode for h in find_holes(tactic, LEAN)] == ["tactic"]
    have = repl_commands("have_by_sorry")[0]
    (hole,) = find_holes(have, LEAN)
    assert hole.mode == "tactic" and hole.decl == "foo" and have[hole.start : hole.end] == "sorry"


def test_sorry_in_comments_and_strings_is_no_hole_but_macro_sorry_is() -> None:
    src = (
        "/- sorry -/ theorem a : True := by\n  -- sorry\n  exact (by trivial)\n"
        'def s := "sorry"\nmacro "cheat" : tactic => `(tactic| sorry)\n'
    )
    holes = find_holes(src, LEAN)
    assert len(holes) == 1 and holes[0].decl is None and holes[0].mode == "tactic"
    assert target_names(src, LEAN) == []


LEAN_MODES = """theorem foo (x : Int) : x = x := by
  have h : x = 1 := by sorry
  have h2 : x = 2 := sorry
  cases x with
  | ofNat n => sorry
  | negSucc n => exact (f sorry 3)
  · sorry
  exact fun y => sorry
  all_goals sorry
  refine ⟨?_, sorry⟩
  sorry
"""


def test_lean_hole_modes() -> None:
    holes = find_holes(LEAN_MODES, LEAN)
    modes = ["tactic", "term", "tactic", "term", "tactic", "term", "tactic", "term", "tactic"]
    assert [h.mode for h in holes] == modes
    assert [h.line for h in holes] == [2, 3, 5, 6, 7, 8, 9, 10, 11]
    assert [h.wrap for h in holes][3] is True  # `f sorry 3` needs parentheses


def test_lean_fill_indents_multi_line_scripts() -> None:
    filled = fill_holes(LEAN_MODES, LEAN, ["simp\nring"] * 9)
    assert "have h : x = 1 := by\n    simp\n    ring\n" in filled
    assert "have h2 : x = 2 := by\n    simp\n    ring\n" in filled
    assert "| ofNat n => simp\n               ring\n" in filled
    assert "exact (f (by\n    simp\n    ring) 3)" in filled
    assert "  · simp\n    ring\n" in filled
    assert "all_goals (simp\n             ring)" in filled
    assert filled.endswith("  simp\n  ring\n")
    assert find_holes(filled, LEAN) == []


def test_lean_single_line_fills() -> None:
    src = "theorem t : P :=\nsorry\ntheorem u : Q := by sorry\ndef v : ℕ := f sorry 2"
    out = fill_holes(src, LEAN, ["omega", "simp", "exact 3"])
    assert (
        out == "theorem t : P :=\nby omega\ntheorem u : Q := by simp\ndef v : ℕ := f (by exact 3) 2"
    )


def test_lean_empty_bodies_are_holes() -> None:
    src = "theorem a (x : ℕ) : x = x := by\n"
    (hole,) = find_holes(src, LEAN)
    assert (hole.mode, hole.token, hole.decl) == ("tactic", "", "a")
    assert fill_holes(src, LEAN, ["rfl"]) == "theorem a (x : ℕ) : x = x := by\n  rfl\n"
    assert fill_holes("theorem b : 1 = 1 :=", LEAN, ["rfl"]) == "theorem b : 1 = 1 := by rfl"


def test_coq_holes_and_fills() -> None:
    src = (
        "Theorem a : True.\nProof. intros. - admit.\n- idtac; admit.\nAdmitted.\n"
        "Lemma b : True.\nTheorem c : True.\nProof.\n  intros.\n"
        "Lemma d : True.\nAdmitted.\nLemma e : True.\nProof.\nAdmitted.\n"
    )
    holes = find_holes(src, COQ)
    assert [(h.decl, h.mode, h.token) for h in holes] == [
        ("a", "tactic", "admit"), ("a", "tactic", "admit"), ("b", "proof", ""),
        ("c", "proof", ""), ("d", "proof", "Admitted"), ("e", "proof", "Proof"),
    ]  # fmt: skip
    out = fill_holes(src, COQ, ["exact I.", "auto", "trivial.", "x.\ny.", "d.", "e."])
    assert out == (
        "Theorem a : True.\nProof. intros. - exact I.\n- idtac; auto.\nQed.\n"
        "Lemma b : True.\nProof.\ntrivial.\nQed.\nTheorem c : True.\nProof.\n  intros.\nx.\ny.\nQed.\n"
        "Lemma d : True.\nProof.\nd.\nQed.\nLemma e : True.\nProof.\ne.\nQed.\n"
    )


def test_coq_admitted_stays_while_an_admit_is_left() -> None:
    src = "Theorem a : True /\\ True.\nProof. split. admit. admit.\nAdmitted.\n"
    once = fill_holes(src, COQ, ["exact I."])
    assert once.endswith("Admitted.\n") and len(find_holes(once, COQ)) == 1


@needs_shared
def test_coq_open_proof_real_file_keeps_one_proof_line() -> None:
    src = (DATA / "minif2f-coq" / "test" / "aime_1983_p3.v").read_text(encoding="utf-8")
    out = fill_holes(src, COQ, ["intros f roots Hf Hroots Hnodup.\nadmit."])
    assert out.count("Proof.") == 1 and out.rstrip().endswith("admit.\nQed.")


def test_fill_errors() -> None:
    with pytest.raises(InputError, match="2 fills given but the text has 1 holes"):
        fill_holes("theorem a : True := sorry", LEAN, ["trivial", "trivial"])
    with pytest.raises(InputError, match="fill 1 is empty"):
        fill_holes("theorem a : True := sorry", LEAN, ["  \n"])
    # fewer fills than holes fill a prefix
    out = fill_holes("theorem a : True := sorry\ntheorem b : True := sorry", LEAN, ["trivial"])
    assert len(find_holes(out, LEAN)) == 1


@needs_shared
def test_putnam_solution_targets() -> None:
    src = (DATA / "putnambench-lean4" / "lean4" / "src" / "putnam_2016_b1.lean").read_text()
    assert target_names(src, LEAN) == ["putnam_2016_b1_solution", "putnam_2016_b1"]


def _shipped_tasks() -> list[tuple[str, Language, str]]:
    items = [(str(p), LEAN, p.read_text()) for p in (DATA / "putnambench-lean4").rglob("*.lean")]
    items += [(str(p), LEAN, p.read_text()) for p in (DATA / "minif2f-lean4").rglob("*.lean")]
    items += [(str(p), COQ, p.read_text()) for p in (DATA / "minif2f-coq").rglob("*.v")]
    for name in ("minif2f-lean4/minif2f_deepseek_v15.jsonl", "proofnet-lean4/proofnet_deepseek_v15.jsonl",
                 "proofnet-lean4/proofnet_lean4_rahul3613.jsonl"):  # fmt: skip
        for line in (DATA / name).read_text().splitlines():
            row = json.loads(line)
            items.append((f"{name}:{row['name']}", LEAN, row["header"] + row["formal_statement"]))
    return [
        (n, lang, t)
        for n, lang, t in items
        if not n.endswith(("Test.lean", "Valid.lean", "lakefile.lean"))
    ]


# Two ProofNet statements in the rahul3613 port are cut off inside a binder `(f_a := sorry`,
# so the hole sits in the signature itself: no filling can keep them unchanged.
BROKEN_UPSTREAM = ("Ireland_Rosen_exercise_2_4", "Ireland_Rosen_exercise_4_11")


@needs_shared
def test_every_shipped_task_can_be_filled_and_passes_the_text_layer() -> None:
    items = _shipped_tasks()
    assert len(items) > 2800  # the merged PutnamBench JSONL repeats the .lean files
    failures = []
    for i, (name, language, text) in enumerate(items):
        holes = find_holes(text, language)
        if not target_names(text, language):
            failures.append((name, "no target"))
            continue
        if language == LEAN:
            script = "simp" if i % 2 else "intro x\nsimp at *\nring_nf"
        else:
            script = "lia." if i % 2 else "intros.\nlia."
        candidate = fill_holes(text, language, [script] * len(holes))
        verifier = StrictVerifier(None, language=language)
        findings = verifier.static_findings(text, candidate, TaskKind.evaluation)
        if find_holes(candidate, language) or findings:
            failures.append((name, findings[:1]))
    assert [n for n, _ in failures if not n.endswith(BROKEN_UPSTREAM)] == []
    assert len(failures) == 2
