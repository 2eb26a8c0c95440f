"""SIGINT / SIGTERM of a real `formalbench eval`: one line, coqc killed at once, the run marked
`interrupted`, exit 130 / 143, and a rerun that resumes it (real coqc, real HTTP stand-in)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from formalbench.core.records import Language, Task
from formalbench.pipelines.run_files import RunFiles, load_summary
from formalbench.store.runs import RunStore
from tests.processes import coqc_under
from tests.standins.openai_server import CHAT, StandinServer

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

TASKS = ["one", "two", "three"]
SLOW = "Proof.\n  do 1000000000 idtac.\n  reflexivity.\nQed."
FAST = "Proof.\n  reflexivity.\nQed."


def dataset(path: Path) -> Path:
    rows = [
        Task(id=n, language=Language.coq, formal=f"Theorem {n} : 1 + 1 = 2.\nProof.\nAdmitted.\n")
        for n in TASKS
    ]
    path.write_text("".join(t.model_dump_json() + "\n" for t in rows), encoding="utf-8")
    return path


def asked_two(server: StandinServer) -> bool:
    return any(s.path == CHAT and "Theorem two" in str(s.body) for s in server.requests)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_marks_interrupted_and_a_rerun_resumes(
    tmp_path: Path, signum: int, code: int
) -> None:
    data = dataset(tmp_path / "d.jsonl")
    run_dir = tmp_path / "run"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    slow = {"on": True}

    def answer(body: dict) -> list[str]:  # task `two` gets a proof that never ends, once
        prompt = body["messages"][-1]["content"]
        proof = SLOW if slow["on"] and "Theorem two" in prompt else FAST
        return [f"```coq\n{proof}\n```"] * int(body.get("n", 1) or 1)

    with StandinServer() as server:
        server.responder = answer
        env = {**os.environ, "OPENAI_API_KEY": "test-key", "TMPDIR": str(tmp)}
        cmd = [sys.executable, "-m", "formalbench", "eval", str(data), "--run-dir", str(run_dir)]
        cmd += [
            "--solver",
            "whole",
            "--model",
            f"openai:standin-model@{server.base_url}",
            "--workers",
            "1",
        ]
        cmd += ["--concurrency", "1", "--timeout", "300", "--quiet"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not coqc_under(tmp) or not asked_two(server):  # `two`'s check is running
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.1)
        time.sleep(1.0)
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        assert proc.returncode == code, err
        assert err.decode().count("stopping: 1 checks in flight") == 1
        assert took < 20  # the slow check alone would run for minutes
        assert coqc_under(tmp) == []
        assert not list(tmp.glob("formalbench-*"))  # its throw-away folders are removed
        with RunStore(RunFiles(run_dir).store) as store:
            (run,) = store.runs()
            assert run.status == "interrupted"
            assert [a.task_id for a in store.attempts(run.id)] == ["one"]
        # The response cache holds `two`'s endless proof: drop it so the rerun asks again.
        RunFiles(run_dir).responses.unlink()
        slow["on"] = False
        again = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr
    with RunStore(RunFiles(run_dir).store) as store:
        (run,) = store.runs()
        assert run.status == "finished"
        assert sorted(a.task_id for a in store.attempts(run.id)) == sorted(TASKS)
    assert load_summary(run_dir).solved == sorted(TASKS)
