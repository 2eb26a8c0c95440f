"""Every command as a new user meets it (issue 21): shared option checks in one layer
(`cli.options`), one wording for a missing file, help that fits 80 columns in a pipe,
`--version`, the report of an APE run as tables, and one default proof assistant rule.

The walk over every command is what keeps the next option honest: a `--workers`, `--timeout`,
`--limit`... declared without a check of `cli.options` fails here, whoever adds it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
from rich.console import Console
from typer.testing import CliRunner

from formalbench.cli import options
from formalbench.cli.main import app
from tests.shared_data import DATA, needs_shared


def all_commands() -> list[tuple[str, Any]]:
    """(`formalbench ape mine`, click command) for every leaf command."""
    group = typer.main.get_command(app)
    ctx = group.make_context("formalbench", ["--help"], resilient_parsing=True)
    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), f"{path} {name}")
        else:
            found.append((path.strip(), command))

    walk(group, "")
    return found


def checked_by(param: Any) -> str | None:
    return getattr(param.callback, "formalbench_check", None) if param.callback else None


def test_every_shared_option_of_every_command_is_checked_by_cli_options() -> None:
    commands = all_commands()
    assert len(commands) >= 20
    unchecked = []
    for path, command in commands:
        for param in command.params:
            kind = options.SHARED.get(param.name or "")
            if kind is not None and checked_by(param) != kind:
                unchecked.append(f"{path} --{param.name}")
    assert not unchecked, f"declare these with a check of cli.options: {unchecked}"


def test_every_number_option_has_a_lower_bound() -> None:
    """A count or a time given as 0 or -2 is refused while parsing, not run with."""
    loose = []
    for path, command in all_commands():
        for param in command.params:
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if annotation not in (int, float) or param.name == "seed":
                continue
            ranged = getattr(param, "min", None) is not None  # typer's `min=` (a click range)
            if not (ranged or checked_by(param)):
                loose.append(f"{path} --{param.name}")
    assert not loose, f"number options without a bound: {loose}"


def one_line(result: Any) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("formalbench: error: "), result.stderr
    assert result.stdout == "", result.stdout
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a.v").write_text("Theorem t : True.\nProof.\nAdmitted.\n")
    (tmp_path / "b.lean").write_text("theorem t : True := by\n  sorry\n")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "folder").mkdir()
    (tmp_path / "not-a-bundle.txt").write_text("hello\n")
    same = "theorem a (x : ℕ) (h : 0 < x) : x ≠ 0 := sorry"
    pairs = [
        {"name": f"p{i}", "label_statement": same, "prediction_statement": same}
        | {"human_equivalent": bool(i % 2)}
        for i in range(4)
    ]
    (tmp_path / "pairs.jsonl").write_text("\n".join(json.dumps(p) for p in pairs) + "\n")
    return tmp_path


BAD_INPUT = [
    (["metrics", "gted", "{d}/pairs.jsonl", "--folds", "0"], "--folds 0: must be at least 2"),
    (["metrics", "gted", "{d}/pairs.jsonl", "--folds", "-2"], "--folds -2: must be at least 2"),
    (["metrics", "gted", "{d}/pairs.jsonl", "--folds", "1"], "--folds 1: must be at least 2"),
    (["metrics", "gted", "{d}/pairs.jsonl", "--folds", "1000"], "more folds than the 4 labelled"),
    (["stats", "example-coq", "--workers", "0"], "--workers 0: must be at least 1"),
    (["stats", "example-coq", "--workers", "-2"], "--workers -2: must be at least 1"),
    (["stats", "example-coq", "--timeout", "0"], "--timeout 0: must be a positive"),
    (["compare", "{d}/a.v", "{d}/a.v", "--timeout", "-5"], "--timeout -5: must be a positive"),
    (["ape", "mine", "{d}/folder", "--run-dir", "{d}/r", "--validate-limit", "-1"], "at least 1"),
    (["ape", "mine", "{d}/folder", "--run-dir", "{d}/r"], "not a git repository"),
    (["ape", "mine", "{d}/not-a-bundle.txt", "--run-dir", "{d}/r"], "not a git bundle"),
    (["check", "{d}/a.v", "--against", "{d}/b.lean"], "mixed proof assistants"),
    (["check", "--pairs", "{d}/empty.jsonl"], "no pair in it"),
    (["eval", "example-coq", "--sample-tasks", "0"], "--sample-tasks 0: must be at least 1"),
    (["formalize", "example", "--model", "replay:x", "--concurrency", "0"], "at least 1"),
    (["construct", "x.jsonl", "--extract-only", "--timeout", "nan"], "--timeout nan"),
    (["review", "{d}/folder", "--port", "70000"], "--port 70000: not a port number"),
]


@pytest.mark.parametrize(("args", "words"), BAD_INPUT, ids=lambda a: " ".join(a)[:48])
def test_bad_input_is_one_line_and_exit_2(files: Path, args: list[str], words: str) -> None:
    line = one_line(CliRunner().invoke(app, [a.format(d=files) for a in args]))
    assert words in line and "Traceback" not in line


@pytest.mark.parametrize(
    "args",
    [
        ["check", "{d}/missing.v", "--against", "{d}/a.v"],
        ["compare", "{d}/missing.v", "{d}/a.v"],
        ["metrics", "gted", "{d}/missing.jsonl"],
        ["ape", "apply", "{d}/missing.diff", "--to", "{d}/a.v", "--out", "{d}/o.v"],
        ["eval", "example-coq", "--tactics-file", "{d}/missing.txt"],
    ],
    ids=lambda a: a[0],
)
def test_a_missing_file_is_said_the_same_way_by_every_command(files: Path, args: list[str]) -> None:
    line = one_line(CliRunner().invoke(app, [a.format(d=files) for a in args]))
    assert re.search(r" '[^']*missing\.\w+': no such file$", line), line


def test_version() -> None:
    done = CliRunner().invoke(app, ["--version"])
    assert done.exit_code == 0 and re.fullmatch(r"formalbench \d+\.\d+\S*\n", done.stdout)


def test_help_of_every_command_fits_80_columns_and_names_options_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    runner = CliRunner()
    for path, command in all_commands():
        done = runner.invoke(app, [*path.split(), "--help"])
        assert done.exit_code == 0, (path, done.output)
        text = done.stdout
        assert "…" not in text and "╭" not in text, (path, text)
        assert max(len(line) for line in text.splitlines()) <= 80, (path, text)
        assert re.search(r"^  --help\s+Show this message and exit\.$", text, re.M), (path, text)
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--") and not getattr(param, "hidden", False):  # old names
                    assert opt in text, (path, opt)


def test_help_in_a_pipe_is_plain_text(tmp_path: Path) -> None:
    """The console script, as a user runs it in a pipe at 80 columns: option names whole, the
    description wrapped as one paragraph (not the source's line breaks)."""
    from tests.test_cli_main import console_script

    env = {"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": _pythonpath()}
    done = subprocess.run(
        [console_script(), "stats", "--help"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "--lean-project" in done.stdout and "<bool>" not in done.stdout
    head = done.stdout.split("Arguments:")[0]
    paragraph = [line for line in head.splitlines()[2:] if line.strip()]
    assert all(len(line) > 60 for line in paragraph[:-1]), paragraph  # filled, not ragged


def _pythonpath() -> str:
    import formalbench

    return str(Path(formalbench.__file__).resolve().parents[1])


def test_the_formalize_tables_keep_model_names_whole_at_80_columns() -> None:
    from formalbench.cli.formalize import print_formalize_report
    from formalbench.pipelines.formalize.metrics import FormalizeMetrics, ModelMetrics

    names = ["openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5"]
    metrics = FormalizeMetrics(problems=2, models=[ModelMetrics(model=n) for n in names])
    console = Console(width=80, record=True, force_terminal=False)
    print_formalize_report(metrics, console)
    text = console.export_text()
    assert all(text.count(name) == 2 for name in names) and "…" not in text


def test_an_ape_report_prints_tables_and_json_only_when_asked(tmp_path: Path) -> None:
    from formalbench.reporting.ape import print_ape_report

    figures = {
        "kind": "ape",
        "source": "/data/histories/topology.bundle",
        "language": "coq",
        "commits": 30,
        "candidates": 111,
        "funnel": {"commit_type": 59, "input_tokens": 15},
        "tasks": 15,
        "validated": 4,
        "validation_checked": 5,
        "synthesized": 4,
        "benchmark_tasks": 3,
        "samples": 4,
        "pass_at_k": {"tasks": 3, "compile_pass@1": 0.5, "judge_pass@1": 0.25},
        "by_category": {"Feature": {"tasks": 3, "compile_pass@1": 0.5, "judge_pass@1": 0.25}},
    }
    figures["pass_at_k"]["semantic_drop@1"] = 0.5
    console = Console(width=80, record=True, force_terminal=False)
    print_ape_report(figures, console)
    text = console.export_text()
    assert "4 of 5 checked" in text and "3 of 4 synthesized" in text
    assert "50.0% / 25.0%" in text and "Feature" in text and "{" not in text


def test_report_of_an_ape_run_through_the_command(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "a@b.c")
    git("config", "user.name", "a")
    (repo / "A.v").write_text("Lemma a : True.\nProof. exact I. Qed.\n")
    (repo / "_CoqProject").write_text("-R . Demo\nA.v\n")
    git("add", ".")
    git("commit", "-qm", "feat: a")
    (repo / "A.v").write_text("Lemma a : True.\nProof. exact I. Qed.\nLemma b : 1 = 1.\nProof.\n")
    git("commit", "-qam", "feat: b")
    runner = CliRunner()
    run = tmp_path / "run"
    assert runner.invoke(app, ["ape", "mine", str(repo), "--run-dir", str(run)]).exit_code == 0
    tables = runner.invoke(app, ["report", str(run)])
    assert tables.exit_code == 0 and "mining funnel" in tables.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(tables.stdout)
    as_json = runner.invoke(app, ["report", str(run), "--json"])
    assert json.loads(as_json.stdout)["kind"] == "ape"


def test_one_default_proof_assistant_rule() -> None:
    """Formal input names its assistant; informal input means Coq (docs/decisions.md)."""
    defaults = {path: {p.name: p.default for p in c.params} for path, c in all_commands()}
    assert defaults["formalize"]["backend"] == "coq"
    assert defaults["construct"]["backend"] == "coq"
    for path in ("check", "compare", "eval", "stats"):
        assert defaults[path]["backend"] is None, path  # from the suffix / the tasks


def test_stats_on_lean_tasks_takes_lean_and_says_what_to_do(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no Lean here (nor anywhere on this PATH)
    monkeypatch.setenv("HOME", "/nonexistent")
    line = one_line(CliRunner().invoke(app, ["stats", "example-lean", "--no-cache"]))
    assert "no coq task" not in line and "repl_command" not in line
    assert "--lean-project" in line


def test_no_empty_line_on_stdout_before_an_error(tmp_path: Path) -> None:
    for args in (
        ["eval", str(tmp_path / "nothing.jsonl"), "--run-dir", str(tmp_path / "r")],
        ["construct", str(tmp_path / "nothing"), "--extract-only", "--run-dir", str(tmp_path)],
    ):
        one_line(CliRunner().invoke(app, args))


def test_snapshot_text_output_is_readable(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_text("x")
    args = ["snapshot", "put", str(tree), "--store", str(tmp_path / "s"), "--id", "c1"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["skipped"] == "none" and lines["created"] == "yes"
    assert re.fullmatch(r"\d+(\.\d{1,3})?", lines["seconds"]), lines["seconds"]


def test_the_clean_prompt_names_an_exercise_once() -> None:
    from formalbench.llm.prompts import load_prompt

    messages = load_prompt("construct_clean").render(text="Solve it.", source_idx="Exercise C10")
    text = "\n".join(m.content for m in messages)
    assert "Exercise C10" in text and "Exercise Exercise" not in text


def test_the_category_chart_keeps_the_table_order() -> None:
    from formalbench.metrics.summary import CategoryRow
    from formalbench.reporting.plots import _MAX_BARS, _chart_rows

    def row(value: str, tasks: int) -> CategoryRow:
        return CategoryRow(value=value, tasks=tasks, evaluated=tasks, solved=0, pass_at_k={})

    rows = [row("b", 1), row("a", 5), row("c", 3)]
    assert [r.value for r in _chart_rows(rows)] == ["b", "a", "c"]
    many = [row(f"v{i:02d}", 1 if i % 2 else 10) for i in range(2 * _MAX_BARS)]
    kept = _chart_rows(many)
    assert len(kept) == _MAX_BARS and all(r.tasks == 10 for r in kept)
    assert kept == sorted(kept, key=lambda r: r.value)  # still the table's order


@needs_shared
def test_folds_up_to_the_labelled_pairs_give_the_figure() -> None:
    args = ["metrics", "gted", str(DATA / "gted-minif2f.jsonl"), "--json", "--folds", "10"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["summary"]["cross_validated"]["folds"] == 10


def test_a_file_with_fewer_labelled_pairs_than_default_folds_says_why(files: Path) -> None:
    done = CliRunner().invoke(app, ["metrics", "gted", str(files / "pairs.jsonl")])
    assert done.exit_code == 0, done.output
    assert "cross_validated: not computed (4 labelled, scored pairs" in done.stdout
    as_json = CliRunner().invoke(app, ["metrics", "gted", str(files / "pairs.jsonl"), "--json"])
    assert "fewer than 5 folds" in json.loads(as_json.stdout)["summary"]["cross_validated_skipped"]


@pytest.mark.coq
def test_quiet_still_names_skipped_lines_and_the_report_keeps_them(tmp_path: Path) -> None:
    from tests.test_evaluate import EASY, write_dataset

    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    with data.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "broken"\n')
    run = tmp_path / "run"
    args = ["eval", str(data), "--skip-bad-lines", "--quiet", "--run-dir", str(run)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert f"skipped {data}:2" in done.stderr
    report = CliRunner().invoke(app, ["report", str(run), "--json"])
    summary = json.loads(report.stdout)
    assert summary["run_info"]["skipped_lines"][0].startswith(f"{data}:2")
    assert any("1 dataset line(s) skipped" in w for w in summary["warnings"])
