"""`formalbench review`: refused inputs, the export, and the served interface policy."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.formalization import ReviewDecision, ReviewStatus
from formalbench.dashboard.server import is_loopback
from formalbench.store.review import ReviewStore
from test_dashboard_views import make_run

runner = CliRunner()


def _review(*args: str):
    return runner.invoke(app, ["review", *args])


def test_refuses_what_is_not_a_run(tmp_path: Path):
    result = _review(str(tmp_path / "missing"))
    assert result.exit_code == 2 and "not a directory" in result.output
    result = _review(str(tmp_path))
    assert result.exit_code == 2 and "no formalize.sqlite here" in result.output
    assert not (tmp_path / "formalize.sqlite").exists()  # and does not create one
    assert "Traceback" not in result.output


def test_other_interfaces_need_a_token(tmp_path: Path):
    run = make_run(tmp_path / "run")
    result = _review(str(run), "--host", "0.0.0.0")
    assert result.exit_code == 2 and "give --token" in result.output
    result = _review(str(run), "--host", "0.0.0.0", "--token", "short")
    assert result.exit_code == 2 and "at least 8 characters" in result.output
    result = _review(str(run), "--port", "70000")
    assert result.exit_code == 2 and "not a port number" in result.output
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_busy_port_is_a_clear_error(tmp_path: Path):
    run = make_run(tmp_path / "run")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = _review(str(run), "--port", str(port))
    assert result.exit_code == 2 and "cannot listen" in result.output


def test_export_writes_accepted_tasks(tmp_path: Path):
    run = make_run(tmp_path / "run")
    with ReviewStore(run / "formalize.sqlite") as store:
        for pid, status in (("alg-find", "accepted"), ("nt-divides", "rejected")):
            store.decide(
                ReviewDecision(
                    problem_id=pid,
                    status=ReviewStatus(status),
                    candidate_id=f"{pid}/model-a/0",
                    code="Theorem t : True.\nProof.\nAdmitted.\n",
                    edited=True,
                    reviewer="ana",
                ),
                based_on=0,
            )
    out = tmp_path / "accepted.jsonl"
    result = _review(str(run), "--export", str(out))
    assert result.exit_code == 0, result.output
    assert "wrote 1 accepted task to" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["alg-find"]
    assert rows[0]["formal"] == "Theorem t : True.\nProof.\nAdmitted.\n"
    assert rows[0]["trail"]["review"]["reviewer"] == "ana"
    assert "-Theorem find_x" in rows[0]["trail"]["review"]["diff"]
    result = _review(str(run), "--export", str(tmp_path))
    assert result.exit_code == 2 and "is a directory" in result.output
    result = _review(str(run), "--export", str(tmp_path / "no" / "x.jsonl"))
    assert result.exit_code == 2 and "does not exist" in result.output


def test_served_with_a_token_answers_only_with_it(tmp_path: Path):
    run = make_run(tmp_path / "run")
    token = "tok-0123456789abcdef"
    proc = subprocess.Popen(
        [sys.executable, "-m", "formalbench", "review", str(run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "FORMALBENCH_REVIEW_TOKEN": token, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=60)
        url = next(w for w in first.split() if w.startswith("http://"))
        assert url.endswith(f"?token={token}")
        base = url.split("?")[0]
        with httpx.Client() as client:
            assert client.get(base).status_code == 401
            first = client.get(url)  # the token moves from the address to a cookie
            assert first.status_code == 303 and first.headers["location"] == "/"
            assert client.get(base).status_code == 200  # the cookie carries it now
            assert client.get(base + "static/keys.js").status_code == 200
        with httpx.Client(headers={"X-Formalbench-Token": token}) as client:
            assert client.get(base + "p/alg-find").status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_loopback_server_refuses_other_host_names(tmp_path: Path, host: str):
    from fastapi.testclient import TestClient

    from formalbench.dashboard.app import create_app
    from formalbench.dashboard.guard import LOOPBACK_NAMES

    application = create_app(make_run(tmp_path / "run"), allowed_hosts=list(LOOPBACK_NAMES))
    with TestClient(application, base_url=f"http://{host}:1234") as client:
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"Host": "attacker.example:1234"}).status_code == 403


@pytest.mark.parametrize("required", [False, True])
def test_browser_tests_fail_instead_of_skipping_when_required(required: bool):
    """FORMALBENCH_REQUIRE_BROWSER=1 (CI) turns a missing chromium into failures."""
    env = {k: v for k, v in os.environ.items() if k != "FORMALBENCH_REQUIRE_BROWSER"}
    env["FORMALBENCH_CHROMIUM"] = "/nonexistent/chromium"
    if required:
        env["FORMALBENCH_REQUIRE_BROWSER"] = "1"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs"]
        + [str(root / "tests" / "test_dashboard_browser.py"), "-k", "two_tabs"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if required:
        assert done.returncode == 1 and "1 error" in done.stdout, done.stdout  # setup failed
        assert "FORMALBENCH_REQUIRE_BROWSER=1 requires the browser tests" in done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
        # The first missing piece is named: the package where Playwright is absent, else chromium.
        if importlib.util.find_spec("playwright") is None:
            assert "the playwright package is not installed" in done.stdout
        else:
            assert "no chromium at /nonexistent/chromium" in done.stdout
