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
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from formalbench.pipelines.construct.report import construct_report
from formalbench.store import integrity_ok
from tests.construct_e2e_script import PATTERN, REPLAY, responder
from tests.shared_data import DATA, needs_shared
from tests.standins.openai_server import StandinServer

pytestmark = needs_shared


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "k", "PYTHONPATH": os.pathsep.join(sys.path)}


def _fb(*args: str) -> list[str]:
    return [sys.executable, "-m", "formalbench", *args]


def _construct(run_dir: Path, model: str) -> list[str]:
    """The README's worked example, with `model` for its replay file."""
    return _fb(
        "construct",
        str(DATA / "fcla-latex.tar.gz"),
        "--model",
        model,
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
    # the README's worked example as written: the model's answers replayed from the file
    # the scripted model recorded (tests/construct_e2e_script.py)
    done = subprocess.run(
        _construct(first, f"replay:{REPLAY}"), env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    recorded = [json.loads(line) for line in REPLAY.read_text().splitlines()]
    asked = len(recorded)
    # every step asked with a JSON Schema: the source steps' and phase 3's
    names = {
        r["request"]["response_schema"]["title"]
        for r in recorded
        if "response_schema" in r["request"]
    }
    assert {"CleanReply", "ReviewReply"} <= names and len(names) >= 6, names

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
    # a second run, from the stand-in server, killed with SIGKILL twice: in the source stages
    # (request 5 of 16) and in the formal stages (request 13: blocks being compiled and
    # reviewed), then rerun: the same result, nothing lost, nothing asked or stored twice
    second = tmp_path / "killed"
    with StandinServer() as srv:
        srv.responder = responder(delay=0.05)
        cmd = _construct(second, f"openai:standin-model@{srv.base_url}")
        for kill_at in (5, asked - 3):
            child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while srv.count() < kill_at and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            assert child.poll() is None, child.communicate()
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            assert kill_at <= srv.count() < asked
        resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        # each request asked once, but for the one in flight at each kill
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
    assert _rows(second) == _rows(first)  # every stored step, call and compile, once


def _rows(run_dir: Path) -> dict[str, int]:
    with sqlite3.connect(run_dir / "construct.sqlite") as conn:
        tables = ("cs_exercises", "cs_steps", "cs_problems", "cf_problems", "cf_calls")
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}
        assert integrity_ok(conn)
    return counts


@pytest.mark.parametrize("bad", ["missing.tar.gz"])
def test_construct_names_a_missing_textbook(tmp_path: Path, bad: str) -> None:
    out = subprocess.run(
        _fb("construct", str(tmp_path / bad), "--extract-only", "--run-dir", str(tmp_path / "r")),
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and bad in out.stderr and "Traceback" not in out.stderr
