"""SIGINT / SIGTERM of a real `formalbench ape mine --backend coq` on a shipped history (issue
30 item 1): it stops at once with 130 / 143, no Coq process outlives it, the validations
that ended stay in `ape.sqlite`, and the same command resumes without redoing them. The
history, coq-dblib's 20 newest commits, gives 3 tasks on Rocq 9.2 (about 15 s in all); its
opam file declares Coq >= 8.7 & < 8.13~, so its failures there read "made for Coq …"."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from formalbench.store.ape import ApeStore
from tests.processes import coqc_under
from tests.shared_data import DATA, needs_shared

pytestmark = [needs_shared, pytest.mark.rocq]

DRIFT = "made for Coq >= 8.7 & < 8.13~ (running 9.2)"


def _validated(run: Path) -> int:
    db = run / "ape.sqlite"
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1) as conn:
            row = conn.execute("SELECT COUNT(*) FROM ape_results WHERE step = 'validate'")
            return int(row.fetchone()[0])
    except sqlite3.Error:  # not made yet, or locked for a write: ask again
        return 0


def _results(run: Path) -> dict:
    with ApeStore(run / "ape.sqlite") as store:
        return store.results("validate")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_validation_and_a_rerun_resumes(
    tmp_path: Path, signum: int, code: int
) -> None:
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    bundle = DATA / "git-histories" / "coq-dblib.bundle"
    cmd = [sys.executable, "-m", "formalbench", "ape", "mine", str(bundle), "--run-dir", str(run)]
    cmd += ["--limit", "20", "--backend", "coq", "--toolchain", "rocq-9.2", "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    # one validation recorded, and Coq at work on the next (in the tree or the sandbox)
    while _validated(run) < 1 or not coqc_under(tmp_path):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    sent = time.monotonic()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    said = err.decode()
    assert proc.returncode == code, said
    assert took < 10, took  # the validation in flight alone takes longer than this
    assert said.count("stopping: ") == 1 and "validations in flight" in said
    assert "validation interrupted:" in said and "rerun the same command to resume" in said
    assert "Traceback" not in said
    time.sleep(0.5)
    assert coqc_under(tmp_path) == []  # killed, not left to finish
    first = _results(run)
    assert 1 <= len(first) < 3
    with ApeStore(run / "ape.sqlite") as store:
        assert store.get_meta("validation_status") == "interrupted"
    if signum == signal.SIGTERM:
        return  # the resume is the same for both signals; once is enough for the suite
    again = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()
    final = _results(run)
    assert len(final) == 3
    for task_id, result in first.items():  # not redone: the very record of the first run
        assert final[task_id] == result
    with ApeStore(run / "ape.sqlite") as store:
        assert store.get_meta("validation_status") == "finished"
    # the history is older than Rocq 9.2: its failures say so, with their own cause
    reasons = {r.get("reason") for r in final.values() if not r["kept"]}
    assert reasons == {DRIFT}
    assert all(r["coq"]["declared"] == ">= 8.7 & < 8.13~" for r in final.values())
    assert all(r["coq"]["source"] == "coq-dblib.opam" for r in final.values())
    summary = again.stderr.decode()
    assert f"2 {DRIFT} (e.g. before does not compile: line " in summary
    assert "3 task(s) from commits made for Coq >= 8.7 & < 8.13~ (2 not kept)" in summary


def _walked(run: Path) -> int:
    db = run / "ape.sqlite"
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM ape_commits").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_sigterm_while_mining_exits_143_and_the_walk_resumes(tmp_path: Path) -> None:
    """Before validation starts, the walk itself stops on SIGTERM with 143 and one line (it
    was killed by the signal's default action), and the rerun walks only what is left."""
    run = tmp_path / "run"
    bundle = DATA / "git-histories" / "coq-topology.bundle"
    cmd = [sys.executable, "-m", "formalbench", "ape", "mine", str(bundle), "--run-dir", str(run)]
    cmd += ["--limit", "120", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while _walked(run) < 3:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err.decode()
    assert "mining interrupted:" in err.decode() and "Traceback" not in err.decode()
    walked = _walked(run)
    assert 3 <= walked < 120
    again = subprocess.run(cmd, capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode()
    assert _walked(run) == 120
