"""A user's Coq project through `check`, `eval` and `stats`, first unbuilt, then built
(issue 30 items 6, 7, 8, 10 and its Measure paragraph).

A small real project (`_CoqProject` with `-R theories BT`, two files, one requiring the
other) is written in a temporary folder and built, when a test needs it built, with the
suite's coqc (`tests/suite_coq.coqc`). Each command is run as a user types it:

- unbuilt, `check --coq-project` says the project is not built, names the missing `.vo`
  and the coqc to build it with, and does not suggest `--coq-project` (item 6);
- unbuilt, `eval` records the tasks as not attempted for their environment and says so
  (not "already done"); after the build the same command resumes the same run and
  attempts them (item 7); `stats` reads the tasks' `coq_project` (item 8);
- a second `eval` with another `--pattern` and no `--run-dir` gets its own folder (item 10).
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.backends.coq_project import read_coq_project, without_build
from formalbench.cli.main import app
from formalbench.core.records import ErrorKind, Language, Task
from formalbench.pipelines.run_config import EvalConfig, Selection, default_eval_dir
from formalbench.pipelines.run_dir import default_run_dir
from formalbench.store.runs import RunStore
from formalbench.toolchains.toolchain import resolve
from tests.suite_coq import coqc, rocq9

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
runner = CliRunner()
HEADER = "From BT Require Import Size.\n"
STATEMENTS = {
    "leaf": "size Leaf = 0",
    "node": "size (Node Leaf Leaf) = 1",
    "two": "size (Node (Node Leaf Leaf) Leaf) = 2",
}


def _write_project(root: Path) -> Path:
    """The project's sources, not built: `BT.BTree` and `BT.Size`, which requires it."""
    (root / "theories").mkdir(parents=True)
    (root / "_CoqProject").write_text(
        "-R theories BT\ntheories/BTree.v\ntheories/Size.v\n", encoding="utf-8"
    )
    (root / "theories" / "BTree.v").write_text(
        "Inductive tree := Leaf | Node (l r : tree).\n", encoding="utf-8"
    )
    (root / "theories" / "Size.v").write_text(
        "From BT Require Export BTree.\n"
        "Fixpoint size (t : tree) : nat :=\n"
        "  match t with Leaf => 0 | Node l r => S (size l + size r) end.\n",
        encoding="utf-8",
    )
    return root


def _build(root: Path) -> None:
    """What the user's `make` does, with the suite's coqc."""
    for name in ("BTree", "Size"):
        coqc(["-q", "-R", "theories", "BT", f"theories/{name}.v"], root)


def _dataset(folder: Path) -> Path:
    """Three tasks naming the project beside the dataset in their `coq_project` field."""
    lines = [
        Task(
            id=task_id,
            language=Language.coq,
            header=HEADER,
            formal=f"Theorem {task_id} : {statement}.\nProof.\nAdmitted.\n",
            coq_project="proj",
        ).model_dump_json()
        for task_id, statement in STATEMENTS.items()
    ]
    path = folder / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _pair(folder: Path) -> tuple[str, str]:
    candidate, original = folder / "cand.v", folder / "orig.v"
    statement = f"{HEADER}Theorem leaf : {STATEMENTS['leaf']}.\nProof.\n"
    original.write_text(statement + "Admitted.\n", encoding="utf-8")
    candidate.write_text(statement + "reflexivity.\nQed.\n", encoding="utf-8")
    return str(candidate), str(original)


def _finding(output: str) -> str:
    verdict = json.loads(output)
    assert verdict["reasons"] == ["environment"], verdict
    return " ".join(verdict["findings"][0]["message"].split())


@needs_coq
def test_check_on_an_unbuilt_project_says_what_is_missing(tmp_path: Path) -> None:
    root = _write_project(tmp_path / "proj")
    candidate, original = _pair(tmp_path)
    args = ["check", candidate, "--against", original, "--coq-project", str(root), "--json"]
    done = runner.invoke(app, args)
    assert done.exit_code == 1, done.output
    said = _finding(done.output)
    assert said.startswith(
        f"the project is not built: no Size.vo under {root / 'theories'} (its Size.v is there)"
    )
    chain = resolve()
    assert f"Coq {chain.version()}" in said  # the coqc to build it with
    assert chain.is_host or f"formalbench toolchain run {chain.name} --in {root}" in said
    assert "--coq-project" not in said  # it was given: suggesting it again is no help
    assert "(coqc: " in said  # coqc's own words follow the diagnosis


