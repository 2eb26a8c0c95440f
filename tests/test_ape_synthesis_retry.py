"""`ape synthesize`: an unreadable reply is an error, not a verdict. It is shown (stderr,
exit 1 when every task failed alike, `report`), kept on a plain rerun, and redone by
`--retry-errors`, through the real response cache and real HTTP (the OpenAI stand-in)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.llm.base import Message
from formalbench.llm.replay import ScriptedCall
from formalbench.store.ape import ApeStore
from tests.shared_data import needs_shared
from tests.standins.openai_server import StandinServer
from tests.test_ape_loop import _rule, _seed_run


@needs_shared
def test_unreadable_replies_are_shown_kept_and_retried(tmp_path, monkeypatch) -> None:
    task = _seed_run(tmp_path)
    good = _rule(task)
    calls: list[int | None] = []
    answer = {"mode": "garbage"}

    def respond(body: dict) -> list[str]:
        calls.append(body.get("seed"))
        if answer["mode"] == "garbage":
            return ["I would rather write a poem about topology."]
        messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]
        return [good(ScriptedCall(messages, 0, 1, 0.0, None, None, body.get("seed") or 0, 0))]

    runner = CliRunner()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer() as server:
        server.responder = respond
        spec = f"openai:standin-model@{server.base_url}"
        synthesize = ["ape", "synthesize", str(tmp_path), "--model", spec]
        res = runner.invoke(app, synthesize)
        assert res.exit_code == 1, res.output
        assert "0 tasks kept" in res.stdout
        assert "synthesis failed for every task (1): unreadable instruction reply" in res.stderr
        assert "--retry-errors" in res.stderr
        report = json.loads(runner.invoke(app, ["report", str(tmp_path), "--json"]).stdout)
        assert report["synthesis"]["errors"] == 1
        assert report["synthesis"]["reasons"] == {"unreadable instruction reply": 1}

        answer["mode"] = "good"  # the model would answer now, but a plain rerun keeps the error
        before = len(calls)
        res = runner.invoke(app, synthesize)
        assert res.exit_code == 1 and len(calls) == before, res.output

        res = runner.invoke(app, [*synthesize, "--retry-errors"])
        assert res.exit_code == 0, res.output
        assert "1 tasks kept" in res.stdout
        # the retry asked with a new seed: the cached unreadable reply was not served again
        assert calls[before] == 1
    with ApeStore(tmp_path / "ape.sqlite") as store:
        done = store.get_result(task.id, "synthesize")
    assert done["kept"] and "error" not in done
    report = json.loads(runner.invoke(app, ["report", str(tmp_path), "--json"]).stdout)
    assert report["benchmark_tasks"] == 1 and report["synthesis"]["errors"] == 0
