"""Benchmarks of `formalbench eval` (issue 3, section 7). Prints figures; asserts nothing.

python bench/bench_eval.py harness [--attempts 10000]
    the whole pipeline (dataset, solver, verifier text layer, store, progress) with a
    replay model and an instant stand-in backend: throughput, harness time per attempt,
    and resident memory sampled every 10% of the run (flat = no growth with attempts).
python bench/bench_eval.py coq [--limit N] [--workers 1 2] [--concurrency C ...]
    the embedded default (portfolio + real coqc) on ../shared/data/minif2f-coq: wall time,
    tasks/min, pass@1 at each worker count, then the rerun of the finished run. Each run also
    prints its parallel efficiency (wall at 1 worker / (w x wall at w)) and where the
    assistant's slots stood idle: `busy` = seconds of checks / (w x wall) (the efficiency
    read from the run's own check records, robust to a machine shared with other work;
    `useful` leaves out the portfolio's speculative probe chunks that were abandoned because
    an earlier chunk decided), `start` = seconds
    before the first check, `tail` = seconds at the end with fewer than w checks left, and
    `gaps` = other slot-seconds with a slot idle while attempts were still pending.
    `--concurrency` runs each worker count once per value (attempts in flight; default: the
    pipeline's own choice), to compare scheduling against the same tasks.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import psutil

from formalbench.backends.base import Backend
from formalbench.backends.sandbox import abandoned
from formalbench.core.records import Attempt, CheckResult, Language, Task
from formalbench.llm.replay import RecordingModel, ReplayModel, ScriptedModel
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig, Selection
from formalbench.pipelines.run_files import load_summary

SHARED = Path(
    os.environ.get("FORMALBENCH_TEST_DATA") or Path(__file__).resolve().parents[1].parent / "shared"
)
T = TypeVar("T")
ANSWER = "```coq\nProof.\n  reflexivity.\nQed.\n```"


class InstantBackend(Backend):
    """Answers every check at once as compiled with no axioms: the assistant costs nothing."""

    name = "instant"
    language = Language.coq

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        return CheckResult(backend=self.name, axioms={t: [] for t in targets})

    def version(self) -> str:
        return "instant 0"


class MemoryProbe:
    """Samples resident memory every `every` attempts (an EvalObserver)."""

    def __init__(self, every: int) -> None:
        self.every, self.done, self.samples = every, 0, []
        self.process = psutil.Process()

    def started(self, total: int, done: int, passed: int) -> None:
        self.samples.append((0, self.process.memory_info().rss))

    def attempt_done(self, attempt: Attempt) -> None:
        self.done += 1
        if self.done % self.every == 0:
            self.samples.append((self.done, self.process.memory_info().rss))


def write_tasks(path: Path, count: int) -> Path:
    lines = [
        Task(
            id=f"t{i:05d}",
            language=Language.coq,
            formal=f"Theorem t{i} : {i} + 1 = {i + 1}.\nProof.\nAdmitted.\n",
        ).model_dump_json()
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def harness(attempts: int) -> None:
    samples = 10
    tasks = max(1, attempts // samples)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = write_tasks(root / "tasks.jsonl", tasks)
        config = EvalConfig(dataset=str(data), solver="whole", samples=samples, workers=2)
        replay_file = root / "replay.jsonl"
        recorder = RecordingModel(ScriptedModel(lambda call: ANSWER, spec="scripted"), replay_file)
        t0 = time.perf_counter()
        run_evaluation(config, root / "record", backend=InstantBackend(), model=recorder)
        record_s = time.perf_counter() - t0

        probe = MemoryProbe(max(1, attempts // 10))
        replay = ReplayModel(replay_file)
        t0 = time.perf_counter()
        result = run_evaluation(
            config, root / "replay", probe, backend=InstantBackend(), model=replay
        )
        replay_s = time.perf_counter() - t0
        summary = load_summary(root / "replay")

        t0 = time.perf_counter()
        again = run_evaluation(config, root / "replay", backend=InstantBackend(), model=replay)
        rerun_s = time.perf_counter() - t0

    n = result.new_attempts
    print(
        f"harness: {tasks} tasks x {samples} samples = {n} attempts, replay model, instant backend"
    )
    print(f"  recording pass     {record_s:8.2f} s  {n / record_s:8.0f} attempts/s")
    print(f"  replay pass        {replay_s:8.2f} s  {n / replay_s:8.0f} attempts/s")
    print(f"  harness per attempt (wall / attempts, 2 workers): {1000 * replay_s / n:.2f} ms")
    print(
        f"  pass@1 {summary.pass_at_k['1']:.3f}; rerun of the finished run: {rerun_s:.2f} s "
        f"({100 * rerun_s / replay_s:.1f}% of the run, {again.new_attempts} new attempts)"
    )
    rss = [(k, r / 2**20) for k, r in probe.samples]
    print("  resident memory (MiB) after k attempts: " + ", ".join(f"{k}:{m:.0f}" for k, m in rss))
    growth = rss[-1][1] - rss[1][1] if len(rss) > 2 else float("nan")
    print(
        f"  growth from 10% to 100% of the run: {growth:+.1f} MiB; "
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


class TimedBackend(Backend):
    """Delegates to a real backend and records when each check ran (bench only)."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(workers=inner.workers, timeout=inner.timeout)
        self.inner = inner
        self.name, self.language = inner.name, inner.language
        self.spans: list[tuple[float, float]] = []
        self.wasted: list[tuple[float, float]] = []  # speculative chunks abandoned, then killed

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        t0 = time.perf_counter()
        try:
            return self.inner.check(source, targets=targets, timeout=timeout)
        finally:
            span = (t0, time.perf_counter())
            self.spans.append(span)
            if abandoned():
                self.wasted.append(span)

    def on_assistant(self, work: Callable[..., T], *args: Any) -> T:
        """The verifier's Coq layer (several compiles) on the real backend, one span."""
        t0 = time.perf_counter()
        try:
            return self.inner.on_assistant(work, *args)
        finally:
            self.spans.append((t0, time.perf_counter()))

    def version(self) -> str:
        return self.inner.version()

    def preflight(self, timeout: float = 10.0) -> None:
        self.inner.preflight(timeout)

    def close(self) -> None:
        super().close()
        self.inner.close()


