"""The sandbox behind the gate: private folders, a read-only world, no network, capped output,
and no assistant process that outlives formalbench (real processes, real coqc)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from formalbench.backends import sandbox
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.backends.sandbox import isolation, run_limited, stop_all, sweep_stale, work_dir
from formalbench.core.records import CheckStatus
from tests.processes import coqc_under

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
needs_bwrap = pytest.mark.skipif(isolation() != "bwrap", reason="no working bwrap here")


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORMALBENCH_SANDBOX_WRITABLE", raising=False)
    sandbox.resume_starting()


def sh(script: str, folder: str, **kw: object) -> sandbox.ProcessOutcome:
    return run_limited(["sh", "-c", script], cwd=folder, timeout=30, **kw)  # type: ignore[arg-type]


def test_home_and_tmpdir_are_inside_the_throw_away_folder() -> None:
    with work_dir("test") as folder:
        out = sh('echo "$HOME"; echo "$TMPDIR"; pwd; touch inside && echo ok', folder)
    home, tmp, cwd, ok = out.stdout.split()
    assert home.startswith(folder) and tmp.startswith(folder) and cwd == folder and ok == "ok"


@needs_bwrap
def test_a_write_outside_the_folder_fails(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    with work_dir("test") as folder:
        out = sh(f'echo leak > "{outside}"; echo rc=$?', folder)
    assert "rc=0" not in out.stdout and not outside.exists()


@needs_bwrap
@needs_coq
def test_coqc_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    """Past the gate (it refuses Redirect), the sandbox alone still stops the write."""
    target = tmp_path / "leak"
    with work_dir("test") as folder:
        Path(folder, "C.v").write_text(f'Redirect "{target}" Check nat.\n', encoding="utf-8")
        out = run_limited(["coqc", "-q", "C.v"], cwd=folder, timeout=60)
    assert out.returncode != 0 and not list(tmp_path.glob("leak*"))


@needs_bwrap
def test_no_network(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('in')"
    try:
        with work_dir("test") as folder:
            out = run_limited([sys.executable, "-c", code], cwd=folder, timeout=30)
    finally:
        server.close()
    assert "in" not in out.stdout and out.returncode != 0


def test_output_is_capped_with_a_marker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORMALBENCH_MAX_OUTPUT_BYTES", "100000")
    code = "import sys\nfor _ in range(50): sys.stdout.write('x' * 1000000)\nprint('end')"
    with work_dir("test") as folder:
        out = run_limited([sys.executable, "-c", code], cwd=folder, timeout=60)
    assert out.status == CheckStatus.ok and out.truncated and out.returncode == 0
    assert len(out.stdout) < 100200 and "output cut here, over 100000 bytes" in out.stdout


@needs_coq
def test_a_cut_coq_output_never_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORMALBENCH_MAX_OUTPUT_BYTES", "300")
    with CoqBackend(workers=1) as coq:
        result = coq.check("Check nat.\n" * 40, timeout=60)
    assert not result.compiled
    assert any("cannot be trusted" in d.message for d in result.errors)


def test_stop_all_ends_a_running_process_at_once() -> None:
    got: list[sandbox.ProcessOutcome] = []
    with work_dir("test") as folder:
        runner = threading.Thread(target=lambda: got.append(sh("sleep 60", folder)))
        runner.start()
        deadline = time.monotonic() + 10
        while sandbox.live_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        start = time.monotonic()
        assert stop_all() == 1
        runner.join(10)
        assert time.monotonic() - start < 5 and got[0].status != CheckStatus.ok
        assert sh("echo late", folder).stdout == ""  # nothing new starts while stopping
    sandbox.resume_starting()


CANDIDATE_FILE = f"{LOCAL_MODULE}.v"  # the slow one (the original is compiled first, quickly)
SLOW_ORIGINAL = "Theorem slow : True.\nProof.\nAdmitted.\n"
SLOW_CANDIDATE = "Theorem slow : True.\nProof.\n  do 1000000000 idtac.\n  exact I.\nQed.\n"


@needs_coq
@pytest.mark.parametrize("layer", ["auto", "none"])  # bwrap --die-with-parent; setpriv alone
def test_sigkill_of_formalbench_leaves_no_coqc_and_no_folder(tmp_path: Path, layer: str) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "o.v").write_text(SLOW_ORIGINAL, encoding="utf-8")
    (tmp_path / "c.v").write_text(SLOW_CANDIDATE, encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(tmp), "FORMALBENCH_SANDBOX": layer}
    cmd = [sys.executable, "-m", "formalbench", "check", str(tmp_path / "c.v")]
    cmd += ["--against", str(tmp_path / "o.v"), "--timeout", "300"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not coqc_under(tmp, CANDIDATE_FILE) and time.monotonic() < deadline:
            assert proc.poll() is None, "formalbench ended before its check started"
            time.sleep(0.1)
        assert coqc_under(tmp, CANDIDATE_FILE), "no coqc started on the candidate"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while coqc_under(tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert coqc_under(tmp) == []
    # Its folders (a check's, or the cache of compiled originals): formalbench-KIND-PID-*
    owned = re.compile(rf"^formalbench-[a-z]+-{proc.pid}-")
    left = [p.name for p in tmp.iterdir() if owned.match(p.name)]
    assert left  # SIGKILL leaves the folder; the next formalbench removes it:
    assert sweep_stale(tmp) >= 1
    assert not [p for p in tmp.iterdir() if owned.match(p.name)]


def test_a_death_by_signal_stays_a_crash_inside_the_sandbox() -> None:
    """bwrap reports a child killed by signal N as exit 128 + N: it must still be a crash."""
    with work_dir("test") as folder:
        out = sh("kill -SEGV $$", folder)
        plain = sh("exit 3", folder)
    assert out.status == CheckStatus.crash and out.returncode == -signal.SIGSEGV
    assert plain.status == CheckStatus.ok and plain.returncode == 3
