"""`formalbench eval example-amber-coq` end to end with real coqc. Prints figures; asserts nothing.

python bench/bench_amber.py [--samples 16] [--workers 2]

A scripted model answers each task with, in turn: the reference solution, the
non-constructive one, the reference with a made-up lemma name (a hallucination) and a reply
without a code block (a format error); proof tasks get the reference in place of the
non-constructive one. The run goes through the whole pipeline (whole-proof solver, strict
verifier with the kernel identity check, store, report): it prints the wall time, pass@k per
template kind and AMBER's error classes. Identical candidates are verified once (the verdict
cache), so 16 samples cost about four checks per task.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from formalbench.core.records import Task, TaskKind
from formalbench.datasets import load_tasks
from formalbench.datasets.build_amber import solution_file
from formalbench.llm.replay import ScriptedCall, ScriptedModel
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig
from formalbench.pipelines.run_files import load_summary

NAME = "example-amber-coq"


def _answers(task: Task) -> list[str]:
    good = solution_file(NAME, task).read_text(encoding="utf-8")
    bad_file = solution_file(NAME, task, "nonconstructive")
    bad = bad_file.read_text(encoding="utf-8") if bad_file else good
    made_up = good.replace("Proof.", "Proof.\n  apply amber_magic_lemma.", 1)
    return [f"```coq\n{good}```", f"```coq\n{bad}```", f"```coq\n{made_up}```", "I cannot."]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    tasks = list(load_tasks(NAME))
    answers = {t.formal: _answers(t) for t in tasks}

    def rule(call: ScriptedCall) -> str:
        prompt = "\n".join(m.content for m in call.messages)
        formal = max((f for f in answers if f in prompt), key=len)
        index = call.seed if call.seed is not None else call.call  # sample i has seed i
        return answers[formal][index % 4]

    config = EvalConfig(dataset=NAME, solver="whole", samples=args.samples, workers=args.workers)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        run_evaluation(config, Path(folder) / "run", model=ScriptedModel(rule))
        wall = time.perf_counter() - started
        summary = load_summary(Path(folder) / "run")
    kinds = next(c for c in summary.categories if c.field == "kind")
    print(f"{NAME}: {summary.tasks} tasks x {args.samples} samples, wall {wall:.1f} s")
    print("kind            tasks  " + "  ".join(f"pass@{k:<3}" for k in summary.ks))
    for row in kinds.rows:
        cells = "  ".join(f"{100 * row.pass_at_k.get(str(k), 0):7.1f}%" for k in summary.ks)
        print(f"{row.value:15} {row.tasks:5}  {cells}")
    print("taxonomy:", summary.taxonomy)
    print("AMBER classes:", summary.taxonomy_amber)
    expected = sum(1 for t in tasks if t.kind != TaskKind.proof)
    print(f"construction tasks: {expected}; failed attempts: {summary.failed_attempts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
