"""`--record FILE`: a run against a live model (the stand-in HTTP server) writes every request
and answer to FILE, and `--model replay:FILE` runs it again offline with the same results.

Every command that takes a model takes `--record` (checked by walking the commands)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.llm.registry import make_model
from formalbench.llm.replay import RecordingModel
from formalbench.pipelines.run_files import load_summary
from tests.shared_data import needs_shared
from tests.standins.openai_server import StandinServer

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

REFL = "Theorem two : 1 + 1 = 2.\nProof.\nAdmitted.\n"
FALSE = "Theorem never : forall P Q : Prop, P -> Q.\nProof.\nAdmitted.\n"


def _dataset(path: Path) -> Path:
    rows = [
        {"id": "two", "language": "coq", "formal": REFL},
        {"id": "never", "language": "coq", "formal": FALSE},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@needs_coq
def test_eval_records_a_live_run_and_replays_it_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _dataset(tmp_path / "d.jsonl")
    tape = tmp_path / "tape" / "calls.jsonl"  # its folder is made
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    base = ["eval", str(data), "--solver", "whole", "--samples", "2", "--quiet"]
    with StandinServer() as server:
        # the answers differ per request, so a replay that mixed them up would show
        server.responder = lambda body: (
            ["```coq\nreflexivity.\n```" if "1 + 1" in json.dumps(body) else "```coq\nauto.\n```"]
            * int(body.get("n", 1))
        )
        spec = f"openai:standin-model@{server.base_url}"
        live = CliRunner().invoke(
            app, [*base, "--model", spec, "--record", str(tape), "--run-dir", str(tmp_path / "a")]
        )
        assert live.exit_code == 0, live.output
        asked = server.count()
    assert asked >= 2
    rows = _lines(tape)
    assert len(rows) == asked  # one line per request that reached the model
    assert {r["spec"] for r in rows} == {spec}
    # the server is gone: the replay answers every request from the file
    again = CliRunner().invoke(
        app, [*base, "--model", f"replay:{tape}", "--run-dir", str(tmp_path / "b")]
    )
    assert again.exit_code == 0, again.output
    first, second = load_summary(tmp_path / "a"), load_summary(tmp_path / "b")
    assert first.solved == second.solved == ["two"]
    assert first.attempts == second.attempts == 4
    # a command without --record records nothing (the setting ends with the command)
    model = make_model(f"replay:{tape}")
    assert not isinstance(model, RecordingModel)


def test_record_refuses_a_folder_before_any_work(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "d.jsonl")
    args = ["eval", str(data), "--model", "replay:x.jsonl", "--record", str(tmp_path)]
    done = CliRunner().invoke(app, [*args, "--run-dir", str(tmp_path / "r")])
    assert done.exit_code == 2
    assert "--record" in done.output and "is a directory, not a file" in done.output
    assert not (tmp_path / "r").exists()


def _commands() -> list[tuple[str, Any]]:
    from typer.main import get_command

    root = get_command(app)
    ctx = root.make_context("formalbench", [], resilient_parsing=True)
    found: list[tuple[str, Any]] = []

    def walk(cmd: Any, path: str) -> None:
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{path} {name}".strip())
        else:
            found.append((path, cmd))

    walk(root, "")
    return found


def test_every_command_that_takes_a_model_takes_record() -> None:
    with_model = [
        (path, cmd)
        for path, cmd in _commands()
        if any("--model" in getattr(p, "opts", ()) for p in cmd.params)
    ]
    assert {p for p, _ in with_model} >= {
        "eval",
        "formalize",
        "construct",
        "compare",
        "ape synthesize",
        "ape eval",
    }
    for path, cmd in with_model:
        assert any("--record" in getattr(p, "opts", ()) for p in cmd.params), path


@needs_coq
def test_formalize_ensemble_records_and_replays_model_by_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two models given the same prompts: each replays its own answers (`replay:FILE#SPEC`),
    and the replayed run's figures are the live run's."""
    from tests.test_formalize import responder, write_problems

    problems = write_problems(tmp_path / "p.jsonl")
    context = tmp_path / "context.txt"
    context.write_text("Lemma Nat.add_comm : forall n m, n + m = m + n.\n", encoding="utf-8")
    tape = tmp_path / "calls.jsonl"
    base = ["formalize", str(problems), "--samples", "2", "--repair-rounds", "2"]
    base += ["--context", str(context), "--workers", "2", "--quiet"]
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer(models=("alpha", "beta")) as server:
        server.responder = responder
        specs = [f"openai:{m}@{server.base_url}" for m in ("alpha", "beta")]
        live_args = [*base, "--model", specs[0], "--model", specs[1], "--record", str(tape)]
        live = CliRunner().invoke(app, [*live_args, "--run-dir", str(tmp_path / "a")])
        assert live.exit_code == 0, live.output
        asked = server.count()
    assert len(_lines(tape)) == asked
    # the file holds the same prompt answered by both: replayed whole, it is refused ...
    both = CliRunner().invoke(
        app, [*base, "--model", f"replay:{tape}", "--run-dir", str(tmp_path / "x")]
    )
    assert both.exit_code == 2 and f"replay:{tape}#SPEC" in both.output
    # ... and model by model it replays, offline
    replays = ["--model", f"replay:{tape}#openai:alpha", "--model", f"replay:{tape}#openai:beta"]
    again = CliRunner().invoke(app, [*base, *replays, "--run-dir", str(tmp_path / "b")])
    assert again.exit_code == 0, again.output

    def figures(run: Path) -> list[Any]:
        shown = CliRunner().invoke(app, ["report", str(run), "--json"])
        data = json.loads(shown.stdout)
        rows = [
            (m["model"], m["candidates"], m["aligned"], m["compile_rate"]) for m in data["models"]
        ]
        return [data["problems"], data["compiled"], data["aligned"], rows]

    assert figures(tmp_path / "a") == figures(tmp_path / "b")


