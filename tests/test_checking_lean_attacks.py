"""Lean attacks on the text layer (each refused) and genuine layouts it must accept: commands
off column 0, statements whose comparison used to stop early, code run while elaborating,
string braces, odd blanks; the module system, scoped commands, binder names, import order."""

from __future__ import annotations

import pytest

from formalbench.checking.decls import split_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Finding, Language, Reason

LEAN = Language.lean
ORIGINAL = "import Mathlib\n\ntheorem t (x : ℕ) (h : 0 < x) : x ≠ 0 := by\n  sorry\n"
SOLVED = ORIGINAL.replace("sorry", "omega")
HELPER = "theorem helper : True := by\n  trivial\n"


def findings(candidate: str, original: str = ORIGINAL) -> list[Finding]:
    return StrictVerifier(None, language=LEAN).static_findings(original, candidate)


def reasons(candidate: str, original: str = ORIGINAL) -> set[Reason]:
    return {f.reason for f in findings(candidate, original)}


def before_target(text: str) -> str:
    at = SOLVED.index("theorem t")
    return SOLVED[:at] + text + "\n" + SOLVED[at:]


@pytest.mark.parametrize(
    "indented",
    [
        "  attribute [instance] Nat.instAddNat",
        "    attribute [local simp] Nat.add_comm",
        "  #eval 1",
        "  export Nat (succ)",
        "  open Real",
    ],
)
def test_commands_off_column_zero_after_a_proof_are_commands(indented: str) -> None:
    got = findings(before_target(HELPER + indented + "\n"))
    assert got and all(f.reason in (Reason.statement_changed, Reason.forbidden_construct)
                       for f in got), indented  # fmt: skip
    assert any(f.line == 5 for f in got), [f.message for f in got]


def test_tactic_forms_of_open_and_set_option_stay_in_the_proof() -> None:
    proof = "theorem t (x : ℕ) (h : 0 < x) : x ≠ 0 := by\n  open Nat in\n  set_option maxRecDepth 900 in\n  omega\n"
    assert findings("import Mathlib\n\n" + proof) == []


@pytest.mark.parametrize("word", ["let", "letI", "haveI", "have"])
def test_a_statement_with_its_own_assignment_is_compared_to_its_end(word: str) -> None:
    stated = f"theorem t (x : ℕ) : {word} y := x + 1; y ≠ 0 := by\n  sorry\n"
    original = "import Mathlib\n\n" + stated
    honest = original.replace("sorry", "omega")
    weakened = honest.replace("y ≠ 0 :=", "True :=")
    assert findings(honest, original) == []
    got = findings(weakened, original)
    assert [f.reason for f in got] == [Reason.statement_changed]


def test_match_arms_opening_lines_are_part_of_the_statement() -> None:
    original = (
        "import Mathlib\n\ntheorem t (x : ℕ) : match x with\n  | 0 => True\n  | _ => x ≠ 0 := by\n"
        "  sorry\n"
    )
    honest = original.replace("sorry", "split <;> omega")
    assert findings(honest, original) == []
    weakened = honest.replace("| _ => x ≠ 0", "| _ => True")
    assert [f.reason for f in findings(weakened, original)] == [Reason.statement_changed]


@pytest.mark.parametrize(
    "inside",
    [
        "  run_tac pure ()",
        "  run_cmd pure ()",
        '  have := (IO.FS.writeFile "x" "y" : IO Unit)',
        "  have := Lean.addDecl",
        '  elab "x" : tactic => pure ()',
    ],
)
def test_code_run_while_elaborating_is_refused_anywhere(inside: str) -> None:
    candidate = SOLVED.replace("  omega\n", inside + "\n  omega\n")
    assert Reason.forbidden_construct in reasons(candidate), inside


def test_run_cmd_and_eval_as_commands_are_refused() -> None:
    assert reasons(before_target("run_cmd pure ()")) == {Reason.statement_changed}
    assert Reason.forbidden_construct in reasons(SOLVED + '\n#eval IO.FS.writeFile "a" "b"\n')


@pytest.mark.parametrize(
    "hiding",
    [
        'dbg_trace "{(sorry : ℕ)}"; omega',
        'dbg_trace "{(by native_decide : 2 = 2)}"; omega',
        'dbg_trace s!"a{(sorryAx ℕ)}b"; omega',
    ],
)
def test_tokens_in_string_braces_are_read_as_code(hiding: str) -> None:
    candidate = SOLVED.replace("by\n  omega", "by\n  " + hiding)
    assert Reason.forbidden_construct in reasons(candidate), hiding


def test_plain_strings_and_comments_do_not_count() -> None:
    candidate = SOLVED.replace("  omega", "  -- {sorry} and #eval in a comment\n  omega")
    assert findings(candidate) == []


