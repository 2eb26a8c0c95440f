"""Forms of Lean's printed output the readers once misread (issue 31), each read as a class of
Lean's grammar: `Type`/`Sort`/`Prop` as arguments, `∃!`, membership set-builder, match
alternatives and `fun` patterns, a numeric universe list at the head of an answer."""

from __future__ import annotations

import re

from formalbench.checking.lean_printed import canonical, constants
from formalbench.deps.lean_walk import answer_names
from formalbench.metrics.lean_elab_optree import lean_elab_term


# --- 1. `Type` as an argument is a term, not a universe level --------------------------------
def test_an_explicit_type_argument_hides_no_constant() -> None:
    choice = "def t : Nat :=\n@id.{2} Type (@Classical.choice.{2} Type instNonempty)"
    assert constants(choice) == ["t", "Nat", "id", "Classical.choice", "instNonempty"]
    const = "@Function.const Type (@Eq Unit Unit.unit Unit.unit) Nat foo.proof_1"
    assert constants(const) == ["Function.const", "Eq", "Unit", "Unit.unit", "Nat", "foo.proof_1"]
    assert "Nat" in constants("@Eq.{2} Type Nat Int") and "Bool" in constants("@f Prop Sort Bool")
    assert "Classical.choice" in answer_names(choice, "t")


def test_levels_are_still_levels_where_type_starts_a_term() -> None:
    sig = "def g.{u} {α : Type u} (β : Sort (max 1 u)) : Type u → Prop :=\nfun x => True"
    assert not {"u", "max"} & set(constants(sig))
    assert canonical(sig) == canonical(re.sub(r"\bu\b", "w", sig))
    fields = "structure S : Type\nnumber of parameters: 0\nfields:\n  S.x : Type\n  S.y : Nat"
    assert "S.y" in constants(fields)  # the line after `: Type` is not its level


def test_a_type_argument_is_kept_in_the_canonical_form_and_the_tree() -> None:
    assert canonical("@Eq.{2} Type Nat Int") != canonical("@Eq.{2} Type Bool Int")
    one, two = (lean_elab_term(f"@Eq.{{2}} Type {t} Int").show() for t in ("Nat", "Bool"))
    assert one == "(Eq Type Nat Int)" and two == "(Eq Type Bool Int)"
    choice = lean_elab_term("@id.{2} Type (@Classical.choice.{2} Type instNonempty)")
    assert choice.show() == "(id Type (Classical.choice Type instNonempty))"
    assert (
        lean_elab_term("(α : Type u) → Sort (max 1 u)").show() == "(∀ _ , _ (_ : _ α* Type) Sort)"
    )


# --- 2. `∃!` ---------------------------------------------------------------------------------
def test_unique_existence_binds() -> None:
    a = "∀ (n : ℕ), ∃! x : ℕ, ∃! y : ℕ, x + y = n"
    assert canonical(a) == canonical("∀ (m : ℕ), ∃! a : ℕ, ∃! b : ℕ, a + b = m")
    assert canonical(a) != canonical("∀ (n : ℕ), ∃! x : ℕ, ∃ y : ℕ, x + y = n")
    assert canonical(a) != canonical("∀ (n : ℕ), ∃! x : ℕ, ∃! y : ℕ, y + x = n")


# --- 3. membership set-builder ---------------------------------------------------------------
def test_membership_set_builder_binds_after_the_bar() -> None:
    assert canonical("{x ∈ s | p x}") == canonical("{y ∈ s | p y}")
    assert canonical("{x ∈ s | p x}") != canonical("{x ∈ t | p x}")
    assert canonical("{n ≤ 5 | n ≠ 2}") == canonical("{k ≤ 5 | k ≠ 2}")
    # the set is outside the name's scope: `{x ∈ x | …}` mentions an outer `x`
    assert canonical("fun x => {y ∈ x | p y}") == canonical("fun z => {x ∈ z | p x}")
    assert canonical("fun x => {x ∈ x | p x}") == canonical("fun z => {x ∈ z | p x}")
    assert canonical("fun x => {y ∈ x | p y}") != canonical("fun x => {y ∈ x | p x}")


