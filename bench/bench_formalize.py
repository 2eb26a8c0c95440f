"""What the formalize pipeline itself costs per candidate, beyond model and assistant time.

Both the model and the proof assistant are made instantaneous here (an in-process model
that answers by role, a backend that "compiles" by looking at the text), so the wall time
of a run is the pipeline's own: prompt rendering, extraction and static checks, the
response cache and the run store (one SQLite transaction per step), asyncio scheduling and
the backend's thread pool. Target: under 10 ms per candidate.

    python bench/bench_formalize.py [--problems 20] [--samples 5] [--models 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from formalbench.backends.base import Backend
from formalbench.core.records import CheckResult, Diagnostic, Language, Severity, TokenUsage
from formalbench.llm.base import Completion
from formalbench.llm.replay import ScriptedCall, ScriptedModel
from formalbench.pipelines.formalize import FormalizeConfig, load_metrics, run_formalize
from formalbench.store.formalize import FormalizeStore

GOOD = "Theorem t{i} : forall n : nat, n + {i} = {i} + n.\nProof.\nAdmitted."
BAD = "Theorem t{i} : forall n : nat, n + {i} = {i} + m.\nProof.\nAdmitted."


def instant_model(spec: str) -> ScriptedModel:
    """A model answering every role of the pipeline at once: half the first translations
    need one repair, one in five statements is judged misaligned (and re-translated)."""

    def answer(call: ScriptedCall) -> Completion:
        system, user = call.messages[0].content, call.messages[-1].content
        if "sort mathematics problems" in system:
            text = "algebra"
        elif "careful comparison" in system:
            text = '{"data_type": "n: nat", "conditions": [], "proof_goal": "n = n"}'
        elif "check whether a formal statement" in system:
            text = json.dumps({"aligned": "+ 3 =" not in user, "explanation": "x"})
        elif "reviews machine-made" in system:
            text = '{"ranking": [{"candidate": "C1", "rank": 1, "verdict": "ok"}]}'
        else:
            i = len(user) % 7
            repair = "It was rejected" in user
            text = f"```coq\n{(GOOD if repair or call.sample % 2 else BAD).format(i=i)}\n```"
        return Completion(text=text, usage=TokenUsage(prompt=100, completion=50), model=spec)

    return ScriptedModel(answer, spec=spec)


class InstantBackend(Backend):
    """ "Compiles" in no time: an unknown `m` is an error, anything else compiles."""

    name = "instant"
    language = Language.coq

    def check(self, source: str, *, targets=(), timeout=None) -> CheckResult:  # noqa: ANN001
        if "+ m." in source:
            error = Diagnostic(
                severity=Severity.error, message="The reference m was not found", line=1
            )
            return CheckResult(backend=self.name, diagnostics=[error])
        return CheckResult(backend=self.name)

    def version(self) -> str:
        return "instant 0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--models", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        problems = root / "problems.jsonl"
        problems.write_text(
            "".join(
                json.dumps({"id": f"p{i}", "informal": f"Show that n + {i} = {i} + n."}) + "\n"
                for i in range(args.problems)
            ),
            encoding="utf-8",
        )
        (root / "ctx.txt").write_text("Lemma Nat.add_comm : forall n m, n + m = m + n.\n")
        specs = [f"local:m{j}" for j in range(args.models)]
        models = {s: instant_model(s) for s in specs}
        config = FormalizeConfig(
            problems=str(problems),
            models=specs,
            backend="coq",
            samples=args.samples,
            context_file=str(root / "ctx.txt"),
        )
        with InstantBackend(workers=2) as backend:
            t0 = time.perf_counter()
            run_formalize(config, root / "run", models=models, backend=backend)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            run_formalize(config, root / "run", models=models, backend=backend)
            rerun = time.perf_counter() - t0
        with FormalizeStore(root / "run" / "formalize.sqlite") as store:
            candidates = store.candidates()
        rounds = sum(len(c.rounds) for c in candidates)
        metrics = load_metrics(root / "run")
        calls = sum(len(m.calls) for m in models.values())
    n = len(candidates)
    print(f"problems {args.problems}, models {args.models}, samples {args.samples}")
    print(
        f"candidates {n} (re-translations {sum(c.translation > 0 for c in candidates)}), "
        f"compile rounds {rounds}, model calls {calls}"
    )
    print(f"aligned problems {metrics.aligned}/{metrics.problems}")
    print(
        f"first run   {first:.3f} s  = {1000 * first / n:.2f} ms per candidate, "
        f"{1000 * first / rounds:.2f} ms per round"
    )
    print(f"rerun       {rerun:.3f} s  = {1000 * rerun / n:.3f} ms per candidate (nothing to do)")
    print(f"target < 10 ms per candidate: {'met' if 1000 * first / n < 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
