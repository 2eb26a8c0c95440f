"""The whole `formalbench construct` pipeline's own overhead per exercise, on the shipped
textbook: extraction, the source stages and the formal stages, model and assistant time
excluded.

Runs `run_construct` on the first N exercises of fcla (`--limit`) with the scripted model of
the end-to-end test (tests/construct_e2e_script.py, answering at once; each exercise gets
its own naturalized text, so no two exercises share a model call or a compile) and real
coqc, timing every model call and every compile (one exercise at a time, so that the timed
spans do not overlap). Prints the extraction time (the whole book
is read even for N exercises), then per exercise: model calls, compiles, and the rest of the
wall time (prompts, schemas and validation, the response cache, SQLite writes, blocks,
weakening checks, packaging, asyncio), with this process's CPU time beside it (less
disturbed by the other loads of a shared machine; the CPU this process spends launching
coqc, in the backend's pool threads, is shown apart); then the same for a rerun of the
finished run. Target: < 20 ms per exercise. A warm-up run first pays the one-time costs.

    python bench/bench_construct.py [--limit 20] [--archive PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# coqc and the model timed as in the formal-stage bench (this script's folder is on the path)
from bench_construct_formal import TimedCoq, TimedModel  # noqa: E402
from formalbench.llm.replay import ScriptedCall, ScriptedModel  # noqa: E402
from formalbench.pipelines.construct import inputs  # noqa: E402
from formalbench.pipelines.construct.config import STEPS, ConstructConfig  # noqa: E402
from formalbench.pipelines.construct.runner import run_construct  # noqa: E402
from tests.construct_e2e_script import NATURAL, responder  # noqa: E402
from tests.shared_data import DATA  # noqa: E402


def _model() -> ScriptedModel:
    answer = responder()

    def rule(call: ScriptedCall) -> str:
        messages = [{"role": m.role, "content": m.content} for m in call.messages]
        system, user = messages[0]["content"], messages[-1]["content"]
        if "You edit exercises" in system:  # a cleaning must change the text
            return json.dumps({"problem_clean": "Task: " + user.split("\n", 1)[1]})
        if "You rewrite items" in system:  # one text per exercise: nothing shared
            head = user.partition(":\n")[0]
            return json.dumps({"text": f"{NATURAL} ({head})"})
        return answer({"messages": messages})[0]

    return ScriptedModel(rule, spec="scripted-bench", takes_schema=True)


def _timed_extract(seconds: list[tuple[float, float]]):
    """Phase 1 timed: (wall, CPU of the thread it runs in)."""
    plain = inputs.extract

    def extract(*args, **kwargs):
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return plain(*args, **kwargs)
        finally:
            seconds.append((time.perf_counter() - started, time.thread_time() - cpu))

    return extract


def run(archive: Path, run_dir: Path, limit: int) -> dict[str, float]:
    model = TimedModel(_model())
    config = ConstructConfig(
        source=str(archive), limit=limit, repair_rounds=2, review_rounds=2, concurrency=1
    )
    extraction: list[tuple[float, float]] = []
    TimedCoq.seconds, TimedCoq.checks, TimedCoq.cpu = 0.0, 0, 0.0
    original = inputs.extract
    from formalbench.pipelines.construct import runner

    runner.extract = _timed_extract(extraction)
    try:
        with TimedCoq(workers=1) as backend:
            started, cpu = time.perf_counter(), time.process_time()
            result = run_construct(
                config, run_dir, models={s: model for s in STEPS}, backend=backend
            )
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
    finally:
        runner.extract = original
    return {
        "exercises": result.exercises,
        "usable": result.usable,
        "instances": (result.formal or {}).get("instances", 0),
        "wall": wall,
        "cpu": cpu,
        "extract": sum(w for w, _ in extraction),
        "extract_cpu": sum(c for _, c in extraction),
        "model": model.seconds,
        "calls": model.calls,
        "coqc": TimedCoq.seconds,
        "compiles": TimedCoq.checks,
        "coqc_cpu": TimedCoq.cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--archive", type=Path, default=DATA / "fcla-latex.tar.gz")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args.archive, Path(tmp) / "warm-up", 1)  # prompts parsed, schemas built
        half = run(args.archive, Path(tmp) / "half", max(1, args.limit // 2))
        run_dir = Path(tmp) / "run"
        for label in ("first run", "rerun (finished)"):
            f = run(args.archive, run_dir, args.limit)
            print(_line(label, f))
            if label == "first run":
                first = f
        # a run has fixed costs (stores opened, logs written, thread pools started): the
        # slope between N/2 and N exercises is the cost of one more exercise
        extra = first["exercises"] - half["exercises"]
        if extra > 0:
            slope = (_overhead(first) - _overhead(half)) / extra
            print(
                f"marginal overhead per exercise ({half['exercises']:.0f} -> "
                f"{first['exercises']:.0f} exercises): {1000 * slope:.1f} ms; fixed per run: "
                f"{_overhead(first) - slope * first['exercises']:.2f} s"
            )


def _overhead(f: dict[str, float]) -> float:
    return f["wall"] - f["extract"] - f["model"] - f["coqc"]


def _line(label: str, f: dict[str, float]) -> str:
    n = f["exercises"]
    return (
        f"{label:17} exercises {n:3.0f} (usable {f['usable']:.0f}, packaged "
        f"{f['instances']:.0f})  extraction {f['extract']:5.2f} s  model calls "
        f"{f['calls']:4.0f} ({f['model']:5.2f} s)  compiles {f['compiles']:4.0f} "
        f"({f['coqc']:6.2f} s)  wall {f['wall']:6.2f} s  overhead "
        f"{1000 * _overhead(f) / n:6.1f} ms/exercise (own CPU "
        f"{1000 * (f['cpu'] - f['extract_cpu'] - f['coqc_cpu']) / n:6.1f} ms; launching "
        f"coqc {1000 * f['coqc_cpu'] / n:5.1f} ms)"
    )


if __name__ == "__main__":
    main()
