"""A writer killed with SIGKILL at a random moment leaves whole attempts or none, and resumes.

The child is a real process running the real RunStore; nothing is simulated. Each attempt
carries a large payload (spanning many database pages) whose content is derived from its
key, so a torn write would show up as a bad JSON document or a payload for the wrong key.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from formalbench.core.records import Attempt
from formalbench.store import RunStore, integrity_ok

TASKS, SAMPLES = 20, 20
PAYLOAD_REPEAT = 1500  # ~10 kB an attempt: several database pages

CHILD = r"""
import sys
from formalbench.core.records import Attempt, Language, Task, Verdict
from formalbench.store import RunStore

path, tasks, samples, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
store = RunStore(path)
run_id = store.open_run({"dataset": "kill-test", "solver": "loop", "samples": samples}, {})
store.add_tasks(run_id, [
    Task(id=f"t{i}", language=Language.coq, formal="Theorem t : True.\nProof.\nAdmitted.\n")
    for i in range(tasks)
])
done = store.done_samples(run_id)
print("ready", len(done), flush=True)
for i in range(tasks):
    for s in range(samples):
        if (f"t{i}", s) in done:
            continue
        payload = f"<t{i}/{s}>" * repeat
        store.record_attempt(run_id, Attempt(
            task_id=f"t{i}", solver="loop", sample=s, raw_output=payload,
            verdict=Verdict(passed=(i + s) % 3 == 0),
        ))
        print("wrote", flush=True)
print("finished", flush=True)
"""


def _child(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(TASKS), str(SAMPLES), str(PAYLOAD_REPEAT)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _check_consistent(path: Path) -> int:
    """The file after a kill: intact, counter equal to rows, every row whole and for its key."""
    conn = sqlite3.connect(path)
    try:
        assert integrity_ok(conn)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        rows = conn.execute("SELECT task_id, sample, passed, attempt FROM attempts").fetchall()
        (counter,) = conn.execute("SELECT n_attempts FROM runs").fetchone()
    finally:
        conn.close()
    assert counter == len(rows)
    assert len({(r[0], r[1]) for r in rows}) == len(rows)
    for task_id, sample, passed, text in rows:
        attempt = Attempt.model_validate_json(text)
        assert (attempt.task_id, attempt.sample) == (task_id, sample)
        assert attempt.raw_output == f"<{task_id}/{sample}>" * PAYLOAD_REPEAT
        assert passed == int(attempt.verdict.passed)
    return len(rows)


def test_sigkill_at_random_moments_then_resume(tmp_path: Path):
    seed = int(os.environ.get("KILL_TEST_SEED", time.time_ns() % 10_000))
    rng = random.Random(seed)
    path = tmp_path / "run.sqlite"
    total = TASKS * SAMPLES
    counts = [0]
    for _ in range(3):
        child = _child(path)
        assert child.stdout is not None
        ready = child.stdout.readline().split()
        assert ready[0] == "ready" and int(ready[1]) == counts[-1], f"seed {seed}: {ready}"
        # Kill while it writes: after a random number of commits, with writes still to come.
        target = rng.randint(1, (total - counts[-1]) // 3)
        for _ in range(target):
            assert child.stdout.readline() == "wrote\n", f"seed {seed}"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        counts.append(_check_consistent(path))
        assert counts[-2] + target <= counts[-1] < total, f"seed {seed}: {counts}"
    child = _child(path)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0 and "finished" in out, f"seed {seed}"
    assert _check_consistent(path) == TASKS * SAMPLES
    with RunStore(path) as store:
        (run,) = store.runs()
        assert len(store.done_samples(run.id)) == TASKS * SAMPLES
        assert len(run.history) == 3  # three resumes
        assert sum(1 for _ in store.attempts(run.id)) == TASKS * SAMPLES
    print(json.dumps({"seed": seed, "rows_after_each_kill": counts}))