def test_a_command_refused_while_parsing_leaves_no_recording_behind(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "d.jsonl")
    tape = tmp_path / "calls.jsonl"
    tape.write_text("", encoding="utf-8")
    # --record is taken, then --workers 0 is refused: the command never runs
    args = ["eval", str(data), "--record", str(tape), "--workers", "0"]
    done = CliRunner().invoke(app, [*args, "--run-dir", str(tmp_path / "r")])
    assert done.exit_code == 2 and "--workers 0" in done.output
    assert not isinstance(make_model(f"replay:{tape}"), RecordingModel)


@needs_shared
def test_ape_synthesize_records_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The APE path: its models answer through the run's response cache, inside the
    recorder; a fresh run replays the recording with the same outcome."""
    from formalbench.store.ape import ApeStore
    from tests.test_ape_loop import _rule, _seed_run

    live_run, replay_run = tmp_path / "live", tmp_path / "again"
    task = _seed_run(live_run)
    _seed_run(replay_run)
    rule = _rule(task)

    def respond(body: dict[str, Any]) -> list[str]:
        from formalbench.llm.base import Message
        from formalbench.llm.replay import ScriptedCall

        messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]
        return [rule(ScriptedCall(messages, 0, 1, 0.0, None, None, body.get("seed") or 0, 0))]

    tape = tmp_path / "calls.jsonl"
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer() as server:
        server.responder = respond
        spec = f"openai:standin-model@{server.base_url}"
        args = ["ape", "synthesize", str(live_run), "--model", spec, "--record", str(tape)]
        live = CliRunner().invoke(app, args)
        assert live.exit_code == 0, live.output
        asked = server.count()
    assert asked >= 2 and len(_lines(tape)) == asked  # the instruction and the judge's votes
    again = CliRunner().invoke(
        app, ["ape", "synthesize", str(replay_run), "--model", f"replay:{tape}"]
    )
    assert again.exit_code == 0, again.output
    assert "1 tasks kept" in live.stdout and "1 tasks kept" in again.stdout

    def kept(run: Path) -> Any:
        with ApeStore(run / "ape.sqlite") as store:
            return store.get_result(task.id, "synthesize")

    assert kept(live_run) == kept(replay_run)


def test_parsing_a_command_line_with_record_has_no_side_effect(tmp_path: Path) -> None:
    """The README test parses every example; parsing must neither create FILE nor switch
    recording on."""
    from typer.main import get_command

    root = get_command(app)
    top = root.make_context("formalbench", ["eval"], resilient_parsing=True)
    command = root.get_command(top, "eval")
    tape = tmp_path / "new" / "calls.jsonl"
    command.make_context("eval", ["data.jsonl", "--record", str(tape)], parent=top)
    assert not tape.exists() and not tape.parent.exists()
    (tmp_path / "r.jsonl").write_text("", encoding="utf-8")
    assert not isinstance(make_model(f"replay:{tmp_path / 'r.jsonl'}"), RecordingModel)
