"""Overhead of the construct formal stages (steps 8-11) per exercise, model and assistant
time excluded.

Runs the test exercises of tests/construct_formal_script.py (copied N times under new ids;
the scripted model answers instantly, coqc runs for real), timing every model call and
every compile, and prints: exercises, model calls, compiles, wall time, time in the model,
time in coqc, and the rest per exercise (the pipeline's own overhead: prompts, text checks,
weakening check, store writes, packaging); then the same for a rerun of the finished run
(everything comes from the store: no call, no compile). "own CPU" is this process's CPU time
per exercise (coqc runs in child processes; the scripted model in this one), a figure that
the other loads of a shared machine disturb less than wall time. Target: < 20 ms per exercise. A warm-up
run first pays the one-time costs (prompt parsing, pydantic schema builds, regexes).

    python bench/bench_construct_formal.py --copies 5
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from formalbench.backends.coq import CoqBackend  # noqa: E402
from formalbench.core.records import CheckResult  # noqa: E402
from formalbench.llm.base import ChatModel, Completion, Message, ModelWrapper  # noqa: E402
from formalbench.pipelines.construct.formal import (  # noqa: E402
    FormalStageConfig,
    run_formal_stages,
)
from tests import construct_formal_script as script  # noqa: E402


class TimedModel(ModelWrapper):
    """The wrapped model, with the seconds spent in it and the calls made to it."""

    def __init__(self, inner: ChatModel) -> None:
        super().__init__(inner)
        self.seconds = 0.0
        self.calls = 0

    async def generate(self, messages: Sequence[Message], **kwargs: object) -> list[Completion]:
        started = time.perf_counter()
        try:
            return await self.inner.generate(messages, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


class TimedCoq(CoqBackend):
    """coqc timed: every compile, and `coqc --print-version` (asked once per backend)."""

    seconds = 0.0
    checks = 0
    cpu = 0.0  # CPU of the pool threads that run coqc (sandbox set-up, spawn, reading output)

    def check(
        self,
        source: str,
        *,
        targets: Sequence[str] = (),
        timeout: float | None = None,
    ) -> CheckResult:
        started = time.thread_time()
        try:
            return super().check(source, targets=targets, timeout=timeout)
        finally:
            TimedCoq.cpu += time.thread_time() - started

    def version(self) -> str:
        started = time.perf_counter()
        try:
            return super().version()
        finally:
            TimedCoq.seconds += time.perf_counter() - started

    async def acheck(self, source: str, **kwargs: object) -> CheckResult:
        started = time.perf_counter()
        try:
            return await super().acheck(source, **kwargs)
        finally:
            TimedCoq.seconds += time.perf_counter() - started
            TimedCoq.checks += 1


def run(run_dir: Path, copies: int) -> tuple[int, float, float, float, float, int, int]:
    problems = [
        p.model_copy(
            update={"id": f"{p.id}-{i}", "problem_finally": f"{p.problem_finally} (copy {i})"}
        )
        for i in range(copies)
        for p in script.PROBLEMS
    ]  # distinct statements: every copy asks its own questions
    model = TimedModel(script.model())
    config = FormalStageConfig(repair_rounds=2, header=script.HEADER, concurrency=1)
    TimedCoq.seconds, TimedCoq.checks = 0.0, 0
    with TimedCoq(workers=1) as backend:
        started, cpu = time.perf_counter(), time.process_time()
        asyncio.run(
            run_formal_stages(
                problems, backend=backend, model=model, run_dir=run_dir, config=config
            )
        )
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
    return len(problems), wall, cpu, model.seconds, TimedCoq.seconds, model.calls, TimedCoq.checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp) / "warm-up", 1)  # one-time costs: prompt parsing, schema builds, regexes
        run_dir = Path(tmp) / "run"
        for label in ("first run", "rerun (finished)"):
            n, wall, cpu, in_model, in_coq, calls, checks = run(run_dir, args.copies)
            rest = wall - in_model - in_coq
            print(
                f"{label:17} exercises {n:3}  model calls {calls:3}  compiles {checks:3}  "
                f"wall {wall:6.2f} s  model {in_model:5.2f} s  coqc {in_coq:6.2f} s  "
                f"overhead {1000 * rest / n:6.1f} ms/exercise (own CPU {1000 * cpu / n:5.1f} ms)"
            )


if __name__ == "__main__":
    main()
