"""The README's examples against the command as it is (issue 21, item 12).

- Every `formalbench ...` line of the README's code blocks is parsed by the real command line
  (command path, option names, option values and their checks); only the existence of the
  files it names is not asked, since they are the user's (`candidate.lean`, `runs/f`).
- Every inline `formalbench ...` span names an existing command and existing options.
- The offline examples run for real on shipped data: the snapshot commands, the extraction
  of the shipped textbook and its report.
- The GTED agreement table is what `bench/bench_gted.py --table` prints today.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from formalbench.cli import options
from formalbench.cli.main import app
from formalbench.core.errors import InputError
from tests.shared_data import DATA, needs_shared

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def block_commands() -> list[list[str]]:
    """The argv of each `formalbench` line of the README's code blocks (`$ ` prompts and `\\`
    continuations handled, trailing `# comments` dropped)."""
    found = []
    for body in re.findall(r"```\w*\n(.*?)```", README, re.S):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("formalbench "):
                found.append(shlex.split(line, comments=True)[1:])
    return found


def inline_commands() -> list[str]:
    """The inline `formalbench ...` spans of the prose (synopses such as `[--json]` included)."""
    return [" ".join(m.split()) for m in re.findall(r"`(formalbench [^`]*)`", README)]


def resolve(args: list[str]) -> tuple[Any, list[str], Any]:
    """The click command that `args` names, the arguments left for it, and its parent
    context."""
    group = typer.main.get_command(app)
    ctx = group.make_context("formalbench", ["--help"], resilient_parsing=True)
    command, rest = group, list(args)
    while hasattr(command, "get_command") and rest and not rest[0].startswith("-"):
        found = command.get_command(ctx, rest[0])
        assert found is not None, f"README: no command {rest[0]!r} in {' '.join(args)!r}"
        command, rest = found, rest[1:]
    return command, rest, ctx


def test_the_readme_has_examples_to_check() -> None:
    assert len(block_commands()) >= 25 and len(inline_commands()) >= 15


@pytest.mark.parametrize("args", block_commands(), ids=lambda a: " ".join(a)[:60])
def test_every_readme_example_parses(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # the files an example names are the user's; every other check of the options runs
    monkeypatch.setattr(options, "path_problem", lambda *_a, **_k: None)
    command, rest, parent = resolve(args)
    try:
        command.make_context(args[0], rest, parent=parent)
    except InputError as exc:  # a value refused by cli.options
        pytest.fail(f"README example `formalbench {' '.join(args)}`: {exc}")


@pytest.mark.parametrize("span", inline_commands())
def test_every_inline_readme_command_names_real_options(span: str) -> None:
    words = span.split()[1:]
    command, rest, _ = resolve([w for w in words if not w.startswith("[")])
    known = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", " ".join(rest)))
    assert named <= known, f"README `{span}`: no option {sorted(named - known)}"


def test_every_option_the_prose_names_exists() -> None:
    """Options named on their own in the prose (`--label K=V`, `--sample-tasks N --seed S`)
    belong to some command."""
    known: set[str] = set()

    def collect(command: Any, ctx: Any) -> None:
        known.update(o for p in command.params for o in (*p.opts, *p.secondary_opts))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                collect(command.get_command(ctx, name), ctx)

    group = typer.main.get_command(app)
    collect(group, group.make_context("formalbench", ["--help"], resilient_parsing=True))
    spans = re.findall(r"`(--[a-z][^`]*)`", README)
    named = {n for span in spans for n in re.findall(r"(?<![\w-])--[a-z][a-z-]*", span)}
    assert len(named) > 20 and named <= known, sorted(named - known)


def test_the_readme_label_filter_matches_shipped_tasks() -> None:
    """The `--label K=V` example selects something from the dataset it is shown with."""
    (example,) = re.findall(r"`--label (\w+)=([\w-]+)`", README)
    from formalbench.datasets.loader import load_tasks

    tasks = load_tasks("example-coq").tasks
    assert any(t.labels.get(example[0]) == example[1] for t in tasks), example


@pytest.mark.coq
def test_the_snapshot_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "build" / "sub").mkdir(parents=True)
    (tmp_path / "build" / "sub" / "A.vo").write_bytes(b"compiled")
    (tmp_path / "build" / ".git").mkdir()
    (tmp_path / "build" / ".git" / "HEAD").write_text("ref")
    runner = CliRunner()
    for args in block_commands():
        if args[0] != "snapshot":
            continue
        args = [str(tmp_path / "wt") if a == "/tmp/wt" else a for a in args]
        done = runner.invoke(app, args)
        assert done.exit_code == 0, (args, done.output)
        if "--json" in args:
            json.loads(done.stdout)
        else:
            assert "()" not in done.stdout and "True" not in done.stdout
    assert (tmp_path / "wt" / "sub" / "A.vo").read_bytes() == b"compiled"
    assert not (tmp_path / "wt" / ".git").exists()


@needs_shared
def test_the_extraction_example_runs_on_the_shipped_textbook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fcla-latex.tar.gz").symlink_to(DATA / "fcla-latex.tar.gz")
    runner = CliRunner()
    extract = ["construct", "fcla-latex.tar.gz", "--extract-only", "--run-dir", "runs/fcla"]
    report = ["report", "runs/fcla", "--json"]
    assert extract in block_commands() and report in block_commands()
    done = runner.invoke(app, [*extract, "--quiet"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, report)
    assert done.exit_code == 0, done.output
    figures = json.loads(done.stdout)
    assert figures["kind"] == "construct" and figures["exercises"] == 506
    assert "**506 exercises**" in README


@needs_shared
def test_the_gted_table_is_what_its_command_prints() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_gted import TABLE_HEAD, agreement_rows
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert "python bench/bench_gted.py --table" in README
    for row in [*TABLE_HEAD.splitlines(), *agreement_rows(DATA)]:
        assert row in README, f"README's GTED table lacks the row {row!r}"
