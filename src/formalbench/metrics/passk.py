"""The unbiased pass@k estimator and the k values a run reports.

With n samples of which c pass, the chance that k samples drawn without replacement
contain at least one pass is 1 - C(n-c, k) / C(n, k). The binomials overflow floats long
before n gets large, so the ratio is taken as the product prod_{i=n-c+1..n} (1 - k/i), or
the equal product prod_{j=0..k-1} (1 - c/(n-j)) when k < c (fewer factors), summed in log
space (`log1p`) and turned back with `expm1`: that keeps full relative precision even when
pass@k is tiny (the product is then within rounding of 1, and `1 - product` would cancel).

Undefined inputs raise `InputError` instead of returning a number: k > n (the estimator
needs at least k samples to draw from), n = 0, c outside [0, n], k < 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from formalbench.core.errors import InputError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k of the n samples passes, given c of them do."""
    _check(n, c, k)
    if c == 0:
        return 0.0
    if n - c < k:  # every draw of k samples contains a pass: C(n-c, k) = 0
        return 1.0
    if c <= k:  # C(n-c, k) / C(n, k) as c factors ...
        terms = (-k / i for i in range(n - c + 1, n + 1))
    else:  # ... or, the same ratio, as k factors: prod_{j<k} (1 - c/(n-j))
        terms = (-c / (n - j) for j in range(k))
    return -math.expm1(math.fsum(math.log1p(t) for t in terms))


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> float:
    """Mean of pass@k over tasks given as (n, c) pairs; each task may have its own n."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    if not values:
        raise InputError(f"pass@{k}: no tasks to average over")
    return math.fsum(values) / len(values)


def ks_for(n: int) -> list[int]:
    """The k values worth reporting for n samples: 1, 2, 4, ... up to n, and n itself."""
    if n < 1:
        raise InputError(f"pass@k needs at least one sample per task, got n={n}")
    ks = []
    k = 1
    while k <= n:
        ks.append(k)
        k *= 2
    if ks[-1] != n:
        ks.append(n)
    return ks


def _check(n: int, c: int, k: int) -> None:
    if n < 1:
        raise InputError(f"pass@k is undefined with n={n} samples")
    if not 0 <= c <= n:
        raise InputError(f"pass@k: c={c} passing samples is outside 0..n={n}")
    if k < 1:
        raise InputError(f"pass@k: k must be at least 1, got {k}")
    if k > n:
        raise InputError(f"pass@{k} is undefined with only n={n} samples (needs k <= n)")
