"""`ape export` then `ape eval` on the export gives what `ape eval` on the run gives (issue
30, item 4 and its Measure): the shipped coq-topology history, real coqc, the scripted model
of test_ape_loop behind the OpenAI stand-in, every step through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.llm.base import Message
from formalbench.llm.replay import ScriptedCall
from formalbench.store.ape import ApeStore
from tests.shared_data import needs_shared
from tests.standins.openai_server import StandinServer
from tests.test_ape_loop import COQ8_HISTORY, _rule, _seed_run


@needs_shared
@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
@COQ8_HISTORY
def test_an_export_evaluates_as_its_run(tmp_path: Path, monkeypatch) -> None:
    run, export, again = tmp_path / "run", tmp_path / "export", tmp_path / "again"
    task = _seed_run(run)
    with ApeStore(run / "ape.sqlite") as store:  # as `--validate coq` records a kept task
        after = {"status": "ok", "errors": [], "warnings": [], "complete": True}
        store.put_result(task.id, "validate", {"kept": True, "after": after})
    rule = _rule(task)

    def respond(body: dict) -> list[str]:
        messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]
        return [rule(ScriptedCall(messages, 0, 1, 0.0, None, None, body.get("seed") or 0, 0))]

    runner = CliRunner()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer() as server:
        server.responder = respond
        spec = f"openai:standin-model@{server.base_url}"
        res = runner.invoke(app, ["ape", "synthesize", str(run), "--model", spec])
        assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["ape", "export", str(run), "--out", str(export), "--bundle"])
        assert res.exit_code == 0, res.output
        # samples 0-2 of the rule: the gold edit, one that breaks the file, one the gate refuses
        for source, extra in ((run, []), (export, ["--run-dir", str(again)])):
            res = runner.invoke(
                app, ["ape", "eval", str(source), "--model", spec, "--samples", "3", *extra]
            )
            assert res.exit_code == 0, res.output
            assert "1 tasks with at least one judged pass" in res.stdout
    with ApeStore(run / "ape.sqlite") as a, ApeStore(again / "ape.sqlite") as b:
        assert b.get_meta("source") == str((export / "repository.bundle").resolve())
        assert b.results("eval") == a.results("eval")
        samples = a.get_result(task.id, "eval")["samples"]
    assert [s["compiled"] for s in samples] == [True, False, False]
    reports = [
        json.loads(runner.invoke(app, ["report", str(d), "--json"]).stdout) for d in (run, again)
    ]
    for key in ("pass_at_k", "by_category", "answers", "answer_summary", "benchmark_tasks"):
        assert reports[0][key] == reports[1][key], key
    # the evaluation built the commit's tree: a new export names its snapshot
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(export), "--force"])
    assert res.exit_code == 0, res.output
    record = json.loads((export / "tasks.jsonl").read_text().splitlines()[0])
    after_ids = [s["id"] for s in record["snapshots"] if s["revision"] == "after"]
    assert after_ids and after_ids[0].startswith(f"coq-{task.commit_hash}-")
    assert (run / "snapshots" / "snapshots").is_dir()
