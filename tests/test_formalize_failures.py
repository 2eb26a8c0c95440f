"""`formalbench formalize` says when a whole stage failed, as `eval` and `construct` do: a run
in which no candidate compiled (here every translation reply held no code) prints why on
stderr and exits 1, where it used to print its tables and exit 0. Real coqc, real HTTP
stand-in for the model."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from tests.test_formalize import responder, server, system, write_problems  # noqa: F401

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")


def test_no_candidate_compiling_is_said_and_exits_1(server, tmp_path: Path) -> None:  # noqa: F811
    def prose_only(body: dict[str, Any]) -> list[str]:
        if "You turn competition mathematics problems" in system(body):
            return ["I would state it with natural numbers."] * int(body.get("n") or 1)
        return responder(body)

    server.responder = prose_only
    problems = write_problems(
        tmp_path / "p.jsonl", [{"id": "comm", "informal": "Show that n + 0 = n."}]
    )
    args = ["formalize", str(problems), "--model", f"openai:alpha@{server.base_url}"]
    args += ["--backend", "coq", "--samples", "1", "--repair-rounds", "0", "--retranslations", "0"]
    args += ["--context-items", "0", "--run-dir", str(tmp_path / "run"), "--quiet"]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 1, run.output
    assert "formalbench: error: compile: 0 of 1 candidates compiled (1 model repl" in run.output
