"""Statement preservation on real benchmark statements (miniF2F, PutnamBench, miniF2F-Coq)."""

from __future__ import annotations

import json

import pytest

from formalbench.checking.holes import fill_holes
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Finding, Language, Reason
from tests.shared_data import ROOT, SHARED, needs_shared

pytestmark = needs_shared  # the statements compared here are real benchmark files

DATA = ROOT / "data"
PUTNAM = DATA / "putnambench-lean4" / "lean4" / "src"
LEAN, COQ = Language.lean, Language.coq


def minif2f(name: str) -> str:
    if SHARED is None:  # every test here is marked needs_shared and skips
        return ""
    for line in (DATA / "minif2f-lean4" / "minif2f_deepseek_v15.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["name"] == name:
            return row["header"] + row["formal_statement"] + "  sorry\n"
    raise KeyError(name)


def findings(original: str, candidate: str, language: Language = LEAN) -> list[Finding]:
    return StrictVerifier(None, language=language).static_findings(original, candidate)


def reasons(original: str, candidate: str, language: Language = LEAN) -> set[Reason]:
    return {f.reason for f in findings(original, candidate, language)}


AMC = minif2f("amc12a_2015_p10")  # (h₀ : 0 < y) (h₁ : y < x) (h₂ : x + y + x * y = 80) : x = 26
PROOF = "nlinarith [sq_nonneg (x - y)]"


def solved(original: str = AMC, proof: str = PROOF) -> str:
    return fill_holes(original, LEAN, [proof])


def test_unchanged_statement_passes() -> None:
    assert findings(AMC, solved()) == []


def test_weakened_hypothesis_fails_with_a_token_diff() -> None:
    (f,) = findings(AMC, solved().replace("(h₀ : 0 < y)", "(h₀ : 0 ≤ y)"))
    assert f.reason == Reason.statement_changed and f.subject == "amc12a_2015_p10"
    assert "expected `… h₀ : 0 [<] y ) ( …` but found `… h₀ : 0 [≤] y ) ( …`" in f.message
    assert f.line == 8 and f.column == 0


def test_dropped_hypothesis_and_changed_conclusion_fail() -> None:
    assert reasons(AMC, solved().replace(" (h₁ : y < x)", "")) == {Reason.statement_changed}
    assert reasons(AMC, solved().replace(": x = 26", ": x = 27")) == {Reason.statement_changed}


def test_renamed_theorem_is_a_missing_target() -> None:
    (f,) = findings(AMC, solved().replace("amc12a_2015_p10", "amc12a_2015_p10'"))
    assert f.reason == Reason.missing_target and f.subject == "amc12a_2015_p10"


def test_layout_comments_helpers_and_spelling_variants_pass() -> None:
    candidate = (
        "import Mathlib\nimport Aesop\nset_option maxHeartbeats 400000\n"
        "open BigOperators Real Nat Topology Rat\n\n"
        "/-- a helper -/\nlemma helper (a : ℤ) : 0 ≤ a ^ 2 := sq_nonneg a\n\n"
        "set_option maxRecDepth 1000 in\n"
        "lemma amc12a_2015_p10 (x y : ℤ)\n    (h₀ : 0 < y) -- positive\n    (h₁ : y < x)\n"
        "    (h₂ : x + y + x * y = 80) :\n    x = 26 := by\n  nlinarith [helper (x - y)]\n"
    )
    assert findings(AMC, candidate) == []


def test_lean_context_commands_before_the_target_fail() -> None:
    base = solved()
    at = base.index("theorem amc12a")
    for command in (
        "open Int",
        'notation "ℤ" => ℕ',
        'local notation a " ⊕ " b => a + b',
        "variable (h : False)",
        "instance : Add ℤ := ⟨fun a _ => a⟩",
        "attribute [local instance] Classical.propDecidable",
        "macro_rules | `(tactic| trivial) => `(tactic| omega)",
        "set_option autoImplicit true",
        "@[instance] def myAdd : Add ℤ := ⟨fun a _ => a⟩",
        "open Int in",
    ):
        candidate = base[:at] + command + "\n" + base[at:]
        got = findings(AMC, candidate)
        assert [f.reason for f in got] == [Reason.statement_changed], command
    # after the last target they cannot change the statement, but could change the queries
    # a backend appends (`#print axioms`): refused as forbidden constructs
    after = findings(AMC, base + '\nmacro "#print" "axioms" x:ident : command => `(#check $x)\n')
    assert [(f.reason, f.line) for f in after] == [(Reason.forbidden_construct, 11)]
    assert findings(AMC, base + "\nopen Int in\ntheorem extra : True := trivial\n") == []


def test_target_moved_into_a_namespace_is_missing() -> None:
    base = solved()
    at = base.index("theorem amc12a")
    candidate = base[:at] + "namespace Foo\n" + base[at:] + "end Foo\n"
    assert reasons(AMC, candidate) == {Reason.missing_target}


def test_dropped_context_command_fails() -> None:
    candidate = solved().replace("open BigOperators Real Nat Topology Rat", "open Real")
    assert reasons(AMC, candidate) == {Reason.statement_changed}
    # resource options may be dropped
    assert findings(AMC, solved().replace("set_option maxHeartbeats 0\n", "")) == []


def test_putnam_changed_preceding_definition_fails() -> None:
    original = (PUTNAM / "putnam_2008_b6.lean").read_text()
    candidate = fill_holes(original, LEAN, ["simp"])
    assert findings(original, candidate) == []
    changed = candidate.replace("|((s i) : ℤ) - i| ≤ k", "|((s i) : ℤ) - i| < k")
    (f,) = findings(original, changed)
    assert f.reason == Reason.statement_changed and f.subject == "klimited"
    assert "declaration of `klimited` changed" in f.message
    dropped = candidate.replace(candidate[candidate.index("def klimited") :].split("\n")[0], "")
    assert {f.subject for f in findings(original, dropped)} == {"klimited"}


def test_putnam_solution_signature_is_kept_and_noncomputable_may_be_added() -> None:
    original = (PUTNAM / "putnam_2016_b1.lean").read_text()
    candidate = fill_holes(original, LEAN, ["exact Real.exp 1 - 1", "simp"])
    assert findings(original, candidate) == []
    retyped = candidate.replace("putnam_2016_b1_solution : ℝ", "putnam_2016_b1_solution : ℂ")
    (f,) = findings(original, retyped)
    assert f.reason == Reason.statement_changed and f.subject == "putnam_2016_b1_solution"
    plain = candidate.replace("noncomputable abbrev", "abbrev")
    assert findings(original, plain) == []


@pytest.mark.parametrize(
    "name", ["aime_1983_p1", "mathd_numbertheory_764", "induction_sumkexp3eqsumksq"]
)
def test_coq_real_files_pass_unchanged(name: str) -> None:
    """Coq statements are the identity file's to judge (test_coq_identity_attacks.py,
    test_verifier_coq_targets.py); the text layer finds nothing in a genuine answer."""
    original = (DATA / "minif2f-coq" / "test" / f"{name}.v").read_text()
    candidate = fill_holes(original, COQ, ["intros.\nlia."])
    assert findings(original, candidate, COQ) == []
    reflowed = "(* solved *)\nRequire Import Lia.\n" + candidate.replace("\n  ", "\n    ")
    assert findings(original, reflowed, COQ) == []


def before_target(original: str, added: str) -> str:
    candidate = fill_holes(original, LEAN, ["simp"])
    at = candidate.index("theorem")
    return candidate[:at] + added + "\n" + candidate[at:]


LEAN_495 = minif2f("mathd_numbertheory_495")  # uses Nat.gcd, Nat.lcm; opens Real Nat ...


@pytest.mark.parametrize(
    "added, name",
    [
        ("namespace Real\ndef Nat.lcm (a b : ℕ) : ℕ := 200\nend Real", "Real.Nat.lcm"),
        ("def _root_.Foo.Nat.gcd (a b : ℕ) : ℕ := 6", "Foo.Nat.gcd"),
        ("def «Nat».«lcm» (a b : ℕ) : ℕ := 200", "Nat.lcm"),
        ('notation3 "ℕ" => ℤ', None),  # a context command, not a helper's trailing tokens
    ],
)
def test_lean_added_names_that_capture_a_statement_name_fail(added: str, name: str) -> None:
    (f,) = findings(LEAN_495, before_target(LEAN_495, added))
    assert f.reason == Reason.statement_changed, f
    assert name is None or f.subject == name


def test_lean_name_in_a_namespace_captures_the_root_name_of_a_target_in_it() -> None:
    original = (
        "import Mathlib\n\ndef bar : ℕ := 1\n\nnamespace Foo\n\n"
        "theorem t : bar = 1 := by\n  sorry\n\nend Foo\n"
    )
    candidate = fill_holes(original, LEAN, ["rfl"])
    assert findings(original, candidate) == []
    sneaky = candidate.replace("namespace Foo\n", "namespace Foo\n\ndef bar : ℕ := 2\n")
    (f,) = findings(original, sneaky)
    assert (f.reason, f.subject) == (Reason.statement_changed, "Foo.bar")
    helper = candidate.replace("namespace Foo\n", "namespace Foo\n\ndef baz : ℕ := 2\n")
    assert findings(original, helper) == []
