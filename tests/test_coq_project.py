"""Coq projects (`--coq-project DIR`, the task field `coq_project`; backends/coq_project.py).

A tiny real project is built in a temporary folder with the real coqc: a task that
`Require`s its module checks with the project, fails as `environment` without it, and the
project's files are never changed. Malformed `_CoqProject` files are one line and exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
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
    data = tmp_path / "data"
    shutil.copytree(project, data / "vendor" / "proj", symlinks=True)  # beside the dataset
    task = Task(id="t", language=Language.coq, header=HEADER, formal=STATEMENT + "Admitted.\n")
    tasks = data / "tasks.jsonl"
    line = task.model_copy(update={"coq_project": "vendor/proj"}).model_dump_json()
    tasks.write_text(line + "\n", encoding="utf-8")
    config = EvalConfig(dataset=str(tasks), workers=1, timeout=60, tactics=["reflexivity"])
    run_evaluation(config, tmp_path / "run")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        attempts = {a.task_id: a for a in store.attempts(store.runs()[0].id)}
    assert attempts["t"].verdict is not None and attempts["t"].verdict.passed
    assert attempts["t"].error is None


@needs_coq
def test_a_task_field_leaving_the_dataset_folder_needs_the_command_line(
    project: Path, tmp_path: Path
) -> None:
    """Issue 29 item 4: `..`, an absolute path elsewhere or a symlink out of the dataset's
    folder is refused in one line; the same project given with --coq-project is used."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "link").symlink_to(project)
    task = Task(id="t", language=Language.coq, header=HEADER, formal=STATEMENT + "Admitted.\n")
    tasks = data / "tasks.jsonl"
    for field in (os.path.relpath(project, data), str(project), "link", "x/../../", "/proc"):
        line = task.model_copy(update={"coq_project": field}).model_dump_json()
        tasks.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(InputError) as refused:
            load_tasks(tasks)
        said = str(refused.value)
        assert "leaves the dataset's folder" in said and "--coq-project" in said, field
        assert "\n" not in said
    line = task.model_copy(update={"coq_project": str(project)}).model_dump_json()
    tasks.write_text(line + "\n", encoding="utf-8")
    options = {"coq_project": str(project)}
    config = EvalConfig(
        dataset=str(tasks), workers=1, timeout=60, tactics=["reflexivity"], backend_options=options
    )
    run_evaluation(config, tmp_path / "run")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        (attempt,) = store.attempts(store.runs()[0].id)
    assert attempt.verdict is not None and attempt.verdict.passed


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


def _refused(root: Path) -> str:
    with pytest.raises(InputError) as caught:
        read_coq_project(root)
    said = str(caught.value)
    assert "\n" not in said and "Traceback" not in said
    return said


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("-I /proc\n", "/proc is not a project folder"),
        ("-R /proc/self Lib\n", "is not a project folder"),
        ("-Q /sys Lib\n", "/sys is not a project folder"),
        ("-I /dev\n", "/dev is not a project folder"),
        ("-R / Lib\n", "/ is not a project folder"),
        ("-R ../../../../../../../../../../.. Lib\n", "/ is not a project folder"),
        ("-R root Lib\n", "/ is not a project folder"),  # root -> /
        ("-R out Lib\n", "a symlink out of the project"),  # out -> a folder elsewhere
        ("-R up Lib\n", "a symlink out of the project"),  # up -> ..
        ("-R proc Lib\n", "is not a project folder"),  # proc -> /proc
        ("-R loop Lib\n", "looping symlink"),  # loop -> loop
    ],
)
def test_a_project_cannot_make_formalbench_walk_the_file_system(
    tmp_path: Path, line: str, said: str
) -> None:
    """Issue 29 item 4: folders outside any project, or reached through symlinks out of it,
    are refused before anything is walked; one line each."""
    root = _project(tmp_path / "p", line)
    (root / "root").symlink_to("/")
    (root / "up").symlink_to("..")
    (root / "proc").symlink_to("/proc")
    (root / "loop").symlink_to("loop")
    (tmp_path / "elsewhere").mkdir()
    (root / "out").symlink_to(tmp_path / "elsewhere")
    assert said in _refused(root)


def test_links_inside_the_load_path_are_bounded_too(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "-R theories Lib\n")
    theories = root / "theories"
    (theories / "A.vo").write_bytes(b"x")
    (theories / "back").symlink_to("..")  # coqc would bind the project's parent as Lib.back
    assert "its own ancestor" in _refused(root) or "outside it" in _refused(root)
    (theories / "back").unlink()
    (theories / "out.vo").symlink_to("/etc/hostname")
    assert "symlink out of the project" in _refused(root)
    (theories / "out.vo").unlink()
    (theories / "self").symlink_to("self")  # a loop that is no library: left alone
    (theories / "same").symlink_to(theories / "sub", target_is_directory=True)
    (theories / "sub").mkdir()
    (theories / "sub" / "B.vo").write_bytes(b"y")
    found = read_coq_project(root)
    assert len(found.digest()) == 12


