"""`formalbench construct … --stop-after source` stopped with SIGTERM (exit 143, logged as
interrupted), then killed with SIGKILL in the middle of a run, then rerun: the store is intact, the run finishes with the same funnel as if never killed,
no step stored before the kill is asked again, and a rerun of the finished run asks nothing.

Real processes, real HTTP (the stand-in OpenAI server, answering by prompt with a delay so
the kill lands mid-run), real SQLite.
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

from formalbench.pipelines.construct.report import construct_report
from formalbench.store import integrity_ok
from formalbench.store.construct import ConstructStore
from tests.construct_fixtures import answer_body, exercises, write_jsonl
from tests.standins.openai_server import CHAT, StandinServer


def _command(source: Path, run_dir: Path, url: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "formalbench",
        "construct",
        str(source),
        "--model",
        f"openai:standin-model@{url}",
        "--stop-after",
        "source",
        "--concurrency",
        "1",
        "--run-dir",
        str(run_dir),
        "--quiet",
    ]


def _stored_steps(db: Path) -> int:
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM cs_steps").fetchone()[0]
    except sqlite3.OperationalError:  # tables not made yet
        return 0


def test_sigkill_mid_run_then_resume(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    run_dir = tmp_path / "run"
    db = run_dir / "construct.sqlite"
    env = {**os.environ, "OPENAI_API_KEY": "k", "PYTHONPATH": os.pathsep.join(sys.path)}

    def slow(body):
        time.sleep(0.08)
        return answer_body(body)

    with StandinServer() as srv:
        srv.responder = slow
        cmd = _command(source, run_dir, srv.base_url)
        # SIGTERM: a clean stop, exit 143, the log says interrupted
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _stored_steps(db) < 3 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=60)
        assert child.returncode == 143, err
        assert json.loads((run_dir / "construct.json").read_text())["status"] == "interrupted"
        # SIGKILL: no chance to say anything
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _stored_steps(db) < 8 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert child.poll() is None, child.communicate()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        killed_at = _stored_steps(db)
        with sqlite3.connect(db) as conn:
            assert integrity_ok(conn)
        assert 8 <= killed_at < 20

        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        with ConstructStore(db) as store:
            attempts = sum(record.attempts for _, record in store.steps())
            steps = len(store.steps())
        # every request was needed once, but for at most the one in flight at each stop
        assert attempts <= srv.count() <= attempts + 2

        # every step asked for its reply's shape: a JSON Schema in response_format
        chats = [r.body for r in srv.requests if r.path == CHAT]
        formats = {b["response_format"]["json_schema"]["name"] for b in chats}
        assert formats >= {"CleanReply", "NaturalReply", "ConditionsReply", "ReviewReply"}
        assert "RepairReply" in formats
        assert all(b["response_format"]["type"] == "json_schema" for b in chats)

        report = construct_report(run_dir)
        assert (report.exercises, report.reviewed, report.usable) == (5, 4, 2)
        assert (report.accepted, report.revised, report.held) == (1, 1, 2)
        assert report.status == "finished" and report.format_failures == 1

        finished = srv.count()
        again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert srv.count() == finished  # a finished run asks nothing again
        with ConstructStore(db) as store:
            assert len(store.steps()) == steps