@pytest.mark.parametrize("blank", ["\u00a0", "\u2003", "\u3000", "\u2028", "\x0b"])
def test_blanks_lean_does_not_know_are_refused(blank: str) -> None:
    """By the gate (core/hidden_chars.py), which every verdict runs first."""
    verifier = StrictVerifier(None, language=LEAN)
    got = verifier.verify(ORIGINAL, SOLVED.replace("  omega", f"  omega{blank}")).findings
    assert [f.reason for f in got] == [Reason.forbidden_construct]
    assert f"U+{ord(blank):04X}" in got[0].message
    inside_string = SOLVED.replace("  omega", f'  have _s : String := "a{blank}b"\n  omega')
    assert verifier.verify(ORIGINAL, inside_string).findings == []


def test_a_dangling_in_prefix_at_the_end_is_refused() -> None:
    got = findings(SOLVED + "\nset_option pp.proofs false in\n")
    assert Reason.forbidden_construct in {f.reason for f in got}
    assert any(f.subject == "in" for f in got)


# --- genuine texts ----------------------------------------------------------------------
def test_module_system_commands_split_and_pass() -> None:
    text = (
        "module\n\npublic import Mathlib\n\n@[expose] public section\n\n"
        "public theorem helper : True := trivial\n\nend\n\npublic section\n\n"
        "theorem t (x : ℕ) (h : 0 < x) : x ≠ 0 := by\n  omega\n\nend\n"
    )
    kinds = [d.kind for d in split_decls(text, LEAN)]
    assert kinds == ["module", "import", "section", "theorem", "end", "section", "theorem", "end"]
    assert findings(text) == []
    private = text.replace("public theorem helper", "private theorem helper")
    assert findings(private) == []


def test_scoped_commands_in_a_section_closed_before_the_target_pass() -> None:
    block = (
        "section\nopen Real\nvariable (y : ℝ)\nset_option autoImplicit true\n"
        'local notation "τ" => 2 * π\nattribute [local instance] Classical.propDecidable\n'
        "lemma helper : τ = 2 * π := rfl\nend"
    )
    assert findings(before_target(block)) == []
    namespaced = block.replace("section\n", "namespace Foo\n").replace("\nend", "\nend Foo")
    assert findings(before_target(namespaced)) == []


@pytest.mark.parametrize(
    "block",
    [
        "section\ninstance : Add ℕ := ⟨fun a _ => a⟩\nend",  # instances outlive `end`
        'section\nnotation "ℕ" => ℤ\nend',  # so do notations that are not local
        "section\nopen Real",  # never closed
    ],
)
def test_global_or_unclosed_commands_in_sections_are_still_refused(block: str) -> None:
    assert Reason.statement_changed in reasons(before_target(block)), block


def test_a_section_around_the_target_does_not_shield_its_open() -> None:
    candidate = SOLVED.replace("theorem t", "section\nopen Real\ntheorem t") + "end\n"
    assert Reason.statement_changed in reasons(candidate)


@pytest.mark.parametrize("renamed", ["(_h : 0 < x)", "(hx : 0 < x)"])
def test_renamed_binders_are_the_same_statement(renamed: str) -> None:
    assert findings(SOLVED.replace("(h : 0 < x)", renamed)) == []
    swapped = SOLVED.replace("(x : ℕ) (h : 0 < x) : x ≠ 0", "(y : ℕ) (h : 0 < y) : y ≠ 0")
    assert findings(swapped) == []


def test_renaming_that_changes_meaning_is_still_caught() -> None:
    original = "import Mathlib\n\ntheorem t (x y : ℕ) (h : x < y) : x ≠ y := by\n  sorry\n"
    swapped = original.replace("(x y : ℕ)", "(y x : ℕ)").replace("sorry", "omega")
    assert [f.reason for f in findings(swapped, original)] == [Reason.statement_changed]
    captured = original.replace("(h : x < y)", "(x : x < y)").replace("sorry", "omega")
    assert Reason.statement_changed in reasons(captured, original)


def test_imports_in_any_order_and_open_lists_as_sets() -> None:
    original = (
        "import Mathlib\nimport Aesop\n\nopen Real Nat\n\n"
        "theorem t (x : ℕ) (h : 0 < x) : x ≠ 0 := by\n  sorry\n"
    )
    solved = original.replace("sorry", "omega")
    reordered = solved.replace("import Mathlib\nimport Aesop", "import Aesop\nimport Mathlib")
    assert findings(reordered, original) == []
    assert findings(solved.replace("open Real Nat", "open Nat Real"), original) == []
    dropped = solved.replace("import Aesop\n", "")
    assert Reason.statement_changed in reasons(dropped, original)
    fewer = solved.replace("open Real Nat", "open Nat")
    assert Reason.statement_changed in reasons(fewer, original)
