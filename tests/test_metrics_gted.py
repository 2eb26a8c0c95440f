"""GTED: the cost model, the agreement figures and the Lean text parser (no shared data)."""

from __future__ import annotations

import random

import pytest

from formalbench.metrics.agreement import Agreement, agreement, best_threshold, cross_validated
from formalbench.metrics.gted import engines, gted, tree_edit_distance
from formalbench.metrics.lean_optree import LeanParseError, lean_tree
from formalbench.metrics.optree import HYPOTHESIS, VARIABLE, OpTree, tree_from_json


def leaf(label: str, free: str | None = None) -> OpTree:
    return OpTree(label, [], free)


def test_free_cost_renaming_needs_the_same_kind() -> None:
    a = OpTree(" _ = _ ", [leaf("x", VARIABLE), leaf("1")])
    b = OpTree(" _ = _ ", [leaf("y", VARIABLE), leaf("1")])
    c = OpTree(" _ = _ ", [leaf("h", HYPOTHESIS), leaf("1")])
    d = OpTree(" _ = _ ", [leaf("y"), leaf("1")])
    for engine in engines():
        assert tree_edit_distance(a, b, engine) == 0
        assert tree_edit_distance(a, c, engine) == 1
        assert tree_edit_distance(a, d, engine) == 1
    assert gted(a, c) == pytest.approx(1 - 1 / 3)


def test_insertions_count_against_the_larger_tree() -> None:
    small = OpTree(" _ < _ ", [leaf("0"), leaf("a")])
    big = OpTree(" _ ∧ _ ", [small, OpTree(" _ < _ ", [leaf("0"), leaf("b")])])
    assert tree_edit_distance(small, big, "apted") == 4
    assert gted(small, big) == pytest.approx(1 - 4 / 7)


def test_tree_json_round_trip_keeps_the_flags() -> None:
    data = {
        "content": " _ : _ ",
        "children": [
            {"content": "h₀", "children": [], "hypothesis_freecost": True},
            {"content": "x", "children": [], "variable_freecost": True},
        ],
    }
    tree = tree_from_json(data)
    assert [c.free for c in tree.children] == [HYPOTHESIS, VARIABLE]
    assert tree.to_json() == data
    with pytest.raises(ValueError):
        tree_from_json({"children": []})


def test_kappa_and_the_usual_figures() -> None:
    a = Agreement(tp=20, fp=5, fn=10, tn=15)
    assert a.precision == pytest.approx(0.8)
    assert a.recall == pytest.approx(2 / 3)
    assert a.accuracy == pytest.approx(0.7)
    # p_o = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5
    assert a.kappa == pytest.approx(0.4)
    assert agreement([0.9, 0.2, 0.8], [True, False, False], 0.5) == Agreement(1, 1, 0, 1)


def test_sweep_and_cross_validation() -> None:
    scores = [i / 20 for i in range(20)]
    labels = [s >= 0.5 for s in scores]
    t, a = best_threshold(scores, labels)
    assert 0.45 < t <= 0.5 and a.kappa == pytest.approx(1.0)
    cv = cross_validated(scores, labels, folds=4)
    assert cv["n"] == 20 and len(cv["thresholds"]) == 4
    # a label that only its own fold could explain: in-sample fits it, held out it cannot
    noisy = [*labels]
    noisy[3] = True
    t_all, a_all = best_threshold(scores, noisy)
    assert cross_validated(scores, noisy, folds=4)["kappa"] <= a_all.kappa
    with pytest.raises(ValueError):
        cross_validated([0.1], [True], folds=5)


def shape(text: str) -> str:
    tree = lean_tree(text)
    return tree.children[0].children[-1].show()


def test_lean_precedences() -> None:
    assert shape("theorem t : a + b * c = d := by sorry") == "(_ = _ (_ + _ a (_ * _ b c)) d)"
    assert shape("theorem t : a - b - c = 0 := sorry") == "(_ = _ (_ - _ (_ - _ a b) c) 0)"
    assert shape("theorem t : 2 ^ 3 ^ n = 1 := sorry") == "(_ = _ (_ ^ _ 2 (_ ^ _ 3 n)) 1)"
    assert shape("theorem t : p → q ↔ r := sorry") == "(_ ↔ _ (_ → _ p q) r)"
    assert shape("theorem t : ¬ a = b ∧ c := sorry") == "(_ ∧ _ (¬ (_ = _ a b)) c)"
    assert shape("theorem t : p ∨ q ∧ r := sorry") == "(_ ∨ _ p (_ ∧ _ q r))"
    # a big operator's body stops before `=` (level 67)
    assert shape("theorem t : ∑ i in s, f i = 5 := sorry").startswith("(_ = _ (∑ _  _ , _ i* s")
    # a quantifier takes everything to its right, also as the last operand
    assert shape("theorem t : p ∧ ∀ x : ℝ, q x ∧ r := sorry").startswith("(_ ∧ _ p (∀ _ , _")


