"""Exercises and a scripted model for the tests of the construct formal stages.

The model reads each prompt (its role from the system text, the block from the user text)
and answers as a translator, repairer, reviewer, rewriter or weakening judge would, so that
one run goes through every path: a translation repaired once, a block that never compiles,
a review that asks for a revision and then accepts, a rewrite refused as weakening, an
unreadable block split. `main` runs the stages in a child process (the resume test kills it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

from formalbench.core.construct import ConstructProblem
from formalbench.llm.replay import ScriptedCall, ScriptedModel

HEADER = "From Coq Require Import Arith Lia List.\nImport ListNotations.\n"

TRACE = (
    "Let n be a natural number and A, B be n by n matrices with natural entries, given by "
    "their entries A i j. The trace of a matrix is the sum of its diagonal entries. Prove "
    "that the trace of A + B is the trace of A plus the trace of B. Hint: expand the sum."
)
SQUARE = "Let n be a positive natural number with n at most 10. Show that n * n is positive."
BROKEN = (
    "Let the rank of a matrix be the dimension of its column space. Show that n + 0 = n for "
    "every natural number n."
)
GARBLED = "Let V be a vector space. Discuss."

PROBLEMS = [
    ConstructProblem(
        index=i,
        id=pid,
        source="fcla/Matrix Operations",
        source_idx=f"Exercise MO.C{i}",
        problem=text,
        problem_finally=text,
        usable=True,
    )
    for i, (pid, text) in enumerate(
        [
            ("la/trace", TRACE),
            ("la/square", SQUARE),
            ("la/broken", BROKEN),
            ("la/garbled", GARBLED),
        ],
        start=1,
    )
]

TRACE_DEF_BAD = (
    "Definition trace (n : nat) (A : nat -> nat -> nat) : nat :=\n"
    "  sum_list (map (fun i => A i i) (seq 0 n))."
)
TRACE_DEF = (
    "Definition trace (n : nat) (A : nat -> nat -> nat) : nat :=\n"
    "  list_sum (map (fun i => A i i) (seq 0 n))."
)
TRACE_THM_WRONG = (
    "Theorem trace_add (n : nat) (A B : nat -> nat -> nat) :\n"
    "  trace n (fun i j => A i j + B i j) = trace n A + trace n A.\nProof.\nAdmitted."
)
TRACE_THM = (
    "Theorem trace_add (n : nat) (A B : nat -> nat -> nat) :\n"
    "  trace n (fun i j => A i j + B i j) = trace n A + trace n B.\nProof.\nAdmitted."
)
SQUARE_THM = "Theorem sq_pos (n : nat) (h : 0 < n) : 0 < n * n.\nProof.\nAdmitted."
SQUARE_DROPPED = "Theorem sq_pos (n : nat) (h2 : n <= 10) : 0 < n * n.\nProof.\nAdmitted."
SQUARE_FIXED = "Theorem sq_pos (n : nat) (h : 0 < n) (h2 : n <= 10) : 0 < n * n.\nProof.\nAdmitted."
RANK_BAD = "Definition rank (A : nat -> nat -> nat) : nat := column_space_dim A."
RANK_HOLE = "Definition rank (A : nat -> nat -> nat) : nat.\nAdmitted."
PLUS_ZERO = "Theorem plus_zero (n : nat) : n + 0 = n.\nProof.\nAdmitted."

USABLE = {
    "math_equivalent": True,
    "truth_judgement": "true",
    "overall_status": "usable",
    "dominant_issue_types": [],
    "top_priority_fix": "",
    "issues": [],
    "confidence": 0.9,
}
WRONG_CONCLUSION = {
    "math_equivalent": False,
    "truth_judgement": "false",
    "overall_status": "not_usable_yet",
    "dominant_issue_types": ["wrong_conclusion"],
    "top_priority_fix": "the right-hand side must add the trace of B",
    "issues": [
        {
            "severity": "P0",
            "issue_type": "wrong_conclusion",
            "location": "conclusion",
            "reason": "trace n A is added twice",
            "suggested_fix": "use trace n A + trace n B",
        }
    ],
    "confidence": 0.8,
}
MISSING_BOUND = {
    "math_equivalent": False,
    "truth_judgement": "true",
    "overall_status": "usable_with_revision",
    "dominant_issue_types": ["missing_assumption"],
    "top_priority_fix": "add that n is at most 10",
    "issues": [
        {
            "severity": "P1",
            "issue_type": "missing_assumption",
            "location": "hypotheses",
            "reason": "the text bounds n by 10",
            "suggested_fix": "add a hypothesis n <= 10",
        }
    ],
    "confidence": 0.7,
}


def coq(code: str) -> str:
    return f"Here is the block.\n```coq\n{code}\n```\n"


def _user(call: ScriptedCall) -> str:
    return [m.content for m in call.messages if m.role == "user"][-1]


def _system(call: ScriptedCall) -> str:
    return next((m.content for m in call.messages if m.role == "system"), "")


def _last_code(text: str) -> str:
    blocks = re.findall(r"```coq\n(.*?)```", text, re.S)
    return blocks[-1] if blocks else ""


def answer(call: ScriptedCall) -> str:
    system, user = _system(call), _user(call)
    if "You prepare textbook exercises" in system:
        return _split(" ".join(m.content for m in call.messages if m.role == "user"))
    if "You guard formalizations" in system:
        return json.dumps({"weakens": False, "reason": "it only adds what the review asked"})
    if "You review formalizations" in system:
        code = _last_code(user)
        if "trace n A + trace n A" in code:
            return json.dumps(WRONG_CONCLUSION)
        if "sq_pos" in code and "n <= 10" not in code:
            return json.dumps(MISSING_BOUND)
        return json.dumps(USABLE)
    if "A reviewer found" in system:
        if "trace_add" in user:
            return coq(TRACE_THM)
        if "refused because" in user:  # the history shows the refused rewrite
            return coq(SQUARE_FIXED)
        return coq(SQUARE_DROPPED)
    if "was rejected by the checker" in system:
        if "introducing `trace`" in user:
            return coq(TRACE_DEF)
        if "introducing `rank`" in user:
            return coq(RANK_HOLE) if "repair 1 of" in user else coq(RANK_BAD)
        return "I cannot fix this."
    if "below the block's marker comment" in system:
        block = user.split("The current block", 1)[1]
        if "introducing `trace`" in block:
            return coq(TRACE_DEF_BAD)
        if "trace (A + B)" in block:
            return coq(TRACE_THM_WRONG)
        if "at most 10" in block or "n * n" in block:
            return coq(SQUARE_THM)
        if "introducing `rank`" in block:
            return coq(RANK_BAD)
        if "n + 0 = n" in block:
            return coq(PLUS_ZERO)
    return "?"


def _split(user: str) -> str:
    if "Discuss" in user:
        return "These are the blocks: a vector space, and a discussion."  # never JSON
    if "trace" in user:
        blocks = [
            {"kind": "hints", "content": "Expand the sum over the diagonal.", "term": None},
            {
                "kind": "defn",
                "content": "The trace of an n by n matrix A is the sum of A i i for i < n.",
                "term": "trace",
            },
            {
                "kind": "thm",
                "content": "For n by n matrices A and B, trace (A + B) = trace A + trace B.",
                "term": None,
            },
        ]
    elif "column space" in user:
        blocks = [
            {"kind": "defn", "content": "The rank of A is the dimension of its column space.",
             "term": "rank"},
            {"kind": "thm", "content": "For every natural number n, n + 0 = n.", "term": None},
        ]  # fmt: skip
    else:
        blocks = [{"kind": "thm", "content": SQUARE, "term": None}]
    return "```json\n" + json.dumps({"blocks": blocks}) + "\n```"


def model(kill_after: int | None = None) -> ScriptedModel:
    """The scripted model; with `kill_after`, the process kills itself (SIGKILL) when that
    many calls have been answered, as a crash or an OOM kill would."""
    calls = {"n": 0}

    def rule(call: ScriptedCall) -> str:
        if kill_after is not None and calls["n"] >= kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        calls["n"] += 1
        return answer(call)

    return ScriptedModel(rule, spec="scripted-construct")


def main() -> None:  # python -m tests.construct_formal_script RUN_DIR KILL_AFTER
    from formalbench.backends.coq import CoqBackend
    from formalbench.pipelines.construct.formal import FormalStageConfig, run_formal_stages

    run_dir, kill_after = Path(sys.argv[1]), int(sys.argv[2])
    config = FormalStageConfig(repair_rounds=2, header=HEADER, concurrency=1)
    with CoqBackend(workers=1) as backend:
        asyncio.run(
            run_formal_stages(
                PROBLEMS, backend=backend, model=model(kill_after), run_dir=run_dir, config=config
            )
        )


if __name__ == "__main__":
    main()