# --- 4. match alternatives and `fun` patterns ------------------------------------------------
BEQ = "def f : L → L → Bool\n| L.cons x xs, L.cons y ys => x == y && xs == ys\n| _, _ => false"


def test_pattern_variables_are_bound_in_their_alternative() -> None:
    renamed = BEQ.replace("x", "a").replace("y", "b")
    assert canonical(BEQ) == canonical(renamed)
    assert canonical(BEQ) != canonical(BEQ.replace("x == y", "y == x"))
    assert canonical(BEQ) != canonical(BEQ.replace("L.cons y ys", "L.snoc y ys"))
    succ = "fun (i j : Nat) =>\n  match j with\n  | 0 => i\n  | j.succ => g i j"
    assert canonical(succ) == canonical(succ.replace("j.succ => g i j", "k.succ => g i k"))
    # the pattern's `j` is not the outer `j`: using the outer one is another term
    assert canonical(succ) != canonical(succ.replace("j.succ => g i j", "k.succ => g i j"))


def test_alternatives_end_where_lean_ends_them() -> None:
    flat = "fun x => match x with | a, b => a | c, d => x"
    assert canonical(flat) == canonical("fun y => match y with | p, q => p | r, s => y")
    assert canonical(flat) != canonical("fun x => match x with | a, b => a | x, d => x")
    nested = (
        "fun x =>\n  match x with\n  | a =>\n    match a with\n    | b => b\n    | c => a\n"
        "  | d => d"
    )
    assert canonical(nested) == canonical(
        nested.replace("| a", "| q").replace("a w", "q w").replace("=> a", "=> q")
    )
    assert canonical(nested) != canonical(nested.replace("| d => d", "| d => a"))
    # `|x|` is no alternative; neither is a set-builder's bar
    assert canonical("fun y => |y| + 1") == canonical("fun z => |z| + 1")
    assert canonical("{f | f = fun y => y}") == canonical("{g | g = fun z => z}")


def test_fun_with_patterns_binds_the_pattern_variables() -> None:
    assert canonical("fun (x, y) => x + y") == canonical("fun (a, b) => a + b")
    assert canonical("fun (x, y) => x + y") != canonical("fun (x, y) => y + x")
    assert canonical("fun ⟨a, h⟩ => f a h") == canonical("fun ⟨b, hb⟩ => f b hb")
    assert canonical("fun ⟨a, h⟩ => f a h") != canonical("fun ⟨a, h⟩ => f h a")


# --- 5. a numeric universe list at the head --------------------------------------------------
def test_a_numeric_universe_list_is_an_instance_not_parameters() -> None:
    assert canonical("Foo.{2} : Type 2") != canonical("Foo.{3} : Type 2")
    assert canonical("@List.map.{0, u} Nat : Type u") != canonical("@List.map.{1, u} Nat : Type u")
    # names are still parameters: renaming them is the same statement
    assert canonical("@t.{u, v} : Sort (max u v)") == canonical("@t.{a, b} : Sort (max a b)")
    assert canonical("@t.{u, v} : Sort (max u v)") != canonical("@t.{u, v} : Sort (max v u)")


def test_dotted_constructors_in_patterns_are_constants() -> None:
    """Under `pp.fullNames` (pinned by the verifier) every constructor is dotted, so a pattern
    that matches a constructor never compares equal to one that binds a variable."""
    none = "fun o => match o with | Option.none => 0 | Option.some v => v"
    assert canonical(none) != canonical("fun o => match o with | x => 0 | Option.some v => v")
    assert canonical(none) == canonical(
        "fun p => match p with | Option.none => 0 | Option.some w => w"
    )
    assert constants(none) == ["Option.none", "Option.some"]
