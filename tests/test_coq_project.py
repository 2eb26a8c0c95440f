"""Coq projects (`--coq-project DIR`, the task field `coq_project`; backends/coq_project.py).

A tiny real project is built in a temporary folder with the real coqc: a task that
`Require`s its module checks with the project, fails as `environment` without it, and the
project's files are never changed. Malformed `_CoqProject` files are one line and exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.backends.coq_project import read_coq_project
from formalbench.backends.sandbox import isolation, run_limited
from formalbench.cli.main import app
from formalbench.core.errors import InputError
from formalbench.core.records import ErrorKind, Language, Task
from formalbench.datasets.loader import load_tasks
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig
from formalbench.store.runs import RunStore
from tests.suite_coq import coqc

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
HEADER = "From MyLib Require Import Double.\n"
STATEMENT = "Theorem t : double 2 = 4.\nProof.\n"
runner = CliRunner()


def _project(root: Path, project_file: str) -> Path:
    (root / "theories").mkdir(parents=True)
    (root / "_CoqProject").write_text(project_file, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`MyLib.Double` compiled by the coqc the tests use (as the user's build would)."""
    if shutil.which("coqc") is None:
        pytest.skip("coqc is not installed")
    root = _project(
        tmp_path_factory.mktemp("proj") / "proj",
        "# a project file as coq_makefile reads it\n-R theories MyLib\n"
        '-arg -w -arg "-notation-overridden"\ntheories/Double.v\n',
    )
    source = root / "theories" / "Double.v"
    source.write_text("Definition double (n : nat) : nat := n + n.\n", encoding="utf-8")
    coqc(["-q", "-R", "theories", "MyLib", "theories/Double.v"], root)
    return root


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def _files(tmp_path: Path) -> tuple[str, str]:
    original, candidate = tmp_path / "orig.v", tmp_path / "cand.v"
    original.write_text(HEADER + STATEMENT + "Admitted.\n", encoding="utf-8")
    candidate.write_text(HEADER + STATEMENT + "reflexivity.\nQed.\n", encoding="utf-8")
    return str(candidate), str(original)


