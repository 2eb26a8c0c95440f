"""What the source stages of `formalbench construct` cost per exercise, beyond model time.

The model answers instantly in process (by the step its prompt names), so the wall time is
the pipeline's own: prompt rendering, schema building and pydantic validation, the response
cache, one SQLite transaction per step, asyncio scheduling. Each exercise has a dependency
tree of depth 2 (two theorems, each resting on a definition), so it takes 1 clean, 5
naturalize, 3 condition, 1-2 review and 0-1 repair steps. Also measured: a rerun of the
finished run (everything read back from the store; target: a few percent of the first run).
Target for the first run: under 20 ms per exercise. The CPU time is printed too: on a machine
shared with other work the wall time mostly measures the wait for a core.

    python bench/bench_construct_source.py [--exercises 200]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from formalbench.core.construct import ExpansionNode, ExtractedExercise
from formalbench.core.records import TokenUsage
from formalbench.llm.base import Completion
from formalbench.llm.replay import ScriptedCall, ScriptedModel
from formalbench.pipelines.construct.config import STEPS, ConstructConfig
from formalbench.pipelines.construct.runner import run_construct

SPEC = "local:instant"


def instant_answer(call: ScriptedCall) -> Completion:
    """Answers each construct step at once (told by its prompt); odd exercises are sent to
    revise once."""
    system, user = call.messages[0].content, call.messages[-1].content
    if "You edit exercises" in system:
        reply: dict[str, Any] = {"problem_clean": "Task: " + user}
    elif "You rewrite items" in system:
        reply = {"text": user[:200]}
    elif "You make the implicit conditions" in system:
        reply = {"problem": user[:200], "added": [], "objective_unchanged": True}
    elif "You review rewritten" in system:
        odd = re.search(r"Exercise \d*[13579]\b", user) and "repaired" not in user
        reply = (
            {"label": "revise", "flags": ["task_drift"], "reason": "drift"}
            if odd
            else {"label": "accept"}
        )
    else:
        reply = {"problem": "repaired " + user[-100:], "changes": ["x"]}
    usage = TokenUsage(prompt=100, completion=20)
    return Completion(text=json.dumps(reply), usage=usage, model=SPEC)


def exercise(i: int) -> ExtractedExercise:
    text = f"Exercise {i}: show that the matrix A{i} is invertible, by Theorems T{i}a, T{i}b."
    theorems = [
        ExpansionNode(
            label=f"T{i}{s}",
            kind="theorem",
            text=f"Theorem T{i}{s}: a nonsingular matrix is invertible (Definition D{i}{s}).",
            depth=1,
            children=[
                ExpansionNode(
                    label=f"D{i}{s}",
                    kind="definition",
                    text=f"Definition D{i}{s}: A is nonsingular if Ax = 0 implies x = 0.",
                    depth=2,
                )
            ],
        )
        for s in "ab"
    ]
    root = ExpansionNode(label=f"E{i}", kind="exercise", text=text, depth=0, children=theorems)
    return ExtractedExercise(
        id=f"bench/{i}", source="bench", source_idx=f"Exercise {i}", text=text, expansion=root
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercises", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = root / "exercises.jsonl"
        source.write_text(
            "".join(exercise(i).model_dump_json() + "\n" for i in range(args.exercises)),
            encoding="utf-8",
        )
        model = ScriptedModel(instant_answer, spec=SPEC, takes_schema=True)
        config = ConstructConfig(source=str(source), stop_after="source")
        models = {s: model for s in STEPS}
        t0, c0 = time.perf_counter(), time.process_time()
        first = run_construct(config, root / "run", models=models)
        first_s, first_cpu = time.perf_counter() - t0, time.process_time() - c0
        calls = len(model.calls)
        t0 = time.perf_counter()
        run_construct(config, root / "run", models=models)
        rerun_s = time.perf_counter() - t0
    n = args.exercises
    assert first.funnel is not None
    print(f"exercises {n}, model steps {calls}, usable {first.usable}/{n}")
    print(
        f"first run  {first_s:.3f} s = {1000 * first_s / n:.2f} ms per exercise, "
        f"{1000 * first_s / calls:.2f} ms per model step"
    )
    print(
        f"           CPU {first_cpu:.3f} s = {1000 * first_cpu / n:.2f} ms per exercise "
        "(the wall time on a machine shared with other work is higher)"
    )
    print(
        f"rerun      {rerun_s:.3f} s = {1000 * rerun_s / n:.3f} ms per exercise "
        f"({100 * rerun_s / first_s:.1f}% of the first run; {len(model.calls) - calls} model calls)"
    )
    verdict = "met" if 1000 * first_s / n < 20 else "NOT met"
    print(f"target < 20 ms per exercise (wall): {verdict}")


if __name__ == "__main__":
    main()