def test_the_walk_is_bounded_in_depth_and_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from formalbench.backends import coq_project as cp

    root = _project(tmp_path / "p", "-R theories Lib\n")
    deep = root / "theories"
    for i in range(6):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    monkeypatch.setattr(cp, "MAX_WALK_DEPTH", 4)
    assert "nested more than 4 deep" in _refused(root)
    monkeypatch.setattr(cp, "MAX_WALK_DEPTH", 32)
    for i in range(30):
        (root / "theories" / f"f{i}.vo").write_bytes(b"")
    monkeypatch.setattr(cp, "MAX_WALK_ENTRIES", 20)
    assert "more than 20 files and folders" in _refused(root)


def test_a_project_file_is_read_only_up_to_its_bound(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "")
    sparse = root / "_CoqProject"
    with open(sparse, "wb") as handle:  # 3 GB that take no disk: must not be read whole
        handle.truncate(3 << 30)
    assert "larger than 1,048,576 bytes" in _refused(root)  # (read whole: a MemoryError)
    sparse.unlink()
    os.mkfifo(sparse)  # a pipe would block an open(): not a regular file, not a project
    said = _refused(root)
    assert "no _RocqProject or _CoqProject" in said or "not a regular file" in said
    sparse.unlink()
    sparse.symlink_to("/proc/self/status")  # a /proc file says size 0, whatever it holds
    assert "a symlink out of the project" in _refused(root)
    sparse.unlink()
    sparse.write_bytes(b"-R theories \xff\xfe\n")
    assert "not UTF-8 text" in _refused(root)


@pytest.mark.parametrize("line", ["-I /proc\n", "-R / Lib\n", "-R root Lib\n"])
def test_the_commands_say_it_in_one_line_with_exit_2(tmp_path: Path, line: str) -> None:
    root = _project(tmp_path / "p", line)
    (root / "root").symlink_to("/")
    source = tmp_path / "a.v"
    source.write_text("Theorem a : True.\nProof. exact I. Qed.\n")
    done = runner.invoke(
        app, ["check", str(source), "--against", str(source), "--coq-project", str(root)]
    )
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output and len(done.output.strip().splitlines()) == 1


HONEST = "Theorem t : forall n : nat, n + 0 = n.\nProof.\n"
HURKENS_SET = """Section Paradox.
(* Hurkens' paradox needs an impredicative universe that is also large enough; under
   -impredicative-set, Set is one. Only the flag matters to the test: the project is refused
   before any of this is compiled. *)
Definition U : Set := forall X : Set, (X -> Set) -> X -> Set.
End Paradox.
Theorem one_two : 1 = 2.
Proof.
Admitted.
"""


def _check_under(tmp_path: Path, flag: str, head: str, proof: str, original: str = "") -> dict:
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # one folder a call
    root = _project(tmp_path / "p", f'-arg "{flag}"\n')
    cand, orig = tmp_path / "cand.v", tmp_path / "orig.v"
    cand.write_text(head + HONEST + proof + "Qed.\n", encoding="utf-8")
    orig.write_text(original or head + HONEST + "Admitted.\n", encoding="utf-8")
    done = runner.invoke(
        app, ["check", str(cand), "--against", str(orig), "--coq-project", str(root), "--json"]
    )
    return {"exit": done.exit_code, "out": done.output}


@needs_coq
@pytest.mark.parametrize(
    "flag", ["-w -notation-overridden", "-q", "-indices-matter", "-allow-sprop", "-disallow-sprop"]
)
def test_allowed_project_flags_give_an_honest_proof_its_pass(tmp_path: Path, flag: str) -> None:
    done = _check_under(tmp_path, flag, "", "  induction n; simpl; auto.\n")
    assert done["exit"] == 0, done["out"]
    assert json.loads(done["out"])["passed"] is True


@needs_coq
@pytest.mark.parametrize("flag", ["-noinit", "-nois"])
def test_noinit_passes_a_file_that_loads_the_prelude_and_says_why_one_does_not(
    tmp_path: Path, flag: str
) -> None:
    prelude = "From Coq Require Import Init.Prelude.\n"
    done = _check_under(tmp_path, flag, prelude, "  induction n; simpl; auto.\n")
    assert done["exit"] == 0 and json.loads(done["out"])["passed"] is True, done["out"]
    bare = _check_under(tmp_path, flag, "", "  induction n; simpl; auto.\n")
    verdict = json.loads(bare["out"])
    assert verdict["passed"] is False and verdict["reasons"] == ["compile_error"]
    assert "statement_changed" not in verdict["reasons"]  # never the misleading reason


@pytest.mark.parametrize(
    "line",
    [
        "-arg -impredicative-set\n",
        '-arg "-w none -impredicative-set"\n',
        "-arg -impredicative-set -arg -q\n",
    ],
)
def test_impredicative_set_is_refused_up_front_naming_the_flag(tmp_path: Path, line: str) -> None:
    root = _project(tmp_path / "p", line)
    said = _refused(root)
    assert "`-arg -impredicative-set` is refused" in said and "impredicative" in said
    source = tmp_path / "paradox.v"
    source.write_text(HURKENS_SET, encoding="utf-8")
    done = runner.invoke(
        app, ["check", str(source), "--against", str(source), "--coq-project", str(root)]
    )
    assert done.exit_code == 2 and "-impredicative-set" in done.output
    assert len(done.output.strip().splitlines()) == 1