@needs_coq
def test_check_finds_the_projects_library_and_leaves_it_unchanged(
    project: Path, tmp_path: Path
) -> None:
    candidate, original = _files(tmp_path)
    before = _tree(project)
    done = runner.invoke(
        app, ["check", candidate, "--against", original, "--coq-project", str(project), "--json"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["passed"] is True
    assert _tree(project) == before  # used read-only, never rebuilt


@needs_coq
def test_without_the_project_the_failure_is_the_environment(tmp_path: Path) -> None:
    candidate, original = _files(tmp_path)
    done = runner.invoke(app, ["check", candidate, "--against", original, "--json"])
    assert done.exit_code == 1
    verdict = json.loads(done.output)
    assert verdict["reasons"] == ["environment"]
    assert "--coq-project" in verdict["findings"][0]["message"]


@needs_coq
def test_eval_takes_the_task_field_relative_to_the_dataset(project: Path, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    rel = os.path.relpath(project, tmp_path / "data")
    task = Task(id="t", language=Language.coq, header=HEADER, formal=STATEMENT + "Admitted.\n")
    data = tmp_path / "data" / "tasks.jsonl"
    line = task.model_copy(update={"coq_project": rel}).model_dump_json()
    data.write_text(line + "\n", encoding="utf-8")
    config = EvalConfig(dataset=str(data), workers=1, timeout=60, tactics=["reflexivity"])
    run_evaluation(config, tmp_path / "run")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        attempts = {a.task_id: a for a in store.attempts(store.runs()[0].id)}
    assert attempts["t"].verdict is not None and attempts["t"].verdict.passed
    assert attempts["t"].error is None


@needs_coq
def test_eval_without_a_project_records_an_environment_failure(tmp_path: Path) -> None:
    task = Task(id="t", language=Language.coq, header=HEADER, formal=STATEMENT + "Admitted.\n")
    data = tmp_path / "tasks.jsonl"
    data.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    run_evaluation(EvalConfig(dataset=str(data), workers=1, timeout=60), tmp_path / "run")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        (attempt,) = store.attempts(store.runs()[0].id)
    assert attempt.error is not None and attempt.error.kind == ErrorKind.environment


@pytest.mark.parametrize(
    ("project_file", "said"),
    [
        ("-R nowhere MyLib\n", "`-R nowhere`: no such folder"),
        ("-Q theories\n", "`-Q` needs 2 values"),
        ("-R theories 9Lib\n", "not a Coq logical path"),
        ("-frobnicate\n", "unknown option `-frobnicate`"),
        ('-arg "-w\n', "unterminated string"),
        ("-arg -type-in-type\n", "`-arg -type-in-type` is not passed"),
        ('-arg "-set Dump Arith=x"\n', "`-arg -set` is not passed"),
        ("-arg -w\n", "`-arg -w` needs a value"),
        ("theories/Notes.txt\n", "neither an option nor a source file"),
    ],
)
def test_a_malformed_project_file_is_one_clear_line(
    tmp_path: Path, project_file: str, said: str
) -> None:
    root = _project(tmp_path / "p", project_file)
    with pytest.raises(InputError) as caught:
        read_coq_project(root)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    assert str(root / "_CoqProject") in str(caught.value)


def test_project_flags_are_read_as_coqc_wants_them(tmp_path: Path) -> None:
    root = _project(
        tmp_path / "p",
        "-Q theories Lib.Sub # comment\n-I theories\nCOQMF_X = y\n"
        "-arg \"-w '-deprecated'\" -native-compiler ondemand\ntheories\n",
    )
    found = read_coq_project(root)
    folder = str((root / "theories").resolve())
    assert found.args == ("-Q", folder, "Lib.Sub", "-I", folder, "-w", "-deprecated")
    assert found.read_only == ((root / "theories").resolve(),)


@pytest.mark.parametrize("folder", ["missing", "no-project-file"])
def test_check_refuses_a_bad_project_folder_with_exit_2(tmp_path: Path, folder: str) -> None:
    (tmp_path / "no-project-file").mkdir()
    source = tmp_path / "a.v"
    source.write_text("Theorem t : True.\nProof.\nAdmitted.\n", encoding="utf-8")
    args = ["check", str(source), "--against", str(source), "--coq-project", str(tmp_path / folder)]
    done = runner.invoke(app, args)
    assert done.exit_code == 2
    assert len(done.output.strip().splitlines()) == 1 and "coq-project" in done.output


@pytest.mark.skipif(isolation() != "bwrap", reason="bwrap does not start here")
def test_the_sandbox_sees_project_folders_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even inside a folder left writable on purpose, a project folder stays read-only."""
    library = tmp_path / "lib"
    library.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("FORMALBENCH_SANDBOX_WRITABLE", str(tmp_path))
    script = f"touch {library}/changed; touch {tmp_path}/allowed"
    run_limited(["sh", "-c", script], cwd=work, timeout=30, read_only=[str(library)])
    assert not (library / "changed").exists()
    assert (tmp_path / "allowed").exists()  # the writable folder itself still is


def test_compare_takes_coq_project_for_coq_only(tmp_path: Path) -> None:
    source = tmp_path / "a.lean"
    source.write_text("theorem t : True := sorry\n", encoding="utf-8")
    args = [
        "compare",
        str(source),
        str(source),
        "--backend",
        "lean",
        "--coq-project",
        str(tmp_path),
    ]
    done = runner.invoke(app, args)
    assert done.exit_code == 2 and "--coq-project is for --backend coq" in done.output


def test_a_folder_of_project_files_names_its_project(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", "-R theories MyLib\n")
    (root / "theories" / "T.v").write_text("Theorem t : True.\nProof.\nAdmitted.\n", "utf-8")
    (tmp_path / "alone.v").write_text("Theorem u : True.\nProof.\nAdmitted.\n", "utf-8")
    (task,) = load_tasks(root / "theories").tasks
    assert task.coq_project == str(root.resolve())
    (lone,) = load_tasks(tmp_path / "alone.v").tasks
    assert lone.coq_project is None