@needs_coq
def test_the_advised_build_command_builds_the_project(tmp_path: Path) -> None:
    """The command the line names, run as written, builds the project; check then passes."""
    root = _write_project(tmp_path / "proj")
    candidate, original = _pair(tmp_path)
    args = ["check", candidate, "--against", original, "--coq-project", str(root), "--json"]
    said = _finding(runner.invoke(app, args).output)
    chain = resolve()
    if chain.is_host:
        pytest.skip("the host's advice is a shell line (cd DIR && make), not a formalbench one")
    advised = said.split(": formalbench ", 1)[1].split(" (coqc: ", 1)[0]
    words = shlex.split(advised)
    assert words[:2] == ["toolchain", "run"]
    built = runner.invoke(app, words)
    assert built.exit_code == 0, built.output
    assert (root / "theories" / "Size.vo").is_file()
    done = runner.invoke(app, args)
    assert done.exit_code == 0 and json.loads(done.output)["passed"] is True, done.output


@needs_coq
def test_a_library_the_project_lacks_is_said_so(tmp_path: Path) -> None:
    root = _write_project(tmp_path / "proj")
    _build(root)
    candidate, original = tmp_path / "c.v", tmp_path / "o.v"
    text = "From BT Require Import Nope.\nTheorem x : 0 = 0.\nProof.\n"
    original.write_text(text + "Admitted.\n", encoding="utf-8")
    candidate.write_text(text + "reflexivity.\nQed.\n", encoding="utf-8")
    args = ["check", str(candidate), "--against", str(original), "--coq-project", str(root)]
    said = _finding(runner.invoke(app, [*args, "--json"]).output)
    assert said.startswith(f"the project {root} has no library BT.Nope (it binds theories as BT)")


@needs_coq
@pytest.mark.skipif(shutil.which("coqc") is None or not rocq9(), reason="needs two Coqs")
def test_a_project_built_by_another_coqc_is_said_so(tmp_path: Path) -> None:
    """Built by the host's 8.16 while the checks run Rocq 9: rebuild, not 'not built'."""
    import subprocess

    root = _write_project(tmp_path / "proj")
    for name in ("BTree", "Size"):
        subprocess.run(
            ["coqc", "-q", "-R", "theories", "BT", f"theories/{name}.v"], cwd=root, check=True
        )
    candidate, original = _pair(tmp_path)
    args = ["check", candidate, "--against", original, "--coq-project", str(root), "--json"]
    said = _finding(runner.invoke(app, args).output)
    assert "was compiled by another coqc or against other libraries; rebuild" in said
    assert "not built" not in said and "--coq-project" not in said


@needs_coq
def test_without_a_project_the_line_suggests_giving_one(tmp_path: Path) -> None:
    candidate, original = _pair(tmp_path)
    said = _finding(
        runner.invoke(app, ["check", candidate, "--against", original, "--json"]).output
    )
    assert "give its Coq project with --coq-project DIR" in said


