"""Every Lean reader held against what real Lean printed (`tests/fixtures/lean_real/`, quoted
from the Lean 4 repository, Mathlib, the Lean reference manual and lean-by-example, whose CI
checks each `#guard_msgs` block against a real toolchain): the `#print axioms` reader, the
identity check's canonical form and answer check, the value check's constants, and the
elaborated-statement grammar. No Lean runs here; these are Lean's own recorded answers."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from formalbench.backends.lean.axioms import parse_axioms_message
from formalbench.backends.lean.repl_protocol import reply_diagnostics
from formalbench.checking import lean_printed
from formalbench.checking.lean_identity import QUERY_PREFIX, answer_form_problem, canonical
from formalbench.core.config import LEAN_ALLOWED_AXIOMS
from formalbench.metrics.gted import gted
from formalbench.metrics.lean_elab_optree import lean_elab_term
from formalbench.metrics.lean_optree import LeanParseError
from formalbench.metrics.optree import OpTree
from tests.lean_real import Pair, all_pairs
from tests.shared_data import FIXTURES, needs_shared

PAIRS = all_pairs()
TERMS = [p for p in PAIRS if p.kind in ("check", "print")]
AXIOMS = [p for p in PAIRS if p.kind == "axioms"]
PRINTS = [p for p in PAIRS if p.kind == "print"]


def one(command: str, fixture: str = "") -> Pair:
    (pair,) = [p for p in PAIRS if p.command == command and p.fixture.startswith(fixture)]
    return pair


def test_the_fixtures_are_forty_real_pairs_with_their_source() -> None:
    assert len(PAIRS) >= 40
    kinds = Counter(p.kind for p in PAIRS)
    assert kinds["axioms"] >= 5 and kinds["print"] >= 10 and kinds["check"] >= 40
    assert all(p.repo.count("/") == 1 and p.path for p in PAIRS if p.commit)
    assert {p.fixture for p in PAIRS if p.commit is None} == {"public_wrapped_axioms.lean"}
    outputs = "\n".join(p.output for p in PAIRS)
    for form in ("nat_lit", "Bool.true", "↦", ".{u}", "[inst :", "⋯", "sorryAx", "depends on "
                 "axioms: [propext,\n", "does not depend", "@[instance_reducible]", "Π (x"):  # fmt: skip
        assert form in outputs, form
    assert sum(p.pp_all for p in PAIRS) >= 4


# --- #print axioms -------------------------------------------------------------------------
@pytest.mark.parametrize("pair", AXIOMS, ids=lambda p: p.command)
def test_every_real_axioms_answer_is_read(pair: Pair) -> None:
    parsed = parse_axioms_message(pair.output)
    assert parsed is not None
    name, axioms = parsed
    asked = pair.command.removeprefix("#print axioms ").strip()
    assert name == asked or name.endswith("." + asked)
    listed = re.findall(r"\[(.*)\]", pair.output, re.S)
    expected = [a.strip() for a in listed[0].split(",")] if listed else []
    assert axioms == expected and all("\n" not in a and a for a in axioms)


def test_axioms_that_must_refuse_are_seen() -> None:
    allowed = set(LEAN_ALLOWED_AXIOMS)
    assert parse_axioms_message(one("#print axioms contra").output) == ("contra", ["sorryAx"])
    assert parse_axioms_message(one("#print axioms foo").output) == ("foo", [])
    native = parse_axioms_message(one("#print axioms one_add_one").output)
    assert native is not None and not set(native[1]) <= allowed  # native_decide's own axiom
    em = parse_axioms_message(one("#print axioms Classical.em").output)
    assert em is not None and set(em[1]) <= allowed


# --- identity: canonical form --------------------------------------------------------------
_BINDER_NAMES = re.compile(
    r"(?:[∀∃Π⋃⋂⨆⨅λ∑∏]|∃!|\bfun)\s+((?:[^\W\d][\w'!?✝]*\s+)*[^\W\d][\w'!?✝]*)"
    r"(?=\s*(?:[,>≥<≤∈∉⊆⊂⊇⊃]|:(?!=)|=>|↦))"
    r"|(?<!\.)[({\[⦃]\s*((?:[^\W\d][\w'!?✝]*\s+)*[^\W\d][\w'!?✝]*)\s*(?::(?!=)|[}⦄])"
)


def bound_names(text: str) -> set[str]:
    """Names the text binds, read by a regular expression independent of the reader under
    test: bare names after a binder word, names before the `:` of a bracket group."""
    found: set[str] = set()
    head = re.match(r"[^.:]*?[\w'✝]\.\{([^}]*)\}", text)  # the declaration's universes
    if head:
        found.update(x.strip() for x in head.group(1).split(","))
    for m in _BINDER_NAMES.finditer(text):
        found.update((m.group(1) or m.group(2)).split())
    return found - {"_"}


def rename(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = re.sub(rf"(?<![\w.'«]){re.escape(old)}(?![\w'!?✝])", new, text)
    return text


@pytest.mark.parametrize("pair", TERMS, ids=lambda p: f"{p.fixture}:{p.command[:40]}")
def test_renaming_bound_variables_of_a_real_answer_changes_nothing(pair: Pair) -> None:
    names = bound_names(pair.output)
    renamed = rename(pair.output, {n: f"zz{i}" for i, n in enumerate(sorted(names))})
    assert canonical(renamed) == canonical(pair.output)
    if names:
        assert renamed != pair.output


def test_changing_a_binder_of_a_real_answer_changes_the_form() -> None:
    g = one("#print g").output  # pp.all: {α : Type u} → [inst : BEq.{u} α] → (x : …) → Nat
    assert canonical(g.replace("[inst : BEq.{u} α] →", "{inst : BEq.{u} α} →")) != canonical(g)
    assert canonical(g.replace("(x : @E.{u} α inst → Nat) →", "(x : @E.{u} α inst → Int) →"))
    assert canonical(g.replace("(x : @E.{u} α inst → Nat) →", "(x : @E.{u} α inst → Int) →")) != (
        canonical(g)
    )
    # the instance binder's name is bound: renaming it is harmless, using another is not
    assert canonical(rename(g, {"inst": "i", "u": "w"})) == canonical(g)
    assert canonical(g.replace("α inst →", "α instBEqNat →")) != canonical(g)
    prod = one("#print Prod", "lean4_printStructure").output
    assert canonical(prod.replace("(fst : α)", "{fst : α}")) != canonical(prod)
    assert canonical(prod.replace("(α : Type u) (β : Type v)", "(β : Type v) (α : Type u)")) != (
        canonical(prod)
    )


def test_the_same_term_spelt_with_another_arrow_is_the_same() -> None:
    plain = one("#check fun a b c ↦  a + b + c + 1").output
    arrow = [p for p in PAIRS if p.output.startswith("fun a b c ↦")][0].output
    assert canonical(plain) == canonical(arrow)


# --- identity: which answers can be read ---------------------------------------------------
@pytest.mark.parametrize("pair", PRINTS, ids=lambda p: p.command)
def test_every_real_print_answer_has_a_known_form(pair: Pair) -> None:
    name = pair.command.removeprefix("#print").strip()
    assert answer_form_problem(name, "#print", pair.output) is None
    assert answer_form_problem("someOtherName", "#print", pair.output) is not None


def test_answers_that_cannot_be_read_are_refused_with_a_reason() -> None:
    cut = one("#check OnlyThreeOrFive.mk 3 (ok := .inl rfl) ..").output
    assert "cut short" in (answer_form_problem("OnlyThreeOrFive.mk", "#check", cut) or "")
    axioms = one("#print axioms contra").output
    assert answer_form_problem("contra", "#print", axioms) is not None
    half = one("#print g").output.rsplit(")", 1)[0]
    assert "unbalanced" in (answer_form_problem("g", "#print", half) or "")


def test_queries_pin_every_option_the_readers_depend_on() -> None:
    for option in ("pp.all true", "pp.unicode.fun false", "pp.natLit true", "pp.proofs true",
                   "pp.maxSteps", "pp.deepTerms true", "pp.oneline false", "pp.fullNames true",
                   "pp.fieldNotation false"):  # fmt: skip
        assert f"set_option {option}" in QUERY_PREFIX


# --- value check: the constants of a #print answer ----------------------------------------
_NOT_CONSTANTS = {"def", "theorem", "fun", "private", "structure", "class", "inductive",
                  "instance_reducible", "reducible", "irreducible", "number", "fields",
                  "constructor", "max", "u", "v", "u_1", "Type", "Sort", "nat_lit"}  # fmt: skip


@pytest.mark.parametrize("pair", PRINTS, ids=lambda p: p.command)
def test_constants_of_a_real_print_answer_are_constants_only(pair: Pair) -> None:
    found = set(lean_printed.constants(pair.output))
    assert not found & _NOT_CONSTANTS
    assert not found & bound_names(pair.output)


def test_constants_of_real_definitions() -> None:
    assert lean_printed.constants(one("#print g").output) == [
        "g", "BEq", "E", "Nat", "OfNat.ofNat", "instOfNatNat"]  # fmt: skip
    assert lean_printed.constants(one("#print i1").output) == ["i1", "Inhabited", "Nat",
                                                              "inferInstance"]  # fmt: skip
    succ = lean_printed.constants(one("#print Nat.add_succ").output)
    assert succ == ["Nat.add_succ", "Nat", "rfl"]  # `m.succ` is a bound variable's field
    alt = lean_printed.constants(one("#print Alternative").output)
    assert {"Function.const", "pure", "id", "Alternative.mk"} <= set(alt)


# --- elaborated operator trees -------------------------------------------------------------
def _term_and_type(output: str) -> tuple[str, str]:
    if output.startswith(("def ", "theorem ", "@[")):
        head = output.split(" : ", 1)[1]
        if ":=" not in head:  # `#print sig`: a signature without a value
            return head, head
        return head.split(":=", 1)[1], head.split(":=", 1)[0]
    m = re.match(r"(.*)\s:\s(.*)$", output, re.S)  # the last ` : ` (or one before a line break)
    assert m, output
    return m[1], m[2]


@pytest.mark.parametrize("pair", TERMS, ids=lambda p: f"{p.fixture}:{p.command[:40]}")
def test_the_grammar_reads_pp_all_output_and_refuses_the_rest_clearly(pair: Pair) -> None:
    term, typ = _term_and_type(pair.output)
    if pair.pp_all:
        lean_elab_term(term)
        lean_elab_term(typ)
        return
    for text in (term, typ):
        try:
            lean_elab_term(text)
        except LeanParseError as exc:
            assert str(exc)


def test_real_numerals_and_dependent_arrows_become_trees() -> None:
    twos = [p for p in PAIRS if p.pp_all and p.command == "#check 2"]
    assert {lean_elab_term(_term_and_type(p.output)[0]).show() for p in twos} == {"2"}
    neg = lean_elab_term(_term_and_type(one("#check -32.0").output)[0])
    assert neg.show() == "(Neg.neg Float instNegFloat 32.0)"
    typ = _term_and_type(one("#print g").output)[1]
    tree = lean_elab_term(typ)
    assert tree.label == "∀ _ , _" and tree.children[-1].label == "∀ _ , _"
    renamed = lean_elab_term(rename(typ, {"α": "β", "inst": "i", "x": "y"}))
    assert gted(OpTree("theorem", [renamed]), OpTree("theorem", [tree])) == 1.0


# --- the REPL's own recorded replies (shared fixtures, toolchain v4.33.0-rc2) ---------------
@needs_shared
def test_recorded_repl_replies_are_read_by_the_identity_readers() -> None:
    """`#print List.cons` (with and without `pp.universes`) and `#check demo` as the real REPL
    answered them: known answer forms, and renaming their bound names changes nothing."""
    answers = []
    for name in ("options", "Mathlib/file_env"):
        replies = (FIXTURES / "lean-repl" / f"{name}.expected.out").read_text(encoding="utf-8")
        for block in replies.split("\n\n"):
            if block.strip():
                answers += [d.message for d in reply_diagnostics(json.loads(block))]
    cons = [a for a in answers if a.startswith("constructor List.cons")]
    demo = [a for a in answers if a.startswith("demo ")]
    assert len(cons) == 2 and len(demo) == 1
    for text in cons:
        assert answer_form_problem("List.cons", "#print", text) is None
        assert canonical(rename(text, {"α": "β", "u": "v"})) == canonical(text)
    assert answer_form_problem("demo", "#check", demo[0]) is None
    assert canonical(rename(demo[0], {"P": "A", "Q": "B"})) == canonical(demo[0])
    assert canonical(demo[0].replace("(P Q R : Prop)", "(P R Q : Prop)")) != canonical(demo[0])


# --- forms added for issue 31: big operators, match, structure instances, numeric universes -----
def test_real_match_alternatives_bind_their_pattern_variables() -> None:
    pair = one("#check fun (a, b) => (a:Nat) + b")
    assert canonical(pair.output) == canonical(rename(pair.output, {"a": "p", "b": "q"}))
    assert canonical(pair.output) != canonical(pair.output.replace("a + b", "b + a"))
    opt = [p for p in PAIRS if p.output.startswith("fun x x_1 =>")][0].output
    # `| x, x_2 => none` binds a new `x`; renaming the pattern's alone changes nothing
    assert canonical(opt) == canonical(opt.replace("| x, x_2", "| y, x_2"))
    assert canonical(opt) != canonical(opt.replace("some (a + b)", "some (b + a)"))
    over = [p for p in PAIRS if "(motive := Nat → Nat → Nat)" in p.output][0].output
    assert canonical(over) == canonical(over.replace("| x.succ", "| y.succ"))
    matcher = one("#check g.match_1").output
    assert canonical(matcher) == canonical(rename(matcher, {"u_1": "v", "u_2": "w", "x": "y"}))


def test_real_big_operators_bind_and_name_no_bound_variable() -> None:
    sums = [p.output for p in PAIRS if p.fixture == "mathlib_BigOps.lean"]
    assert len(sums) == 12
    for text in sums:
        assert canonical(text) == canonical(rename(text, {"i": "k"}))
        assert "i" not in lean_printed.constants(text)
    with_p = one("#check Finset.sum {j ∈ s | p j} fun i ↦ f i").output  # `∑ i ∈ s with p i, f i`
    assert canonical(with_p) != canonical(with_p.replace("f i", "f s"))
    assert lean_printed.constants(with_p) == ["s", "p", "f", "M"]


def test_real_structure_instances_and_numeric_universe_lists() -> None:
    flat = one("#check {toA := {x := 1}, y := 2 : B'}").output  # `{ toA := { x := 1 }, y := 2 }`
    assert lean_printed.constants(flat) == ["B'"]  # field labels are not constants
    (with_univ,) = [p.output for p in PAIRS if p.options.get("pp.universes") == "true"
                    and p.command == "#check { x := 1 : U Nat }"]  # fmt: skip
    assert with_univ == "U.mk.{0} 1 : U.{0} Nat"
    # an instantiated universe is no parameter: another level is another term
    assert canonical(with_univ) != canonical("U.mk.{1} 1 : U.{1} Nat")
    pp_all = [p for p in PAIRS if p.fixture == "lean4_delabStructInst.lean" and p.pp_all][0]
    term, _ = _term_and_type(pp_all.output)
    assert lean_elab_term(term).show() == "(A.mk 1)"
    assert lean_printed.constants(pp_all.output) == [
        "A.mk", "OfNat.ofNat", "Nat", "instOfNatNat", "A"]  # fmt: skip


def test_real_literals_and_subtypes() -> None:
    char = one("#check 'a'").output  # `'a' : Char`: a char literal names no constant `a'`
    assert lean_printed.constants(char) == ["Char"]
    assert canonical(char) != canonical("'b' : Char")
    assert lean_printed.constants(one('#check "Hello"').output) == ["String"]
    assert lean_elab_term('"Hello"').show() == '"Hello"'
    sub = one("#check { x : Int // x > 0 }").output  # `{ x // x > 0 } : Type`
    assert canonical(sub) == canonical(rename(sub, {"x": "n"}))
    assert canonical(sub) != canonical(sub.replace("x > 0", "x > x"))
    assert lean_printed.constants(sub) == []


def test_real_inaccessible_names_equations_and_quotient_primitives() -> None:
    eq_def = one("#check f_exp_wfrec.eq_def").output  # `(x✝ x✝¹ : Nat)`: two names, not one
    assert canonical(eq_def) != canonical(eq_def.replace("match x✝, x✝¹", "match x✝¹, x✝"))
    assert canonical(eq_def) == canonical(rename(eq_def, {"n": "k", "acc": "a"}))
    assert "acc" not in lean_printed.constants(eq_def) and "n" not in lean_printed.constants(eq_def)
    cases = one("#print Nat.casesOn").output  # `fun {motive} t zero succ => Nat.rec zero …`
    assert lean_printed.constants(cases) == ["Nat.casesOn", "Nat", "Nat.zero", "Nat.rec"]
    quot = one("#print Quot.ind").output
    assert answer_form_problem("Quot.ind", "#print", quot) is None
    assert lean_printed.constants(quot)[:2] == ["Quot.ind", "Quot"]


def test_real_if_then_else_and_a_pattern_variable_shadowing_a_bound_name() -> None:
    """`theorem g.eq_def : ∀ (i : Nat) (j : N), g i j = if i < 5 then N.zero else match j with
    … | j.succ => g i j`: the pattern's `j` is a new name (issue 31's own example)."""
    eq_def = one("#print sig g.eq_def").output
    assert canonical(eq_def) == canonical(eq_def.replace("| j.succ => g i j", "| k.succ => g i k"))
    assert canonical(eq_def) != canonical(eq_def.replace("| j.succ => g i j", "| k.succ => g i j"))
    assert canonical(eq_def) != canonical(eq_def.replace("if i < 5", "if i < 6"))
    assert lean_printed.constants(eq_def) == ["g.eq_def", "Nat", "N", "g", "N.zero", "N.zero.succ"]
    foo = one("#check foo.eq_def").output  # `let x := n - 1; let_fun this := foo._proof_4; foo x`
    assert canonical(foo) == canonical(rename(foo, {"x": "y", "this": "h", "n": "m"}))
    assert "this" not in lean_printed.constants(foo)
