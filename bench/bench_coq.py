"""Throughput of the Coq backend on the miniF2F-rocq statements, at 1 and 2 workers.

Every statement is closed with `Admitted.` (a file that ends on an open `Proof.` gets one
appended) and compiled alone, as the verifier compiles a candidate. Prints, per worker
count: files, compiled, failed (first failure reasons grouped), wall time, checks/s; then the
parallel efficiency (rate at 2) / (2 x rate at 1), and what a trivial coqc run costs, which
bounds the rate whatever the pool does (each check pays coqc start-up and library loading).
`cpu s/check` is the coqc CPU time per check: if it stays flat from 1 to 2 workers while the
rate does not double, the cores were busy with something else.

    python bench/bench_coq.py --limit 40
    python bench/bench_coq.py --workers 1 2 --data ../shared/data/minif2f-coq
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from formalbench.backends.base import CheckRequest
from formalbench.backends.coq import CoqBackend

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "minif2f-coq"


def load(data: Path, limit: int | None) -> list[CheckRequest]:
    files = sorted((data / "test").glob("*.v")) + sorted((data / "valid").glob("*.v"))
    if not files:
        sys.exit(f"error: no .v files under {data}/test or {data}/valid")
    requests = []
    for path in files[:limit]:
        text = path.read_text(encoding="utf-8")
        if "Admitted" not in text:
            text = text.rstrip() + "\nAdmitted.\n"
        requests.append(CheckRequest(source=text))
    return requests


def run(requests: list[CheckRequest], workers: int, timeout: float) -> dict:
    with CoqBackend(workers=workers, timeout=timeout) as backend:
        cpu_before = _children_cpu()
        start = time.perf_counter()
        results = list(backend.check_many(requests))
        wall = time.perf_counter() - start
        cpu = _children_cpu() - cpu_before
    reasons: Counter[str] = Counter()
    for result in results:
        if not result.compiled:
            first = result.errors[0].message if result.errors else result.status.value
            reasons[first.splitlines()[0][:90]] += 1
    compiled = sum(r.compiled for r in results)
    return {
        "workers": workers,
        "files": len(results),
        "compiled": compiled,
        "failed": len(results) - compiled,
        "wall": wall,
        "rate": len(results) / wall,
        "cpu": cpu / max(1, len(results)),
        "reasons": reasons,
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def trivial_cost(backend: CoqBackend, header: str, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        backend.check(header + "Lemma fb_trivial : True. Proof. exact I. Qed.\n")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--limit", type=int, default=None, help="check only the first N files")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    requests = load(args.data.resolve(), args.limit)
    rows = [run(requests, workers, args.timeout) for workers in args.workers]

    print(
        f"{'workers':>7} {'files':>6} {'compiled':>8} {'failed':>6} {'wall s':>8} {'checks/s':>9}"
        f" {'cpu s/check':>11}"
    )
    for row in rows:
        print(
            f"{row['workers']:>7} {row['files']:>6} {row['compiled']:>8} {row['failed']:>6} "
            f"{row['wall']:>8.1f} {row['rate']:>9.2f} {row['cpu']:>11.2f}"
        )
    for row in rows[:1]:
        for reason, count in row["reasons"].most_common(8):
            print(f"  failed x{count}: {reason}")
    rate = {row["workers"]: row["rate"] for row in rows}
    if 1 in rate and 2 in rate:
        print(f"parallel efficiency at 2 workers: {rate[2] / (2 * rate[1]):.2f} (target >= 0.9)")

    backend = CoqBackend(workers=1)
    print("cost of one trivial check (median of 3, coqc start-up + imports):")
    for label, header in [
        ("no import", ""),
        ("Reals", "Require Import Reals.\n"),
        ("Reals + Coquelicot", "Require Import Reals.\nRequire Import Coquelicot.Coquelicot.\n"),
    ]:
        print(f"  {label:<20} {trivial_cost(backend, header):.2f} s")


if __name__ == "__main__":
    main()
