"""pass@k against exact combinatorics, including sizes where float binomials overflow."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb, isclose

import pytest

from formalbench.core.errors import InputError
from formalbench.metrics.passk import ks_for, mean_pass_at_k, pass_at_k


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def test_matches_exact_fraction_for_all_small_cases():
    for n in range(1, 21):
        for c in range(n + 1):
            for k in range(1, n + 1):
                want = exact(n, c, k)
                got = pass_at_k(n, c, k)
                assert isclose(got, float(want), rel_tol=1e-12, abs_tol=1e-15), (n, c, k)


def test_matches_enumeration_of_all_k_subsets():
    """The estimator's meaning: the share of k-subsets of the samples holding a pass."""
    n, k = 7, 3
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        subsets = list(itertools.combinations(outcomes, k))
        share = Fraction(sum(any(s) for s in subsets), len(subsets))
        assert isclose(pass_at_k(n, c, k), float(share), rel_tol=1e-12, abs_tol=1e-15)


def test_huge_n_where_float_binomials_overflow():
    n, c, k = 100_000, 40, 1000
    with pytest.raises(OverflowError):
        float(comb(n, k))  # the naive float form cannot even hold C(n, k)
    assert isclose(pass_at_k(n, c, k), float(exact(n, c, k)), rel_tol=1e-9)
    # many passes, fewer draws: the k-factor form of the same ratio
    n, c, k = 10**6, 999_000, 3
    assert isclose(pass_at_k(n, c, k), float(exact(n, c, k)), rel_tol=1e-12)
    n, c, k = 10**6, 7, 3  # and tiny c with k < c
    assert isclose(pass_at_k(n, c, k), float(exact(n, c, k)), rel_tol=1e-10)


def test_tiny_values_keep_relative_precision():
    # pass@k near 0: `1 - product` in plain floats would lose most digits here.
    for n, c, k in [(10**6, 1, 1), (10**5, 3, 2), (10**7, 2, 3)]:
        want = float(exact(n, c, k))
        assert isclose(pass_at_k(n, c, k), want, rel_tol=1e-10), (n, c, k)
    assert pass_at_k(10**6, 1, 1) == pytest.approx(1e-6, rel=1e-12)


def test_edge_cases():
    assert pass_at_k(16, 0, 4) == 0.0
    assert pass_at_k(16, 13, 4) == 1.0  # n - c = 3 < k: every draw holds a pass
    assert pass_at_k(16, 16, 16) == 1.0
    assert pass_at_k(5, 2, 5) == 1.0  # k = n: any pass solves the task
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(1, 1, 1) == 1.0


@pytest.mark.parametrize(
    ("n", "c", "k", "words"),
    [
        (4, 1, 5, "k <= n"),
        (0, 0, 1, "n=0"),
        (4, 5, 1, "outside"),
        (4, -1, 1, "outside"),
        (4, 1, 0, "at least 1"),
    ],
)
def test_undefined_inputs_raise(n, c, k, words):
    with pytest.raises(InputError, match=words):
        pass_at_k(n, c, k)


def test_monotone_in_k():
    n = 32
    for c in range(n + 1):
        values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
        assert all(a <= b + 1e-15 for a, b in itertools.pairwise(values))


def test_mean_with_differing_n():
    counts = [(4, 1), (8, 2), (10, 0), (3, 3)]
    want = sum(exact(n, c, 2) for n, c in counts) / len(counts)
    assert isclose(mean_pass_at_k(counts, 2), float(want), rel_tol=1e-12)
    with pytest.raises(InputError):
        mean_pass_at_k([], 1)
    with pytest.raises(InputError, match="k <= n"):
        mean_pass_at_k([(4, 1), (2, 1)], 3)


def test_ks_for():
    assert ks_for(1) == [1]
    assert ks_for(16) == [1, 2, 4, 8, 16]
    assert ks_for(10) == [1, 2, 4, 8, 10]
    assert ks_for(3) == [1, 2, 3]
    with pytest.raises(InputError):
        ks_for(0)
