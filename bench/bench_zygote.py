"""The compile and replay zygotes (backends/coq_zygote.py) against the cold route, in-process.

Each candidate of `bench_serve.candidates` (miniF2F-Coq: each task's portfolio proof and one
failed attempt) is checked four ways in turn, so that a shared machine's load drift hits
every way alike: compile only (`CoqBackend.check`) cold and through a zygote, and the strict
verdict (`StrictVerifier.verify`: compile, dump, coqchk replay; each task already built, no
verdict cache) cold and with zygotes. Prints checks per second per way, each as a multiple of
cold coqc (the compile-only cold way), and how many strict verdicts agree (passed, reasons).

    python bench/bench_zygote.py [--limit 9] [--rounds 2]    # the toolchain: rocq-9.2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_serve import candidates  # noqa: E402
from formalbench.backends.coq import CoqBackend  # noqa: E402
from formalbench.checking.verifier import StrictVerifier  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=9, help="tasks (two candidates each)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    items = candidates(args.limit)
    cold, warm = CoqBackend(zygote=False), CoqBackend(zygote=True)
    strict_cold, strict_warm = StrictVerifier(cold), StrictVerifier(warm)
    for _, original, candidate in items:  # zygotes started, tasks built and dumped
        strict_cold.verify(original, candidate)
        strict_warm.verify(original, candidate)
    print(f"{len(items)} candidates on {cold.toolchain.name}, load {os.getloadavg()[0]:.1f}")
    spent = dict.fromkeys(("compile cold", "compile zygote", "strict cold", "strict zygote"), 0.0)
    agree = 0
    for _ in range(args.rounds):
        for _, original, candidate in items:
            ways: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
                "compile cold": (cold.check, (candidate,)),
                "compile zygote": (warm.check, (candidate,)),
                "strict cold": (strict_cold.verify, (original, candidate)),
                "strict zygote": (strict_warm.verify, (original, candidate)),
            }
            got = {}
            for way, (run, given) in ways.items():
                t0 = time.monotonic()
                got[way] = run(*given)
                spent[way] += time.monotonic() - t0
            a, b = got["strict cold"], got["strict zygote"]
            reasons = [[f.reason for f in v.findings] for v in (a, b)]
            agree += a.passed == b.passed and reasons[0] == reasons[1]
    n = args.rounds * len(items)
    for way, seconds in spent.items():
        rate = spent["compile cold"] / seconds
        print(f"{way:15s} {seconds:6.2f} s for {n}: {n / seconds:6.2f}/s  ({rate:.2f}x cold coqc)")
    print(f"strict verdicts agreeing: {agree}/{n}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
