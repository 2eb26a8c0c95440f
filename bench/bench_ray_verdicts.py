"""Coq verdicts with each kind of backend: the attack and genuine-proof suites of the real-coqc
tests judged through a local coqc backend, through `--executor ray` (a local Ray, real coqc
on the actor) and through a backend that is not a coqc backend in the verifier's process
(a wrapper around one: the situation `--executor ray` was in before the identity route ran
on the actor). Prints, per backend, attacks accepted, genuine proofs accepted, refusals by
reason, and the median wall time of a check.

    python bench/bench_ray_verdicts.py                  # all three
    python bench/bench_ray_verdicts.py --only wrapped   # one of local, ray, wrapped

Run it under another checkout (`PYTHONPATH=/path/src`) to see that checkout's verifier.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the `tests` package

from formalbench.backends.base import Backend  # noqa: E402
from formalbench.backends.coq import CoqBackend  # noqa: E402
from formalbench.checking.verifier import StrictVerifier  # noqa: E402
from formalbench.core.records import CheckResult, Language  # noqa: E402
from tests import test_coq_identity_attacks as identity_suite  # noqa: E402
from tests import test_coq_verdicts_real as real_suite  # noqa: E402


class Wrapped(Backend):
    """A Coq backend that is not a `CoqBackend`: every check handed to one (as a remote
    executor's driver-side object does)."""

    name = "wrapped:coq"
    language = Language.coq

    def __init__(self) -> None:
        super().__init__(workers=1)
        self.inner = CoqBackend(workers=1, timeout=60)

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        return self.inner.check(source, targets=targets, timeout=timeout)

    def version(self) -> str:
        return self.inner.version()


def make(kind: str) -> Backend:
    if kind == "local":
        return CoqBackend(workers=1, timeout=60)
    if kind == "ray":
        from formalbench.backends.ray_backend import RayBackend

        return RayBackend("coq", language=Language.coq, workers=1, timeout=60)
    return Wrapped()


def run(kind: str) -> None:
    attacks = {**real_suite.ATTACKS, **identity_suite.ATTACKS}
    genuine = {**real_suite.GENUINE, **identity_suite.GENUINE}
    backend = make(kind)
    verifier = StrictVerifier(backend)
    times: list[float] = []
    reasons: Counter[str] = Counter()

    async def judge(pairs: dict[str, tuple[str, str]]) -> list[str]:
        accepted = []
        for name, (original, candidate) in pairs.items():
            start = time.perf_counter()
            verdict = await verifier.averify(original, candidate)
            times.append(time.perf_counter() - start)
            if verdict.passed:
                accepted.append(name)
            reasons.update(r.value for r in verdict.reasons)
        return accepted

    try:
        bad = asyncio.run(judge(attacks))
        good = asyncio.run(judge(genuine))
    finally:
        backend.close()
    print(f"{kind}: attacks accepted {len(bad)} of {len(attacks)}", *bad, sep="\n  ")
    print(f"{kind}: genuine proofs accepted {len(good)} of {len(genuine)}")
    print(f"{kind}: refusals by reason {dict(reasons.most_common())}")
    print(f"{kind}: median wall time of a check {statistics.median(times):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("local", "ray", "wrapped"))
    args = parser.parse_args()
    for kind in [args.only] if args.only else ["local", "ray", "wrapped"]:
        run(kind)


if __name__ == "__main__":
    main()
