"""`formalbench construct` end to end on the shipped textbook (fcla), as one command.

Phase 1 reads the real archive, phase 2 cleans, naturalizes, reviews and repairs, phase 3
splits, translates, compiles with real coqc, reviews the blocks and packages; the model is
the stand-in OpenAI server (real HTTP) answering each prompt by what it asks. Then: the
report has every key the issue names and its funnel adds up, every packaged file compiles
with coqc (only holes left), `formalbench eval` runs on tasks.jsonl, and a second run killed
with SIGKILL mid-way resumes to the same result, asking no finished step again.

The two exercises (`fcla/T.T1[02]`, the Trace section): T.T12 (the trace of a matrix is the
trace of its transpose) is accepted and formalized (a definition block repaired once from
coqc's diagnostics, then a theorem); T.T10 (no A, B with AB - BA = I) is held as unsuitable,
repaired, held again: not usable.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from formalbench.pipelines.construct.report import construct_report
from tests.shared_data import DATA, needs_shared
from tests.standins.openai_server import StandinServer

pytestmark = needs_shared

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


def _responder(delay: float = 0.0):
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


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "k", "PYTHONPATH": os.pathsep.join(sys.path)}


def _fb(*args: str) -> list[str]:
    return [sys.executable, "-m", "formalbench", *args]


def _construct(run_dir: Path, url: str) -> list[str]:
    return _fb(
        "construct",
        str(DATA / "fcla-latex.tar.gz"),
        "--model",
        f"openai:standin-model@{url}",
        "--backend",
        "coq",
        "--run-dir",
        str(run_dir),
        "--pattern",
        PATTERN,
        "--repair-rounds",
        "2",
        "--review-rounds",
        "2",
        "--concurrency",
        "1",
        "--quiet",
    )


def _report(run_dir: Path) -> dict[str, Any]:
    out = subprocess.run(
        _fb("report", str(run_dir), "--json"), env=_env(), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _instances(run_dir: Path) -> dict[str, str]:
    folder = run_dir / "instances"
    return {p.name: p.read_text() for p in sorted(folder.glob("*.v"))}


def _funnel_adds_up(report: dict[str, Any]) -> None:
    keys = [
        "kind",
        "exercises",
        "references",
        "resolved_references",
        "reviewed",
        "accepted",
        "revised",
        "held",
        "usable",
        "blocks",
        "blocks_compiled",
        "instances",
        "tasks_file",
    ]
    assert set(keys) <= set(report)
    assert report["kind"] == "construct" and report["status"] == "finished"
    assert report["reviewed"] == report["accepted"] + report["revised"] + report["held"]
    assert report["reviewed"] <= report["exercises"]
    assert report["resolved_references"] <= report["references"]
    assert report["usable"] <= report["reviewed"]
    assert report["blocks_compiled"] <= report["blocks"]
    assert report["instances"] <= report["usable"]
    funnel = report["funnel"]
    pools = funnel["pools"]
    oi = pools["OI"]
    assert oi["items"] == report["reviewed"]
    assert (oi["accept"], oi["revise"], oi["hold"]) == (
        report["accepted"],
        report["revised"],
        report["held"],
    )
    assert funnel["usable"] + funnel["dropped"] <= funnel["reviewed"] + funnel["repaired"]


def test_construct_on_fcla_end_to_end_then_resume_after_sigkill(tmp_path: Path) -> None:
    env = _env()
    first = tmp_path / "run"
    with StandinServer() as srv:
        srv.responder = _responder()
        done = subprocess.run(
            _construct(first, srv.base_url), env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        asked = srv.count()
        # every formal step asked with a JSON Schema, like the source steps
        names = {
            r.body["response_format"]["json_schema"]["name"]
            for r in srv.requests
            if "response_format" in r.body
        }
        assert {"CleanReply", "ReviewReply"} <= names
        assert len(names) >= 6  # phase 3's split / review / weakening schemas too

    report = _report(first)
    _funnel_adds_up(report)
    # the real book: both exercises of the pattern found, out of the whole book's
    assert (report["exercises"], report["book_exercises"]) == (2, 506)
    assert report["book_resolved_references"] == report["book_references"] == 588
    assert (report["accepted"], report["revised"], report["held"], report["usable"]) == (
        1,
        0,
        1,
        1,
    )
    assert (report["blocks"], report["blocks_compiled"], report["instances"]) == (2, 2, 1)

    # every packaged file compiles with real coqc, with only holes (Admitted) left open
    files = _instances(first)
    assert len(files) == report["instances"] == 1
    for name, text in files.items():
        assert "[BLOCK" in text and "list_sum" in text and "sum_list" not in text
        assert text.count("Admitted.") == 1
        compiled = subprocess.run(
            ["coqc", "-q", name], cwd=first / "instances", capture_output=True, text=True
        )
        assert compiled.returncode == 0, compiled.stderr

    # tasks.jsonl loads and `formalbench eval` runs on it
    tasks_file = Path(report["tasks_file"])
    tasks = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()]
    assert len(tasks) == report["tasks"] == 1
    evaluated = subprocess.run(
        _fb(
            "eval",
            str(tasks_file),
            "--solver",
            "portfolio",
            "--backend",
            "coq",
            "--run-dir",
            str(tmp_path / "eval"),
            "--quiet",
        ),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    evals = _report(tmp_path / "eval")
    assert (evals["tasks"], evals["evaluated"]) == (1, 1)
    # trace n A = trace n (transpose A) holds by computation: the portfolio's tactics fill
    # the hole and the whole packaged file verifies through the strict verifier
    assert evals["solved"] == ["fcla/T.T12"]

    # a second run killed with SIGKILL mid-way, then rerun: the same result, nothing doubled
    second = tmp_path / "killed"
    with StandinServer() as srv:
        srv.responder = _responder(delay=0.05)
        cmd = _construct(second, srv.base_url)
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while srv.count() < asked // 2 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert child.poll() is None, child.communicate()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        killed_at = srv.count()
        assert 0 < killed_at < asked
        resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        # each request asked once, but for the one(s) in flight at the kill
        assert asked <= srv.count() <= asked + 2
        finished = srv.count()
        again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert srv.count() == finished  # a finished run asks nothing again

    after = construct_report(second).model_dump(mode="json")  # what `report --json` prints
    same = {k: v for k, v in report.items() if k != "tasks_file"}
    assert {k: v for k, v in after.items() if k != "tasks_file"} == same
    assert _instances(second) == files
    assert (second / "tasks.jsonl").read_text().count("\n") == len(tasks)
    assert construct_report(second).format_failures == 0


@pytest.mark.parametrize("bad", ["missing.tar.gz"])
def test_construct_names_a_missing_textbook(tmp_path: Path, bad: str) -> None:
    out = subprocess.run(
        _fb("construct", str(tmp_path / bad), "--extract-only", "--run-dir", str(tmp_path / "r")),
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and bad in out.stderr and "Traceback" not in out.stderr
