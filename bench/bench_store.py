"""How fast the run store and the verdict cache are on this machine (prints figures, asserts nothing).

Run: python bench/bench_store.py [N]   (N attempts, default 2000; a temporary folder is used)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Attempt, Language, Task, Verdict
from formalbench.store import RunStore, VerdictCache, verdict_key


def main(n: int) -> None:
    tasks = [
        Task(id=f"t{i}", language=Language.coq, formal="Lemma t : True. Admitted.")
        for i in range(n // 4)
    ]
    attempts = [
        Attempt(
            task_id=f"t{i // 4}",
            solver="bench",
            sample=i % 4,
            raw_output="x" * 2000,
            verdict=Verdict(passed=i % 2 == 0),
        )
        for i in range(n)
    ]
    with tempfile.TemporaryDirectory() as folder:
        with RunStore(Path(folder) / "run.sqlite") as store:
            run_id = store.open_run({"dataset": "bench", "solver": "bench"}, {})
            store.add_tasks(run_id, tasks)
            start = time.perf_counter()
            for attempt in attempts:
                store.record_attempt(run_id, attempt)
            one_by_one = time.perf_counter() - start
            start = time.perf_counter()
            skipped = sum(store.record_attempt(run_id, a) for a in attempts[: n // 4])
            resume = time.perf_counter() - start
            start = time.perf_counter()
            done = store.done_samples(run_id)
            done_s = time.perf_counter() - start
            start = time.perf_counter()
            read = sum(1 for _ in store.attempts(run_id))
            read_s = time.perf_counter() - start
        print(
            f"record_attempt (own transaction each): {n / one_by_one:,.0f}/s ({1e3 * one_by_one / n:.2f} ms each)"
        )
        print(
            f"re-recording done attempts (ignored: {skipped} written): {1e3 * resume / (n // 4):.2f} ms each"
        )
        print(f"done_samples over {len(done)} attempts: {1e3 * done_s:.1f} ms")
        print(f"attempts() read back {read}: {1e3 * read_s:.0f} ms ({read / read_s:,.0f}/s)")
        with VerdictCache(Path(folder) / "cache.sqlite") as cache:
            policy = VerifierPolicy()
            keys = [
                verdict_key("coqc 8.16.1", policy, "proof", "Lemma t : True.", f"c{i}")
                for i in range(n)
            ]
            start = time.perf_counter()
            for key in keys:
                cache.put(key, Verdict(passed=True))
            put_s = time.perf_counter() - start
            start = time.perf_counter()
            for key in keys:
                cache.get(key)
            get_s = time.perf_counter() - start
        print(
            f"verdict cache: put {1e3 * put_s / n:.2f} ms, get {1e3 * get_s / n:.3f} ms (keys computed beforehand)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