@needs_coq
def test_a_project_task_through_check_eval_and_stats_unbuilt_then_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Measure journey of issue 30, with default run folders (no --run-dir)."""
    monkeypatch.chdir(tmp_path)
    root = _write_project(tmp_path / "proj")
    data = _dataset(tmp_path)
    cache = ["--no-cache"]
    eval_args = ["eval", str(data), "--tactics", "reflexivity", "--workers", "1"]

    # unbuilt: nothing attempted, and the lines say so and why
    first = runner.invoke(app, eval_args)
    assert first.exit_code == 1, first.output
    out = " ".join(first.output.split())
    assert "0 new attempt(s), 0 already done, 3 not attempted (environment)" in out
    assert "3 task(s) not attempted: environment: the task's original does not compile " in out
    assert f"the project is not built: no Size.vo under {root / 'theories'}" in out
    assert "already done, 3 task(s)" not in out
    (folder,) = (tmp_path / "runs").iterdir()
    assert folder.name.startswith("eval-tasks-")
    stats = runner.invoke(app, ["stats", str(data), *cache])
    assert stats.exit_code == 1, stats.output
    said = " ".join(stats.output.split())
    assert "no task measured (3 skipped): does not compile here: the project is not built" in said

    # built: the same command resumes the same run and attempts the three tasks
    _build(root)
    second = runner.invoke(app, eval_args)
    assert second.exit_code == 0, second.output
    out = " ".join(second.output.split())
    assert "3 sample(s) not attempted before for their environment" in out
    assert "3 new attempt(s), 0 already done, 3 task(s)" in out
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [folder.name]
    with RunStore(folder / "run.sqlite") as store:
        (run,) = store.runs()
        attempts = {a.task_id: a for a in store.attempts(run.id)}
        assert run.versions["backend"] == without_build(run.versions["backend_build"])
        assert run.versions["backend"] != run.versions["backend_build"]  # a project's build
    assert all(a.error is None for a in attempts.values())
    assert {t for t, a in attempts.items() if a.verdict and a.verdict.passed} >= {"leaf", "node"}
    third = runner.invoke(app, eval_args)
    assert "0 new attempt(s), 3 already done" in " ".join(third.output.split())

    stats = runner.invoke(app, ["stats", str(data), *cache, "--json"])
    assert stats.exit_code == 0, stats.output
    assert {t["id"] for t in json.loads(stats.output)["tasks"]} == set(STATEMENTS)
    moved = tmp_path / "elsewhere"
    shutil.copytree(root, moved)  # --coq-project overrides the field, as for check and eval
    shutil.rmtree(root)
    stats = runner.invoke(app, ["stats", str(data), *cache, "--coq-project", str(moved)])
    assert stats.exit_code == 0, stats.output
    assert "3 tasks measured, 0 skipped" in " ".join(stats.output.split())

    # a second eval with another --pattern: its own folder, no refusal
    other = runner.invoke(app, [*eval_args, "--pattern", "leaf", "--coq-project", str(moved)])
    assert other.exit_code == 0, other.output
    assert len(list((tmp_path / "runs").iterdir())) == 2


@needs_coq
def test_an_environment_failure_left_by_an_old_run_is_retried_and_counted(
    tmp_path: Path,
) -> None:
    """Through the pipeline: the rerun forgets the environment attempts, not the others."""
    from formalbench.pipelines.evaluate import run_evaluation

    root = _write_project(tmp_path / "proj")
    data = _dataset(tmp_path)
    config = EvalConfig(dataset=str(data), workers=1, tactics=["reflexivity"])
    first = run_evaluation(config, tmp_path / "run")
    assert (first.new_attempts, first.skipped_attempts, first.not_attempted) == (0, 0, 3)
    assert first.failed is not None and first.failed.startswith("3 task(s) not attempted")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        kinds = {a.error.kind for a in store.attempts(store.runs()[0].id) if a.error}
    assert kinds == {ErrorKind.environment}
    _build(root)
    second = run_evaluation(config, tmp_path / "run")
    assert (second.new_attempts, second.skipped_attempts, second.not_attempted) == (3, 0, 0)
    assert second.failed is None


def test_the_build_digest_is_kept_out_of_a_runs_identity(tmp_path: Path) -> None:
    root = _write_project(tmp_path / "proj")
    project = read_coq_project(root)
    version = f"coq 9.2 (x) amber-1 project {root} build {project.digest()} -R {root} BT"
    assert without_build(version) == f"coq 9.2 (x) amber-1 project {root} -R {root} BT"
    assert without_build("coq 9.2 (x) amber-1") == "coq 9.2 (x) amber-1"


def test_the_default_run_folder_is_one_per_command_and_configuration() -> None:
    base = EvalConfig(dataset="data/tasks.jsonl", tactics=["lia"])
    folder = default_eval_dir(base)
    assert folder.parent == Path("runs") and folder.name.startswith("eval-tasks-")
    # what a resume may change keeps the folder: workers, budgets, more samples
    same = base.model_copy(update={"workers": 4, "samples": 8, "run_token_budget": 10})
    assert default_eval_dir(same) == folder
    # what decides the attempts gets another
    for update in (
        {"selection": Selection(pattern="leaf")},
        {"tactics": ["ring"]},
        {"dataset": "data/other.jsonl"},
        {"backend_options": {"coq_project": "/p"}},
    ):
        assert default_eval_dir(base.model_copy(update=update)) != folder, update
    assert default_run_dir("formalize", "p.jsonl", {"a": 1}).name.startswith("formalize-p-")
    assert default_run_dir("eval", "example-coq", {}).name.startswith("eval-example-coq-")
    odd = default_run_dir("ape", "/x/../we ird;name.bundle/", {})
    assert odd.name.startswith("ape-we-ird-name-") and "/" not in odd.name


def test_construct_and_ape_mine_take_the_same_default_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`construct` (keyed by its extraction settings: its stages continue in one folder)
    and `ape mine` (whose --run-dir was required) get runs/<command>-<name>-<hash>."""
    from tests.construct_fixtures import exercises, write_jsonl
    from tests.test_ape_layout import _history

    monkeypatch.chdir(tmp_path)
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    for args in (["--extract-only"], ["--extract-only", "--concurrency", "2"]):
        done = runner.invoke(app, ["construct", str(source), *args])
        assert done.exit_code == 0, done.output
    (folder,) = (tmp_path / "runs").iterdir()
    assert folder.name.startswith("construct-ex-") and (folder / "construct.sqlite").is_file()
    other = runner.invoke(app, ["construct", str(source), "--extract-only", "--limit", "1"])
    assert other.exit_code == 0, other.output
    assert len(list((tmp_path / "runs").iterdir())) == 2

    _history(tmp_path)
    mined = runner.invoke(app, ["ape", "mine", "lib", "--type-source", "inferred", "--json"])
    assert mined.exit_code == 0, mined.output
    run_dir = Path(json.loads(mined.stdout)["run_dir"])
    assert run_dir.parent == Path("runs") and run_dir.name.startswith("ape-lib-")
    assert (tmp_path / run_dir / "ape.sqlite").is_file()


