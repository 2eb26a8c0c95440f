"""The scripted model of the end-to-end construct test, and the recording of the README's
worked example (`docs/examples/construct-fcla-trace.jsonl`).

It answers every prompt of both model phases by what it asks (its role from the system
text), for the two fcla exercises of PATTERN: T.T12 (the trace of a matrix is the trace of
its transpose) is accepted, split into a definition and a theorem, the definition written
wrongly first (`sum_list`) and repaired from coqc's diagnostic; T.T10 (no A, B with
AB - BA = I) is held as unsuitable, repaired, held again.

`python -m tests.construct_e2e_script FCLA_ARCHIVE` records the replay file again (after a
prompt template changed): it runs the pipeline with this model behind a RecordingModel.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPLAY = Path(__file__).resolve().parents[1] / "docs" / "examples" / "construct-fcla-trace.jsonl"

PATTERN = "fcla/T.T1[02]"
TRACE_DEF_BAD = (
    "Definition trace (n : nat) (A : nat -> nat -> nat) : nat :=\n"
    "  sum_list (map (fun i => A i i) (seq 0 n))."
)
TRACE_DEF = (
    "Definition trace (n : nat) (A : nat -> nat -> nat) : nat :=\n"
    "  list_sum (map (fun i => A i i) (seq 0 n))."
)
TRACE_THM = (
    "Theorem trace_transpose (n : nat) (A : nat -> nat -> nat) :\n"
    "  trace n A = trace n (fun i j => A j i).\nProof.\nAdmitted."
)
NATURAL = (
    "Let n be a natural number and A an n by n matrix with natural entries A i j. The trace "
    "of A is the sum of its diagonal entries A i i for i < n. Prove that the trace of A "
    "equals the trace of the transpose of A."
)
USABLE = {
    "math_equivalent": True,
    "truth_judgement": "true",
    "overall_status": "usable",
    "dominant_issue_types": [],
    "top_priority_fix": "",
    "issues": [],
    "confidence": 0.9,
}


def _after(label: str, text: str) -> str:
    found = re.search(re.escape(label) + r"\n(.*?)(?:\n\n|\Z)", text, re.DOTALL)
    return found.group(1).strip() if found else ""


def _coq(code: str) -> str:
    return f"Here is the block.\n```coq\n{code}\n```\n"


def _source_step(system: str, user: str) -> str | None:
    """Phase 2's steps (the prompts of tests/construct_fixtures.py)."""
    if "You edit exercises" in system:
        text = user.split("\n", 1)[1]
        plain = text.replace("$", "")  # the prompt asks for a rewrite, never the input
        return json.dumps({"problem_clean": plain.strip()})
    if "You rewrite items" in system:
        trace = "t\\protect" in user or "trace" in user
        plain = "Prove that there are no square matrices A and B of size n with AB - BA = I."
        return json.dumps({"text": NATURAL if trace else plain})
    if "You make the implicit conditions" in system:
        current = _after("Current statement:", user)
        return json.dumps({"problem": current, "added": [], "objective_unchanged": True})
    if "You review rewritten" in system:
        if "AB-BA" in _after("Original exercise:", user):
            verdict = {"label": "hold", "flags": ["unsuitable"], "reason": "needs fields"}
        else:
            verdict = {"label": "accept"}
        return json.dumps(verdict)
    if "You repair" in system:
        return json.dumps({"problem": "repaired: " + _after("Statement to repair:", user)})
    return None


def _formal_step(system: str, user: str) -> str | None:
    """Phase 3's steps (the prompts of tests/construct_formal_script.py)."""
    if "You prepare textbook exercises" in system:
        blocks = [
            {"kind": "defn", "content": "The trace of A is the sum of A i i for i < n.",
             "term": "trace"},
            {"kind": "thm", "content": "The trace of A equals the trace of its transpose.",
             "term": None},
        ]  # fmt: skip
        return json.dumps({"blocks": blocks})
    if "You review formalizations" in system:
        return json.dumps(USABLE)
    if "You guard formalizations" in system:
        return json.dumps({"weakens": False, "reason": "nothing dropped"})
    if "was rejected by the checker" in system:
        return _coq(TRACE_DEF) if "introducing `trace`" in user else "I cannot fix this."
    if "below the block's marker comment" in system:
        block = user.split("The current block", 1)[1]
        return _coq(TRACE_DEF_BAD) if "introducing `trace`" in block else _coq(TRACE_THM)
    return None


def responder(delay: float = 0.0):
    def answer(body: dict[str, Any]) -> list[str]:
        if delay:
            time.sleep(delay)
        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        users = [m["content"] for m in messages if m["role"] == "user"]
        reply = _source_step(system, users[0])
        if reply is None:
            reply = _formal_step(system, users[-1])
        return [reply if reply is not None else "?"]

    return answer


def scripted_model() -> Any:
    """The same answers as a ChatModel (as a provider that enforces schemas)."""
    from formalbench.llm.replay import ScriptedCall, ScriptedModel

    def rule(call: ScriptedCall) -> str:
        body = {"messages": [{"role": m.role, "content": m.content} for m in call.messages]}
        return responder()(body)[0]

    return ScriptedModel(rule, spec="scripted-e2e", takes_schema=True)


def main() -> None:  # python -m tests.construct_e2e_script FCLA_ARCHIVE
    from formalbench.llm.replay import RecordingModel
    from formalbench.pipelines.construct.config import STEPS, ConstructConfig
    from formalbench.pipelines.construct.runner import run_construct

    REPLAY.unlink(missing_ok=True)
    recorder = RecordingModel(scripted_model(), REPLAY)
    config = ConstructConfig(
        source=sys.argv[1], pattern=PATTERN, repair_rounds=2, review_rounds=2, concurrency=1
    )
    with tempfile.TemporaryDirectory() as run_dir:
        result = run_construct(config, run_dir, models={s: recorder for s in STEPS})
    print(f"{REPLAY}: {result.exercises} exercises, {result.usable} usable, {result.formal}")


if __name__ == "__main__":
    main()
