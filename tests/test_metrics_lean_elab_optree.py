"""Lean operator trees from `pp.all` output. The samples are written by hand following Lean's
pretty-printer rules under `pp.all` (explicit `@` applications, universe levels, `OfNat`
numerals, trailing `fun` arguments); no Lean toolchain ran where they were written."""

from __future__ import annotations

import pytest

from formalbench.metrics.gted import gted
from formalbench.metrics.lean_elab_optree import lean_elab_tree
from formalbench.metrics.lean_optree import LeanParseError
from formalbench.metrics.optree import HYPOTHESIS, VARIABLE

NAT2 = "(@OfNat.ofNat.{0} Nat 2 (instOfNatNat 2))"
POW = "@HPow.hPow.{0, 0, 0} Nat Nat Nat (@instHPow.{0, 0} Nat Nat instPowNat)"


def lt(a: str, b: str) -> str:
    return f"@LT.lt.{{0}} Nat instLTNat {a} {b}"


def test_applications_numerals_and_binders() -> None:
    printed = f"∀ (n : Nat) (h : {lt('n', NAT2)}), {lt('n', f'({POW} {NAT2} n)')} : Prop"
    tree = lean_elab_tree(printed)
    body = tree.children[0]
    assert body.label == "∀ _ , _"
    kinds = [b.children[0].free for b in body.children[:-1]]
    assert kinds == [VARIABLE, HYPOTHESIS]
    assert body.children[-1].show() == (
        "(LT.lt Nat instLTNat n* (HPow.hPow Nat Nat Nat (instHPow Nat Nat instPowNat) 2 n*))"
    )


def test_renamed_and_rearranged_statements() -> None:
    a = lean_elab_tree(f"∀ (n : Nat), {lt(NAT2, 'n')} → {lt('n', f'({POW} {NAT2} n)')}")
    b = lean_elab_tree(f"∀ (m : Nat), {lt(NAT2, 'm')} → {lt('m', f'({POW} {NAT2} m)')}")
    c = lean_elab_tree(f"∀ (m : Nat), {lt('m', f'({POW} {NAT2} m)')}")
    assert gted(a, b) == 1.0 and 0.5 < gted(a, c) < 1.0


def test_implicit_instance_binders_trailing_fun_and_decimals() -> None:
    printed = (
        "∀ {x : Real} [inst : Fact (@LT.lt.{0} Real Real.instLT (@OfNat.ofNat.{0} Real 1 "
        "(@One.toOfNat1.{0} Real Real.instOne)) x)], @Eq.{1} Nat (@Finset.card.{0} Nat "
        "(@setOf.{0} Nat fun (k : Nat) => @Dvd.dvd.{0} Nat Nat.instDvdNat k 6)) "
        "(@OfScientific.ofScientific.{0} Nat inst 25 true 1)"
    )
    shown = lean_elab_tree(printed).show()
    assert "(Fact (LT.lt Real Real.instLT 1 x*))" in shown
    assert "(setOf Nat (fun _ => _ (_ : _ k* Nat) (Dvd.dvd Nat Nat.instDvdNat k* 6)))" in shown
    assert shown.endswith("2.5)))")
    arrows = lean_elab_tree("∀ (f : Nat → Nat) (h : ∀ (k : Nat), @Eq.{1} Nat (f k) k), True")
    kinds = [b.children[0].free for b in arrows.children[0].children[:-1]]
    assert kinds == [VARIABLE, HYPOTHESIS]  # a function is no hypothesis; a ∀ into Eq is


def test_syntax_outside_the_grammar_is_one_error_kind() -> None:
    for bad in ("match n with | 0 => True | _ => False", "∀ (n : Nat, True", "let x := 1; x"):
        with pytest.raises(LeanParseError):
            lean_elab_tree(bad)