def idle_report(
    spans: list[tuple[float, float]],
    workers: int,
    t0: float,
    t1: float,
    wasted: Sequence[tuple[float, float]] = (),
) -> str:
    """Where the w slots of the assistant stood idle between t0 and t1 (see the docstring)."""
    if not spans:
        return "no checks"
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    segments, running, prev = [], 0, events[0][0]
    for at, step in events:
        segments.append((prev, at, running))
        running += step
        prev = at
    end_full = max((b for a, b, n in segments if n >= workers), default=events[0][0])
    gaps = sum((b - a) * max(0, workers - n) for a, b, n in segments if b <= end_full)
    busy = sum(b - a for a, b in spans) / (workers * (t1 - t0))
    lost = sum(b - a for a, b in wasted)
    useful = busy - lost / (workers * (t1 - t0))
    return (
        f"busy {busy:.2f} (useful {useful:.2f}: without {len(wasted)} abandoned chunks, "
        f"{lost:.1f} s), start {events[0][0] - t0:.1f} s, tail {t1 - end_full:.1f} s, "
        f"gaps {gaps:.1f} slot-s over {len(spans)} checks"
    )


def probe_counts(run_dir: Path) -> str:
    """The portfolio's probe checks in the run's own records: all, speculative, abandoned."""
    from formalbench.store.runs import RunStore

    totals = {"probes": 0, "speculative_probes": 0, "abandoned_probes": 0}
    with RunStore(run_dir / "run.sqlite") as store:
        for run in store.runs():
            for attempt in store.attempts(run.id):
                for key in totals:
                    totals[key] += int(attempt.params.get(key, 0))
    return (
        f"{totals['probes']} probe checks, {totals['speculative_probes']} chunks started "
        f"on a spare slot, {totals['abandoned_probes']} abandoned"
    )


def coq(limit: int | None, workers: list[int], concurrency: list[int | None]) -> None:
    from formalbench.backends.registry import make_backend

    data = SHARED / "data" / "minif2f-coq"
    if not data.is_dir():
        sys.exit(f"no dataset at {data}")
    print(f"embedded default (portfolio, coqc) on {data}" + (f", first {limit}" if limit else ""))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'workers':>7} {'conc':>5} {'tasks':>6} {'solved':>6} {'pass@1':>7} {'wall s':>8} "
        f"{'tasks/min':>9} {'effic.':>6}"
    )
    base: float | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for w in workers:
            for c in concurrency:
                chosen = Selection(sample=limit) if limit else Selection()
                config = EvalConfig(
                    dataset=str(data), workers=w, on_error="skip", selection=chosen, concurrency=c
                )
                run_dir = Path(tmp) / f"w{w}c{c}"
                backend = TimedBackend(make_backend("coq", workers=w, timeout=config.timeout))
                cpu0 = resource.getrusage(resource.RUSAGE_SELF)
                kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                result = run_evaluation(config, run_dir, backend=backend)
                t1 = time.perf_counter()
                cpu1 = resource.getrusage(resource.RUSAGE_SELF)
                kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                own = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
                kids = kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime
                wall = t1 - t0
                if w == 1 and base is None:
                    base = wall
                effic = f"{base / (w * wall):.2f}" if base is not None else "-"
                s = load_summary(run_dir)
                print(
                    f"{w:>7} {c or 'auto':>5} {result.tasks:>6} {len(s.solved):>6} "
                    f"{s.pass_at_k['1']:>7.3f} {wall:>8.1f} {60 * result.tasks / wall:>9.1f} "
                    f"{effic:>6}"
                )
                print(f"        slots: {idle_report(backend.spans, w, t0, t1, backend.wasted)}")
                print(f"        probes: {probe_counts(run_dir)}")
                longest = max((b - a for a, b in backend.spans), default=0.0)
                print(
                    f"        cpu: formalbench {own:.1f} s, coqc {kids:.1f} s; "
                    f"longest check {longest:.1f} s"
                )
                print(f"        load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            t0 = time.perf_counter()
            run_evaluation(config, run_dir)
            rerun = time.perf_counter() - t0
            print(
                f"        rerun of the finished run: {rerun:.2f} s = {100 * rerun / wall:.1f}% of it"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    h = sub.add_parser("harness")
    h.add_argument("--attempts", type=int, default=10_000)
    c = sub.add_parser("coq")
    c.add_argument("--limit", type=int, default=None)
    c.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    c.add_argument("--concurrency", type=int, nargs="+", default=[None], help="attempts in flight")
    args = parser.parse_args()
    if args.what == "harness":
        harness(args.attempts)
    else:
        coq(args.limit, args.workers, args.concurrency)


if __name__ == "__main__":
    main()