def test_lean_binders_and_free_cost_names() -> None:
    tree = lean_tree(
        "theorem t (a b : ℝ) (h₀ : 0 < a) {f : ℝ → ℝ} [Fact p] : f a = (2 : ℝ) := by sorry"
    )
    body = tree.children[0]
    assert body.label == " _  _  _  _  _ : _ "
    names = [(b.children[0].label, b.children[0].free) for b in body.children[:4]]
    assert names == [("a", VARIABLE), ("b", VARIABLE), ("h₀", HYPOTHESIS), ("f", VARIABLE)]
    assert body.children[4].label == "[ _ ]"
    assert body.children[-1].show() == "(_ = _ (f _ a*) 2)"  # numeral folded


def test_renamed_statements_score_one_and_changes_score_less() -> None:
    p = "theorem a (x y : ℕ) (h : x < y) : ∀ z, z + x < z + y := by sorry"
    q = "theorem b (m n : ℕ) (hmn : m < n) : ∀ k, k + m < k + n := by sorry"
    r = "theorem c (m n : ℕ) (hmn : m ≤ n) : ∀ k, k + m < k + n := by sorry"
    assert gted(lean_tree(p), lean_tree(q)) == 1.0
    assert gted(lean_tree(p), lean_tree(r)) < 1.0


def test_lean_brackets_and_abs() -> None:
    s = shape("theorem t : |a - b| + ‖v‖ ≤ ⌊x⌋ ∧ {n : ℕ | n ∣ 6} = {1, 2, 3, 6} := sorry")
    assert "(|| (_ - _ a b))" in s and "(‖‖ v)" in s and "(⌊⌋ x)" in s
    assert "({ _ : _ | _ } n* ℕ (_ ∣ _ n* 6))" in s
    assert shape("theorem t : 2 * n ≡ 1 [ZMOD 7] := sorry") == "(_ ≡ _ [ZMOD _ ] (_ * _ 2 n) 1 7)"


def test_unparseable_text_raises_one_error_kind() -> None:
    for bad in ("theorem t : (a + := sorry", "def f := 1", "theorem t : a ⊞⊞ b := sorry"):
        with pytest.raises(LeanParseError):
            lean_tree(bad)


def test_beq_at_k_is_pass_at_k_over_judged_candidates() -> None:
    from formalbench.metrics.beq import beq_at_k, beq_table

    results = {"a": [True, False, False, False], "b": [False] * 4, "c": [True] * 4}
    assert beq_at_k(results, 1) == pytest.approx((0.25 + 0 + 1) / 3)
    assert beq_at_k(results, 4) == pytest.approx(2 / 3)
    table = beq_table(results)
    assert table["beq_count"] == 2 and set(table) == {"beq@1", "beq@2", "beq@4", "beq_count"}


def _random_tree(rng: random.Random, size: int) -> OpTree:
    labels = [" _ + _ ", " _ = _ ", "f _ ", "x", "1"]
    nodes = [
        OpTree(rng.choice(labels), [], rng.choice([None, None, VARIABLE, HYPOTHESIS]))
        for _ in range(size)
    ]
    for i in range(1, size):
        nodes[rng.randrange(i)].children.append(nodes[i])
    return nodes[0]


def test_zhang_shasha_equals_apted_on_random_trees() -> None:
    rng = random.Random(12)
    for _ in range(300):
        a = _random_tree(rng, rng.randint(1, 14))
        b = _random_tree(rng, rng.randint(1, 14))
        assert tree_edit_distance(a, b, "zhang-shasha") == tree_edit_distance(a, b, "apted")
    # deep chains and wide fans: the layouts (mirrored, swapped) the engine picks between
    chain = OpTree("a")
    for label in "bcabcabc":
        chain = OpTree(label, [chain, OpTree("x", [], VARIABLE)])
    fan = OpTree("a", [OpTree(c) for c in "abcabcxyz"])
    for a, b in [(chain, fan), (fan, chain), (chain, chain.children[0])]:
        assert tree_edit_distance(a, b, "zhang-shasha") == tree_edit_distance(a, b, "apted")
    with pytest.raises(ValueError):
        tree_edit_distance(chain, fan, "nope")
