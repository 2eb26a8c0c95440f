"""KiminaBackend against a stand-in Kimina Lean Server over real HTTP on 127.0.0.1
(tests/standins/kimina_server.py, answering from the recorded REPL sessions)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.backends.base import CheckRequest
from formalbench.backends.lean.kimina import KiminaBackend, leading_import_lines
from formalbench.cli.main import app
from formalbench.core.errors import BackendError, InputError
from formalbench.core.records import CheckStatus
from standins.kimina_server import serve
from tests.shared_data import needs_shared

HEADER = "import Mathlib\nimport Aesop\n\n"
RECORDED_BODY = "theorem foo (x : Int) : x = x := by\n  have h : x = 1 := by sorry"  # have_by_sorry


@needs_shared  # the stand-in server replays the recorded REPL sessions
def test_reply_positions_come_back_to_snippet_lines_with_axioms() -> None:
    source = HEADER + RECORDED_BODY
    with serve() as server, KiminaBackend(server.url) as kimina:
        result = kimina.check(source, targets=["foo"], timeout=20)
    lines = source.split("\n")
    (error,) = result.diagnostics
    assert lines[error.line - 1].startswith("theorem foo") and error.column == 33
    (hole,) = result.holes
    assert lines[hole.line - 1][hole.column :] == "sorry" and hole.proof_state == 0
    assert result.axioms == {"foo": ["propext", "Classical.choice", "Quot.sound"]}
    (sent,) = server.requests
    assert sent["path"] == "/api/check" and sent["json"]["timeout"] == 20
    assert sent["json"]["snippets"][0]["code"].startswith(source)


def test_api_key_is_sent_and_a_refused_key_is_a_clear_error() -> None:
    with serve(api_key="s3cret") as server:
        with KiminaBackend(server.url, api_key="s3cret") as kimina:
            assert kimina.check(HEADER + "theorem t : True := trivial").compiled
        assert server.requests[0]["headers"]["Authorization"] == "Bearer s3cret"
        with KiminaBackend(server.url) as anonymous, pytest.raises(BackendError, match="API key"):
            anonymous.check(HEADER + "theorem t : True := trivial")


def test_server_timeout_is_a_timeout_result() -> None:
    with serve() as server, KiminaBackend(server.url) as kimina:
        result = kimina.check(HEADER + "theorem h : True := trivial -- fake:hang", timeout=1)
    assert result.status == CheckStatus.timeout and "timed out" in result.detail


def test_server_errors_are_retried_then_reported_as_crash() -> None:
    with serve(fail_first=1) as server, KiminaBackend(server.url, retries=2) as kimina:
        recovered = kimina.check(HEADER + "theorem t : True := trivial")
        assert recovered.compiled and len(server.requests) == 2
    with serve(fail_first=5) as server, KiminaBackend(server.url, retries=1) as kimina:
        failed = kimina.check(HEADER + "theorem t : True := trivial")
        assert failed.status == CheckStatus.crash and "500" in failed.detail
        assert len(server.requests) == 2


def test_batches_keep_request_order() -> None:
    requests = [
        CheckRequest(source=HEADER + f"def d{i} := {i}", targets=[f"d{i}"]) for i in range(5)
    ]
    with serve() as server, KiminaBackend(server.url, batch_size=2) as kimina:
        results = list(kimina.check_many(requests))
    assert [list(r.axioms) for r in results] == [[f"d{i}"] for i in range(5)]
    assert sorted(len(r["json"]["snippets"]) for r in server.requests) == [1, 2, 2]


def test_bad_url_and_wrong_path_are_errors() -> None:
    with pytest.raises(InputError, match="http"):
        KiminaBackend("localhost:8000")
    with (
        serve() as server,
        KiminaBackend(server.url + "/v2") as kimina,
        pytest.raises(BackendError, match="404"),
    ):
        kimina.check("def a := 1")


def test_leading_import_lines_follow_the_server_split() -> None:
    assert leading_import_lines("import A\n\nimport B\ndef x := 1") == 3
    assert leading_import_lines("def x := 1") == 0


def _closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_preflight_accepts_a_listening_server_and_refuses_a_dead_address() -> None:
    with serve() as server, KiminaBackend(server.url) as kimina:
        kimina.preflight(timeout=5)  # this server has no health route: listening is enough
    dead = f"http://127.0.0.1:{_closed_port()}"
    with KiminaBackend(dead) as kimina, pytest.raises(BackendError, match="cannot reach"):
        kimina.preflight(timeout=2)


def test_api_key_comes_from_the_environment_and_stays_out_of_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KIMINA_API_KEY", "env-s3cret")
    with serve(api_key="env-s3cret") as server:
        with KiminaBackend(server.url) as kimina:
            assert kimina.check(HEADER + "theorem t : True := trivial").compiled
            assert "env-s3cret" not in kimina.version()
        assert server.requests[-1]["headers"]["Authorization"] == "Bearer env-s3cret"
        with (
            KiminaBackend(server.url, api_key="given") as explicit,
            pytest.raises(BackendError, match="refused the API key") as refused,
        ):
            explicit.check(HEADER + "theorem t : True := trivial")
        assert "given" not in str(refused.value) and "env-s3cret" not in str(refused.value)


def test_eval_with_an_unreachable_kimina_server_stops_before_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    dead = f"http://127.0.0.1:{_closed_port()}"
    args = ["eval", "example-lean", "--backend", "kimina", "--kimina-url", dead]
    result = CliRunner().invoke(app, [*args, "--run-dir", str(run_dir), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "cannot reach the Kimina server" in result.output
    assert "Traceback" not in result.output
    assert not run_dir.exists()  # nothing is left behind by a start that failed
