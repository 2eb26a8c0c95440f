"""BEq in Coq with real coqc on hand-written pairs: equivalent reformulations must be found
through the other statement; inequivalent ones, trivial ones and ill-typed ones must not."""

from __future__ import annotations

import shutil

import pytest

from formalbench.comparison.beq_coq import CoqBeq, parse_statement
from formalbench.core.errors import InputError

pytestmark = [
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

REALS = "Require Import Reals.\nOpen Scope R_scope.\n"
ZS = "Require Import ZArith.\nOpen Scope Z_scope.\n"
NATS = "Require Import Arith.\n"


def thm(body: str, header: str = "") -> str:
    return f"{header}Theorem t {body}.\nProof. Admitted.\n"


# (name, reference, candidate, expected BEq). Statements are true (or false) but beyond the
# closers on their own (powers, exp), as benchmark statements are: a pair of refutable
# statements would be "equivalent" through ex falso.
N = "(n : nat)"
PAIRS = [
    (
        "reordered hypotheses",
        "(a b : nat) (h1 : a < b) (h2 : 1 <= a) : a * b < 2 ^ (a + b)",
        "(a b : nat) (h2 : 1 <= a) (h1 : a < b) : a * b < 2 ^ (a + b)",
        True,
    ),
    ("< flipped to >", f"{N} (h : 0 < n) : n < 2 ^ n", "(m : nat) (h : m > 0) : 2 ^ m > m", True),
    ("<= flipped to >=", f"{N} : n + 1 <= 2 ^ n", f"{N} : 2 ^ n >= n + 1", True),
    (
        "curried",
        f"{N} : 1 <= n /\\ n <= 5 -> n < 2 ^ n",
        f"{N} : 1 <= n -> n <= 5 -> n < 2 ^ n",
        True,
    ),
    (
        "redundant hypothesis",
        f"{N} (h : 2 <= n) : n + 1 < 2 ^ n",
        f"{N} (h : 2 <= n) (h0 : 1 <= n) : n + 1 < 2 ^ n",
        True,
    ),
    (
        "renamed variables",
        f"{N} (hn : 2 <= n) : n + 1 < 2 ^ n",
        "(m : nat) (hm : 2 <= m) : m + 1 < 2 ^ m",
        True,
    ),
    (
        "symmetric conclusion",
        f"{N} : 2 ^ (n + 1) = 2 * 2 ^ n",
        f"{N} : 2 * 2 ^ n = 2 ^ (n + 1)",
        True,
    ),
    ("symmetric hypothesis", f"{N} (h : 2 ^ n = 8) : n = 3", f"{N} (h : 8 = 2 ^ n) : n = 3", True),
    ("binder vs forall", ": forall n : nat, n < 2 ^ n", f"{N} : n < 2 ^ n", True),
    (
        "reals, < flipped",
        "(x : R) (h : 0 < x) : 1 < exp x",
        "(x : R) (h : x > 0) : exp x > 1",
        True,
    ),
    (
        "integers, < flipped",
        "(x : Z) (h : 0 < x) : x < 2 ^ x",
        "(x : Z) (h : x > 0) : 2 ^ x > x",
        True,
    ),
    ("dropped hypothesis", f"{N} (h : 2 <= n) : n + 1 < 2 ^ n", f"{N} : n + 1 < 2 ^ n", False),
    (
        "weakened bound",
        f"{N} (h : 3 <= n) : 2 * n + 1 < 2 ^ n",
        f"{N} (h : 2 <= n) : 2 * n + 1 < 2 ^ n",
        False,
    ),
    ("changed bound", f"{N} : n + 1 <= 2 ^ n", f"{N} : n + 2 <= 2 ^ n", False),
    ("changed constant", f"{N} : n < 2 ^ n", f"{N} : n < 3 ^ n", False),
    ("reversed inequality", f"{N} : n < 2 ^ n", f"{N} : 2 ^ n < n", False),
    ("trivial candidate", f"{N} : n < 2 ^ n", "(x : nat) : x + 0 = x", False),
    ("reals, dropped positivity", "(x : R) (h : 0 < x) : 1 < exp x", "(x : R) : 1 < exp x", False),
    ("changed type", f"{N} : (n < 2 ^ n)%nat", "(x : Z) (h : 0 <= x) : x < 2 ^ x", False),
    (
        "hypothesis turned into conclusion",
        f"{N} (h : 2 ^ n = 8) : n = 3",
        f"{N} (h : n = 3) : 2 ^ n = 8",
        False,
    ),
]


def header_for(body: str) -> str:
    if ": R" in body or "-> R" in body:
        return REALS
    if ": Z" in body or "-> Z" in body:
        return ZS
    return NATS


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    pairs = [(thm(p, header_for(p)), thm(q, header_for(q))) for _, p, q, _ in PAIRS]
    found = CoqBeq(timeout=60).compare_many(pairs)
    return {name: r for (name, *_), r in zip(PAIRS, found, strict=True)}


@pytest.mark.parametrize(("name", "expected"), [(n, e) for n, _, _, e in PAIRS])
def test_beq_on_written_pairs(results: dict, name: str, expected: bool) -> None:
    r = results[name]
    assert r.compiled
    assert r.beq is expected, (r.forward, r.backward)


def test_one_way_results_are_told_apart(results: dict) -> None:
    weak = results["weakened bound"]  # the weaker hypothesis gives the stronger one
    assert not weak.forward.proved and weak.backward.counts
    trivial = results["trivial candidate"]
    assert trivial.forward.trivial and not trivial.forward.counts


def test_ill_typed_candidate_is_not_compiled() -> None:
    r = CoqBeq(timeout=60).compare(
        thm("(n : nat) : n < 2 ^ n", NATS), thm("(n : nat) : n < 2 ^ true", NATS)
    )
    assert not r.compiled and not r.beq


def test_hostile_statements_never_reach_coqc() -> None:
    with pytest.raises(InputError, match="Axiom|only Require"):
        parse_statement("Axiom cheat : False.\nTheorem t : 1 = 2.", "candidate")
    with pytest.raises(InputError):
        parse_statement('Load "evil".\nTheorem t : 1 = 2.', "candidate")
    with pytest.raises(InputError, match="exactly one"):
        parse_statement("Theorem a : True.\nTheorem b : True.", "candidate")
    # a proof is dropped: only the statement is compared
    kept = parse_statement("Theorem t (x : nat) : x = x.\nProof. admit. Admitted.", "candidate")
    assert kept.term == "forall (x : nat), x = x"