@pytest.mark.parametrize(
    ("flag", "said", "expected"),
    [
        ("-R", "Unable to locate library Deep with prefix BT (while searching for a .vos file).",
         "the project is not built: no Deep.vo under {root}/theories/sub"),
        ("-R", "Cannot find a physical path bound to logical path Deep with prefix BT.",
         "the project is not built: no Deep.vo under {root}/theories/sub"),
        ("-R", "Unable to locate library BT.sub.Deep.",
         "the project is not built: no Deep.vo under {root}/theories/sub"),
        # `From BT Require Deep` finds theories/sub/Deep under -Q too (coqc does)
        ("-Q", "Unable to locate library Deep with prefix BT.",
         "the project is not built: no Deep.vo under {root}/theories/sub"),
        # a short name without `From` is found below -R folders only
        ("-R", "Cannot find a physical path bound to logical path Deep.",
         "the project is not built: no Deep.vo under {root}/theories/sub"),
        ("-Q", "Cannot find a physical path bound to logical path Deep.",
         "the project {root} has no library Deep (it binds theories as BT)"),
        ("-R", "Unable to locate library Gone with prefix BT.",
         "the project {root} has no library BT.Gone"),
        ("-R", "Unable to locate library Deep with prefix Other.",
         "the project {root} has no library Other.Deep"),
    ],
)  # fmt: skip
def test_the_diagnosis_maps_coqcs_name_through_the_load_path(
    tmp_path: Path, flag: str, said: str, expected: str
) -> None:
    """Unit: coqc's wordings (Rocq 9, Coq 8); `From` searches below the prefix's folder under
    `-R` and `-Q`, a short name without `From` below `-R` folders only."""
    from formalbench.backends.coq_environment import environment_message

    root = tmp_path / "p"
    (root / "theories" / "sub").mkdir(parents=True)
    (root / "theories" / "sub" / "Deep.v").write_text("Definition d := 0.\n", encoding="utf-8")
    (root / "_CoqProject").write_text(f"{flag} theories BT\n", encoding="utf-8")
    line = environment_message(said, read_coq_project(root), resolve())
    assert line.startswith(expected.format(root=root.resolve())), line
    assert line.endswith(f"(coqc: {said})") and "--coq-project" not in line
