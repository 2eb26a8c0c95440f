"""Dependency density rho_1..rho_3 of miniF2F-Coq, and what the walk costs.

Two passes over the dataset with one SQLite cache (a fresh file unless `--cache` names
one): `cold` asks coqc about every statement and the shared library walk; `warm` reads
everything back from the cache (the second run of the same dataset, or a second dataset
over the same library). Prints rho_j mean/median, the tasks skipped (with their reasons,
grouped), the coqc runs and the wall and CPU time of each pass. Target: the cold pass on
all 488 tasks under 10 minutes with 2 workers.

    python bench/bench_stats.py [--data DIR] [--limit N] [--workers 2] [--k 3]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.datasets.loader import load_tasks
from formalbench.deps.coq_walk import CoqDependencyWalker
from formalbench.deps.stats import DensityReport, dependency_density
from formalbench.metrics.density import COQ_TRIVIAL
from formalbench.store.deps_cache import DepsCache

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "minif2f-coq"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _pass(name: str, tasks: list, cache: Path, workers: int, k: int) -> DensityReport:
    wall, cpu = time.perf_counter(), _cpu()
    with DepsCache(cache) as store:
        coq = CoqBackend(workers=workers, timeout=180)
        with coq:
            walker = CoqDependencyWalker(coq, store, workers=workers, timeout=180)
            report = dependency_density(tasks, walker, k=k, trivial=COQ_TRIVIAL)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    w = report.walk
    print(
        f"{name}: {len(report.measured)} measured, {len(report.skipped)} skipped, "
        f"{w.coqc_runs} coqc runs, {w.library_asked} library declarations asked, "
        f"wall {wall:.1f}s, cpu {cpu:.1f}s"
    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None, help="reuse this cache file")
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"{args.data}: no such folder (the shared miniF2F-Coq data)", file=sys.stderr)
        return 2
    tasks = load_tasks(args.data, on_error="skip").tasks[: args.limit]
    print(f"{len(tasks)} tasks from {args.data.resolve()}, k = {args.k}, {args.workers} workers")
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp) / "deps.sqlite"
        cold = _pass("cold", tasks, cache, args.workers, args.k)
        warm = _pass("warm", tasks, cache, args.workers, args.k)
    if cold.to_json() != warm.to_json():
        print("warm pass differs from the cold one", file=sys.stderr)
        return 1
    for j, v in cold.summary.items():
        print(f"rho_{j}: mean {v['mean']}, median {v['median']}")
    reasons = Counter((t.skipped or "").split(":")[0] for t in cold.skipped)
    for why, n in reasons.most_common():
        print(f"skipped {n}: {why}")
    for t in cold.skipped[:10]:
        print(f"  {t.id}: {(t.skipped or '')[:120]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
