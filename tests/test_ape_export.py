"""`formalbench ape export` and `ape eval` on an export (issue 30, item 4), `ape eval
--limit/--retry-errors`, and the text report's failures by reason (item 2).

The fast tests seed a run over a small real git repository (real git, real SQLite, the CLI
through CliRunner, the OpenAI stand-in over HTTP); no answer reaches coqc there. The end to
end test with coqc (an export evaluates as its run does) is in test_ape_export_loop.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.llm.replay import ScriptedModel
from formalbench.pipelines.ape.evaluate import evaluate_run
from formalbench.pipelines.ape.export import ExportedTask, export_run
from formalbench.pipelines.ape.filters import counts, diff_lines
from formalbench.pipelines.ape.imported import import_export, read_export
from formalbench.pipelines.ape.task import ApeTask, MineConfig
from formalbench.store.ape import ApeStore
from tests.standins.openai_server import Reply, StandinServer

runner = CliRunner()
FILE = "theories/A.v"
INSTRUCTION = "- Task 1: Add b\n\nAdd the lemma b."
VALIDATED = {
    "kept": True,
    "after": {
        "status": "ok",
        "errors": [],
        "warnings": [],
        "complete": True,
        "version": "coq 8.16.1",
    },
}
DROPPED = {
    "kept": False,
    "reason": "after does not compile cleanly",
    "detail": "Error: The reference nat_ind' was not found",
}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return done.stdout.decode().strip()


def _repository(tmp_path: Path) -> tuple[Path, list[tuple[str, str, str, str]]]:
    """A Coq project with three commits after the first: (sha, parent, before, after) each,
    newest first."""
    repo = tmp_path / "repo"
    (repo / "theories").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "a@b.c")
    _git(repo, "config", "user.name", "a")
    (repo / "_CoqProject").write_text("-R theories Demo\n")
    text = "Lemma a : True.\nProof. exact I. Qed.\n"
    (repo / FILE).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "feat: a")
    changes = []
    for name in ("b", "c", "d"):
        before = text
        text += f"\nLemma {name} : 1 = 1.\nProof. reflexivity. Qed.\n"
        (repo / FILE).write_text(text)
        _git(repo, "commit", "-qam", f"feat: {name}")
        changes.append(
            (_git(repo, "rev-parse", "HEAD"), _git(repo, "rev-parse", "HEAD^"), before, text)
        )
    return repo, changes[::-1]


def _seeded_run(tmp_path: Path, validate: bool = True) -> tuple[Path, Path, list[ApeTask]]:
    """A mined run of `_repository`: three tasks, the newest two validated (the third failed
    validation), the newest two with a kept instruction."""
    repo, changes = _repository(tmp_path)
    run = tmp_path / "run"
    tasks = []
    with ApeStore(run / "ape.sqlite") as store:
        store.set_meta("config", MineConfig().model_dump())
        store.set_meta("source", str(repo))
        store.set_meta("language", "coq")
        for position, (sha, parent, before, after) in enumerate(changes):
            gold = diff_lines(before, after, FILE)
            task = ApeTask(
                id=f"{sha[:12]}:{FILE}:0",
                commit_hash=sha,
                parent_commit_hash=parent,
                date="2024-01-01",
                message="feat: lemma",
                type="feat",
                toolchain_content='coq (>= "8.16")',
                language="coq",
                change_type="modified",
                file_path_before=FILE,
                file_path_after=FILE,
                content_before=before,
                content_after=after,
                gold_diff="\n".join(gold) + "\n",
                counts=counts(gold),
                filtered_gold_diff="\n".join(gold) + "\n",
                filtered=counts(gold),
            )
            store.put_commit(sha, position, "feat", [(task.id, None, task.model_dump())])
            tasks.append(task)
        if validate:
            for task, result in zip(tasks, (VALIDATED, VALIDATED, DROPPED), strict=True):
                store.put_result(task.id, "validate", result)
        for task in tasks[:2]:
            labels = {"kept": True, "instruction": INSTRUCTION, "category": "Feature"}
            store.put_result(task.id, "synthesize", {**labels, "difficulty": "Medium"})
    return run, repo, tasks


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_writes_the_validated_tasks_and_a_manifest(tmp_path: Path) -> None:
    run, repo, tasks = _seeded_run(tmp_path)
    out = tmp_path / "export"
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "2 task(s) of 2 commit(s)" in res.stdout
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "tasks.jsonl"]
    records = _lines(out / "tasks.jsonl")
    assert [r["id"] for r in records] == [tasks[0].id, tasks[1].id]  # not the dropped one
    first = records[0]
    assert first["repository"] == str(repo) and first["commit_hash"] == tasks[0].commit_hash
    assert first["file_path_after"] == FILE and first["content_before"] == tasks[0].content_before
    assert first["gold_diff"] == tasks[0].gold_diff and first["instruction"] == INSTRUCTION
    assert first["validation"] == VALIDATED and first["toolchain"] == "coq 8.16.1"
    assert first["synthesis"]["category"] == "Feature" and first["snapshots"] == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "formalbench-ape-export" and manifest["validated"]
    assert manifest["counts"]["tasks"] == 2 and manifest["counts"]["validation_checked"] == 3
    assert manifest["counts"]["benchmark_tasks"] == 2 and manifest["counts"]["kept_by_filters"] == 3
    assert manifest["toolchain"] == {
        "declared": ['coq (>= "8.16")'],
        "validated_with": ["coq 8.16.1"],
    }
    from formalbench import __version__

    assert manifest["formalbench"] == __version__
    assert manifest["source_run"] == str(run.resolve())
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(tmp_path / "e2"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == manifest
    # every line reads back as the documented record
    assert all(
        ExportedTask.model_validate(r).mined() == t.model_dump()
        for r, t in zip(records, tasks, strict=False)
    )


def test_export_refuses_to_overwrite_and_replaces_with_force(tmp_path: Path) -> None:
    run, _, _ = _seeded_run(tmp_path)
    out = tmp_path / "export"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(out)])
    assert res.exit_code != 0 and "not empty; give --force" in res.stderr
    assert res.stderr.count("\n") == 1 and (out / "mine.txt").read_text() == "keep me"
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(out), "--force"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "tasks.jsonl"]
    for target in (run, tmp_path):  # --force would delete the run
        res = runner.invoke(app, ["ape", "export", str(run), "--out", str(target), "--force"])
        assert res.exit_code != 0 and "is the run folder or holds it" in res.stderr
    assert (run / "ape.sqlite").is_file()
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(run / "ape.sqlite")])
    assert res.exit_code != 0 and "is not a folder" in res.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_a_failed_export_leaves_nothing_behind(tmp_path: Path, monkeypatch) -> None:
    run, _, _ = _seeded_run(tmp_path)
    from formalbench.pipelines.ape import export as module

    def broken(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "_write_bundle", broken)
    with pytest.raises(KeyboardInterrupt):
        export_run(run, tmp_path / "export", bundle=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo", "run"]


def test_a_bad_run_gets_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "ape.sqlite").write_bytes(b"not a database at all" * 100)
    for folder, said in ((empty, "not an ape run"), (broken, "SQLite")):
        res = runner.invoke(app, ["ape", "export", str(folder), "--out", str(tmp_path / "o")])
        assert res.exit_code != 0 and said in res.stderr, res.output
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.output
    run, _, _ = _seeded_run(tmp_path, validate=False)
    res = runner.invoke(app, ["ape", "export", str(run), "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and "no task has been validated" in res.stderr
    res = runner.invoke(
        app, ["ape", "export", str(run), "--out", str(tmp_path / "o"), "--unvalidated"]
    )
    assert res.exit_code == 0 and "not validated" in res.stderr
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["validated"] is False
    assert len(_lines(tmp_path / "o" / "tasks.jsonl")) == 3
    with ApeStore(run / "ape.sqlite") as store:  # a record that is not an APE task
        store.conn.execute("UPDATE ape_tasks SET task = '{\"id\": 3}' WHERE position = 0")
    res = runner.invoke(
        app, ["ape", "export", str(run), "--out", str(tmp_path / "p"), "--unvalidated"]
    )
    assert res.exit_code != 0 and "not an APE task record" in res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "p").exists()


def test_an_export_imports_as_the_run_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, repo, tasks = _seeded_run(tmp_path)
    out = tmp_path / "export"
    export_run(run, out, bundle=True)
    assert (out / "repository.bundle").is_file()
    _git(tmp_path, "init", "-q", "elsewhere")  # the repository is gone; the bundle serves
    subprocess.run(["rm", "-rf", str(repo)], check=True)
    again = tmp_path / "again"
    import_export(read_export(out), again)
    with ApeStore(run / "ape.sqlite") as a, ApeStore(again / "ape.sqlite") as b:
        assert list(b.kept_tasks()) == list(a.kept_tasks())[:2]
        assert b.results("validate") == {t.id: VALIDATED for t in tasks[:2]}
        assert b.results("synthesize") == a.results("synthesize")
        assert b.get_meta("export")["digest"]
    import_export(read_export(out / "tasks.jsonl"), again)  # the same tasks: kept as they are
    report = runner.invoke(app, ["report", str(again)])
    assert report.exit_code == 0 and "tasks imported from" in report.stdout
    other = tmp_path / "other"
    export_run(run, other, unvalidated=False, repository="https://example.org/demo.git")
    assert _lines(other / "tasks.jsonl")[0]["repository"] == "https://example.org/demo.git"
    res = runner.invoke(
        app,
        [
            "ape",
            "eval",
            str(other),
            "--run-dir",
            str(again),
            "--model",
            "x",
            "--repo",
            str(out / "repository.bundle"),
        ],
    )
    assert res.exit_code != 0 and "holds another export" in res.stderr
    res = runner.invoke(app, ["ape", "eval", str(out), "--run-dir", str(run), "--model", "x"])
    assert res.exit_code != 0 and "holds a mined run" in res.stderr
    res = runner.invoke(
        app, ["ape", "eval", str(other), "--run-dir", str(tmp_path / "r3"), "--model", "x"]
    )
    assert res.exit_code != 0 and "give a clone or bundle of it with --repo" in res.stderr
    # no --run-dir: the default rule of every command (issue 30 item 11), not a refusal
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["ape", "eval", str(out), "--model", "x"])
    (made,) = (tmp_path / "runs").iterdir()
    assert made.name.startswith("ape-eval-export-") and (made / "ape.sqlite").is_file()
    assert "give --run-dir" not in res.stderr
    res = runner.invoke(
        app,
        [
            "ape",
            "eval",
            str(other),
            "--run-dir",
            str(tmp_path / "r4"),
            "--model",
            "x",
            "--repo",
            str(tmp_path / "elsewhere"),
        ],
    )
    assert res.exit_code != 0 and "does not hold commit" in res.stderr


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: "{not json", "not JSON"),
        (lambda r: json.dumps({**r, "extra": 1}), "extra: Extra inputs are not permitted"),
        (
            lambda r: json.dumps({**r, "file_path_after": "../../etc/passwd"}),
            "inside the repository",
        ),
        (lambda r: json.dumps({**r, "file_path_after": "/etc/passwd"}), "inside the repository"),
        (lambda r: json.dumps({**r, "commit_hash": "HEAD~3"}), "full commit hash"),
        (lambda r: json.dumps({**r, "synthesis": {"kept": True}}), "needs its instruction"),
        (lambda r: json.dumps({**r, "counts": {"bogus": 1}}), "counts.bogus"),
        (lambda r: json.dumps([r]), "a JSON object"),
    ],
)
def test_a_hostile_export_line_is_one_line(tmp_path: Path, change, said) -> None:
    run, _, _ = _seeded_run(tmp_path)
    out = tmp_path / "export"
    export_run(run, out)
    records = _lines(out / "tasks.jsonl")
    (out / "tasks.jsonl").write_text(json.dumps(records[0]) + "\n" + change(records[1]) + "\n")
    res = runner.invoke(
        app, ["ape", "eval", str(out), "--run-dir", str(tmp_path / "r"), "--model", "x"]
    )
    assert res.exit_code != 0 and "tasks.jsonl:2: " in res.stderr and said in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and not (tmp_path / "r" / "ape.sqlite").exists()


def test_a_duplicate_id_is_refused(tmp_path: Path) -> None:
    run, _, _ = _seeded_run(tmp_path)
    export_run(run, tmp_path / "export")
    tasks_file = tmp_path / "export" / "tasks.jsonl"
    first = tasks_file.read_text().splitlines()[0]
    tasks_file.write_text(first + "\n" + first + "\n")
    res = runner.invoke(
        app, ["ape", "eval", str(tasks_file), "--run-dir", str(tmp_path / "r"), "--model", "x"]
    )
    assert (
        res.exit_code != 0
        and "tasks.jsonl:2: task id" in res.stderr
        and "appears twice" in res.stderr
    )


def test_snapshot_ids_are_exported_where_the_snapshots_exist(tmp_path: Path) -> None:
    from formalbench.store.snapshots import SnapshotStore

    run, _, tasks = _seeded_run(tmp_path)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "A.vo").write_bytes(b"compiled")
    sha = tasks[0].commit_hash
    kept, gone = f"coq-{sha}-aaaaaaaaaaaa", f"coq-{sha}-bbbbbbbbbbbb"
    SnapshotStore(run / "snapshots").put(tree, kept)
    (run / "trees").mkdir()
    index = [
        {"rev": sha, "file": FILE, "snapshot": kept, "built_by": "host 8.16.1"},
        {"rev": sha, "file": FILE, "snapshot": gone, "built_by": "host 8.16.1"},  # not stored
        {"rev": sha, "file": "theories/B.v", "snapshot": kept, "built_by": "x"},  # another file
    ]
    (run / "trees" / "index.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in index) + "{bad\n"
    )
    export_run(run, tmp_path / "export")
    records = _lines(tmp_path / "export" / "tasks.jsonl")
    assert records[0]["snapshots"] == [{"revision": "after", "id": kept, "built_by": "host 8.16.1"}]
    assert records[1]["snapshots"] == []
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text())
    assert manifest["counts"]["with_snapshots"] == 1


def test_report_shows_validation_failures_by_reason(tmp_path: Path) -> None:
    run, _, _ = _seeded_run(tmp_path)
    res = runner.invoke(app, ["report", str(run)])
    assert res.exit_code == 0, res.output
    assert "not kept, by reason" in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if "after does not compile cleanly" in ln)
    assert "validation" in line and line.rstrip(" │|").split()[-1] == "1"


def test_eval_limit_and_retry_errors(tmp_path: Path, monkeypatch) -> None:
    """A failed model call is an error sample: kept on a plain rerun (no new call, a line
    naming `--retry-errors`), redone by `--retry-errors`; `--limit 1` takes the newest task."""
    run, _, tasks = _seeded_run(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer() as server:
        server.responder = lambda body: ["I cannot write diffs today."]
        spec = f"openai:standin-model@{server.base_url}"
        server.script(Reply(status=400), Reply(status=400))
        command = ["ape", "eval", str(run), "--model", spec, "--samples", "2", "--limit", "1"]
        res = runner.invoke(app, command)
        assert res.exit_code == 1, res.output
        assert "1 task(s) ended in an error; `--retry-errors` redoes them" in res.stderr
        assert "2 sample(s): the model call failed" in res.stderr
        assert "evaluation failed for every task (1): the model call failed" in res.stderr
        with ApeStore(run / "ape.sqlite") as store:
            assert list(store.results("eval")) == [tasks[0].id]
        calls = server.count()
        res = runner.invoke(app, command)
        assert res.exit_code == 1 and server.count() == calls  # the errors are kept
        res = runner.invoke(app, [*command, "--retry-errors"])
        assert res.exit_code == 0, res.output
        assert server.count() == calls + 2 and "ended in an error" not in res.stderr
    with ApeStore(run / "ape.sqlite") as store:
        samples = store.get_result(tasks[0].id, "eval")["samples"]
    assert [s.get("error") for s in samples] == [None, None]
    assert not any(s["applied"] for s in samples)  # a reply with no diff is a verdict
    report = json.loads(runner.invoke(app, ["report", str(run), "--json"]).stdout)
    assert report["answer_summary"]["errors"] == {}


def test_eval_errors_are_counted_by_the_report(tmp_path: Path) -> None:
    run, _, tasks = _seeded_run(tmp_path)

    async def failing(*_args: object, **_kwargs: object) -> list:
        from formalbench.llm.base import ModelCallError

        raise ModelCallError("the provider is down")

    model = ScriptedModel(["unused"])
    model.generate = failing  # type: ignore[method-assign]
    outcome = evaluate_run(run, model, 3, limit=2)
    assert outcome.tasks == 2 and outcome.error_tasks == 2
    assert outcome.errors == {"the model call failed": 6}
    assert outcome.single_reason() == "the model call failed"
    res = runner.invoke(app, ["report", str(run)])
    line = next(ln for ln in res.stdout.splitlines() if "the model call failed" in ln)
    assert "evaluation" in line and line.rstrip(" │|").split()[-1] == "6"


def test_an_export_says_when_it_was_validated_with_another_coq(tmp_path: Path, monkeypatch) -> None:
    from formalbench.pipelines.ape.imported import toolchain_drift
    from formalbench.toolchains.toolchain import ENV_VAR, resolve

    run, _, _ = _seeded_run(tmp_path)
    out = tmp_path / "export"
    export_run(run, out)
    res = runner.invoke(app, ["ape", "eval", str(out), "--run-dir", str(out), "--model", "x"])
    assert res.exit_code != 0 and "is the export's folder" in res.stderr
    assert not (out / "ape.sqlite").exists()
    again = tmp_path / "again"
    import_export(read_export(out), again)
    monkeypatch.setenv(ENV_VAR, "host")
    host = resolve().version()
    with ApeStore(again / "ape.sqlite") as store:
        for tid, record in store.results("validate").items():
            store.put_result(tid, "validate", {**record, "after": {"version": f"coq {host}"}})
    assert toolchain_drift(again) is None
    with ApeStore(again / "ape.sqlite") as store:
        for tid, record in store.results("validate").items():
            store.put_result(tid, "validate", {**record, "after": {"version": "coq 8.11.2"}})
    said = toolchain_drift(again)
    assert said is not None and "validated with coq 8.11.2" in said and f"coq {host}" in said
