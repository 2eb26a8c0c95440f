"""Bench of the Lean REPL pool with the stand-in REPL (no Lean toolchain runs here).

Prints: (1) the orchestration overhead of `LeanBackend.check` per warm check, i.e. its wall
time minus the stand-in's own time for the requests of that check (the stand-in reports it
with --report-time), target < 2 ms median; (2) how close to its limit a hung check is cut,
target within 10 %, and that the next check is served (by a restarted process); (3) the
throughput of `check_many` on 2 workers. Runs in well under a minute.

    python bench/bench_repl_pool.py [--checks 500] [--hang-timeout 1.0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from formalbench.backends.base import CheckRequest
from formalbench.backends.lean.backend import LeanBackend
from formalbench.backends.lean.process import Exchange, ReplProcess

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "standins" / "fake_repl.py"
HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 400000\n\nopen BigOperators Real Nat\n\n"

_standin_time: list[float] = []  # the stand-in's own seconds for each exchange of the current check
_original_request = ReplProcess.request


def _spy(self: ReplProcess, payload: dict, timeout: float) -> Exchange:
    exchange = _original_request(self, payload, timeout)
    if exchange.reply is not None:
        _standin_time.append(float(exchange.reply.get("standin_s", 0.0)))
    return exchange


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def overhead(checks: int) -> None:
    ReplProcess.request = _spy  # type: ignore[method-assign]
    walls, own, extra = [], [], []
    with LeanBackend(repl_command=[sys.executable, str(FAKE), "--report-time"], workers=1) as lean:
        for i in range(checks + 20):
            source = f"{HEADER}theorem t{i} (n : ℕ) : n + 0 = n := by\n  simp\n"
            _standin_time.clear()
            start = time.perf_counter()
            result = lean.check(source, targets=[f"t{i}"])
            wall = time.perf_counter() - start
            assert result.compiled and f"t{i}" in result.axioms, result
            if i >= 20:  # the first checks start the process and elaborate the header
                walls.append(wall)
                own.append(sum(_standin_time))
                extra.append(wall - sum(_standin_time))
    ReplProcess.request = _original_request  # type: ignore[method-assign]
    print(f"[overhead] {checks} warm checks, 1 worker, 1 target each")
    print(f"  check wall      median {_ms(walls, 0.5):.3f} ms  p90 {_ms(walls, 0.9):.3f} ms")
    print(f"  stand-in's own  median {_ms(own, 0.5):.3f} ms")
    print(
        f"  orchestration   median {_ms(extra, 0.5):.3f} ms  p90 {_ms(extra, 0.9):.3f} ms"
        f"  (target < 2 ms median: {'met' if _ms(extra, 0.5) < 2 else 'NOT met'})"
    )


def hung(limit: float, repeats: int) -> None:
    print(f"[timeout] hung check with a {limit:g} s limit, {repeats} times, warm process")
    with LeanBackend(repl_command=[sys.executable, str(FAKE)], workers=1, timeout=30) as lean:
        lean.check(HEADER + "def warm := 1")
        for i in range(repeats):
            start = time.perf_counter()
            result = lean.check(HEADER + f"def h{i} := 1 -- fake:hang", timeout=limit)
            cut = time.perf_counter() - start
            start = time.perf_counter()
            after = lean.check(HEADER + f"theorem ok{i} : True := trivial", targets=[f"ok{i}"])
            served = time.perf_counter() - start
            print(
                f"  cut after {cut:.3f} s ({100 * (cut - limit) / limit:+.1f} % of the limit,"
                f" status {result.status.value}); next check {after.status.value},"
                f" compiled={after.compiled}, {1000 * served:.0f} ms (restart + header)"
            )
        print(f"  pool: {lean.pool_stats()}")


def throughput(checks: int) -> None:
    requests = [
        CheckRequest(source=f"{HEADER}def d{i} := {i}\n", targets=[f"d{i}"]) for i in range(checks)
    ]
    with LeanBackend(repl_command=[sys.executable, str(FAKE)], workers=2) as lean:
        list(lean.check_many(requests[:4]))  # start both processes
        start = time.perf_counter()
        results = list(lean.check_many(requests))
        wall = time.perf_counter() - start
    assert all(r.compiled for r in results)
    print(f"[throughput] {checks} checks on 2 workers: {checks / wall:.0f} checks/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=500)
    parser.add_argument("--hang-timeout", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    overhead(args.checks)
    hung(args.hang_timeout, args.repeats)
    throughput(args.checks)


if __name__ == "__main__":
    main()
