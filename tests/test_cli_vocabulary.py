"""One vocabulary across commands (issue 30, items 11 and 12): `--backend` names the proof
assistant everywhere, `--judge` the judge model, old spellings still work with a note, every
`--help` shows plain placeholders and states the defaults that are computed, and two small
refusals say what to do."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app

runner = CliRunner()


def _commands() -> list[tuple[str, Any, Any]]:
    """(path, command, context) of every leaf command, as `--help` builds them."""
    from typer.main import get_command

    root = get_command(app)
    top = root.make_context("formalbench", [], resilient_parsing=True)
    found: list[tuple[str, Any, Any]] = []

    def walk(cmd: Any, ctx: Any, path: list[str]) -> None:
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                walk(sub, type(top)(sub, info_name=name, parent=ctx), [*path, name])
        else:
            found.append((" ".join(path), cmd, ctx))

    walk(root, top, [])
    return found


def _visible(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if p.param_type_name == "option" and not p.hidden]


def test_help_shows_plain_placeholders_in_every_command() -> None:
    commands = _commands()
    assert len(commands) > 20
    for path, cmd, ctx in commands:
        text = cmd.get_help(ctx)
        usage = text.splitlines()[0]
        assert not re.search(r"\{[a-z_]+\}", usage), (path, usage)
        assert "<list[" not in text and " range>" not in text, (path, text)
    # an argument reads as the user types it; a repeatable option as one use of it
    help_text = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).output
    assert "[OPTIONS] DATASET" in help_text
    assert re.search(r"--label <str> +Only tasks with label key=value\. Repeatable\.", help_text)
    ape = runner.invoke(app, ["ape", "mine", "--help"], env={"COLUMNS": "200"}).output
    assert "[OPTIONS] REPO" in ape


def test_the_assistant_is_named_with_backend_in_every_command() -> None:
    seen = []
    for path, cmd, _ctx in _commands():
        for param in _visible(cmd):
            names = set(param.opts)
            assert "--validate" not in names, path
            if re.match(r"coq( \||,| or)", (param.help or "").lower()):  # the assistant's name
                assert names == {"--backend"}, (path, names)
                seen.append(path)
    assert {"check", "eval", "compare", "formalize", "construct", "ape mine"} <= set(seen)


def test_the_judge_model_has_one_name() -> None:
    judged = set()
    for path, cmd, _ctx in _commands():
        for param in _visible(cmd):
            if any("judge" in o for o in param.opts) and "retries" not in param.name:
                assert param.opts == ["--judge"], (path, param.opts)
                judged.add(path)
    assert judged == {"formalize", "ape synthesize", "ape eval"}


def test_old_spellings_work_with_a_one_line_note(tmp_path: Path) -> None:
    # ape mine --validate VALUE is --backend VALUE
    old = runner.invoke(
        app, ["ape", "mine", str(tmp_path), "--run-dir", str(tmp_path / "r"), "--validate", "x"]
    )
    assert old.exit_code == 2
    assert "note: --validate is now --backend (the old name still works)" in old.output
    assert "--backend x: expected coq or lean" in old.output
    new = runner.invoke(
        app, ["ape", "mine", str(tmp_path), "--run-dir", str(tmp_path / "r"), "--backend", "x"]
    )
    assert new.exit_code == 2 and "note:" not in new.output
    assert "--backend x: expected coq or lean" in new.output
    both = ["--validate", "coq", "--backend", "lean"]
    clash = runner.invoke(app, ["ape", "mine", str(tmp_path), "--run-dir", "r", *both])
    assert clash.exit_code == 2 and "give one" in clash.output
    # formalize --judge-model SPEC is --judge SPEC: the value reaches the judge
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    base = ["formalize", "example", "--model", f"replay:{empty}", "--run-dir", str(tmp_path / "f")]
    judged = runner.invoke(app, [*base, "--judge-model", "notaspec"])
    assert judged.exit_code == 2, judged.output
    assert "note: --judge-model is now --judge" in judged.output
    assert "model spec 'notaspec'" in judged.output


# Options whose default is computed (None in the signature): the help must say what it is.
COMPUTED = {
    "check": ["--timeout"],
    "eval": [
        "--workers",
        "--concurrency",
        "--temperature",
        "--max-tokens",
        "--model-concurrency",
        "--token-budget",
        "--run-token-budget",
        "--max-turns",
        "--backend",
    ],
    "formalize": ["--workers", "--concurrency", "--max-tokens", "--run-token-budget", "--judge"],
    "construct": ["--max-tokens"],
}


@pytest.mark.parametrize("path", sorted(COMPUTED))
def test_computed_defaults_are_stated_in_help(path: str) -> None:
    (cmd,) = [c for p, c, _ in _commands() if p == path]
    by_name = {o: p for p in _visible(cmd) for o in p.opts}
    for option in COMPUTED[path]:
        text = by_name[option].help or ""
        assert "default" in text or re.search(r"\(\d+\)", text), (path, option, text)


def test_ape_apply_refusing_another_files_diff_suggests_path(tmp_path: Path) -> None:
    target = tmp_path / "Local.v"
    target.write_text("Lemma l2 : 2 = 2.\nProof.\n  reflexivity.\nQed.\n", encoding="utf-8")
    patch = tmp_path / "reply.diff"
    patch.write_text(
        "--- a/theories/Sets.v\n+++ b/theories/Sets.v\n@@ -1,4 +1,4 @@\n"
        " Lemma l2 : 2 = 2.\n Proof.\n-  reflexivity.\n+  easy.\n Qed.\n",
        encoding="utf-8",
    )
    args = ["ape", "apply", str(patch), "--to", str(target), "--out", str(tmp_path / "o.v")]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 1
    assert "say so with --path theories/Sets.v" in refused.stderr
    done = runner.invoke(app, [*args, "--path", "theories/Sets.v"])
    assert done.exit_code == 0, done.output
    assert "easy." in (tmp_path / "o.v").read_text(encoding="utf-8")
    # a name that is not plain text (from a model's reply) is not echoed
    patch.write_text(
        patch.read_text(encoding="utf-8").replace("theories/Sets.v", "x\x1b[2J.v"),
        encoding="utf-8",
    )
    hostile = runner.invoke(app, args)
    assert hostile.exit_code == 1 and "\x1b" not in hostile.stderr


def test_formalize_refuses_the_same_model_twice(tmp_path: Path) -> None:
    spec = "openai:m1@http://127.0.0.1:9/v1"
    args = ["formalize", "example", "--model", spec, "--model", "openai:m2", "--model", spec]
    done = runner.invoke(app, [*args, "--run-dir", str(tmp_path / "run")])
    assert done.exit_code == 2
    assert done.output.count("\n") == 1
    assert f"--model {spec} is given twice" in done.output
    assert not (tmp_path / "run").exists()
