"""Run folders under bad conditions: two processes, a full or read-only disk, corrupt files,
bad options, tasks that cannot compile here. Real coqc, real SQLite, real processes; the
disks are real tmpfs / read-only bind mounts where this machine lets root mount them (the
tests that need one skip otherwise).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.cli.main import app
from formalbench.core.errors import InputError
from formalbench.core.records import (
    Attempt,
    AttemptError,
    CheckResult,
    ErrorKind,
    Language,
    Task,
    Verdict,
)
from formalbench.pipelines import run_dir as rd
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.preflight import (
    admitted_original,
    check_originals,
    refuse_version_mismatch,
    version_mismatches,
)
from formalbench.pipelines.run_config import EvalConfig
from formalbench.pipelines.run_files import RunFiles, load_summary
from formalbench.store.runs import RunStore
from tests.standins.openai_server import StandinServer
from tests.suite_coq import std

needs_coqc = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
REPO = Path(__file__).resolve().parents[1]
EASY = "Theorem easy_add : forall n m : nat, n + m = m + n.\nProof.\nAdmitted.\n"
MISSING = (
    "From NoSuchLib Require Import Foo.\n"
    "Theorem needs_lib : forall n : nat, n + 0 = n.\nProof.\nAdmitted.\n"
)


def write_dataset(path: Path, formals: dict[str, str]) -> Path:
    tasks = [Task(id=k, language=Language.coq, formal=v) for k, v in formals.items()]
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    return path


def one_line_error(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in output, output
    return " ".join(lines[0].split())


@contextmanager
def mounted(target: Path, *options: str, source: str = "tmpfs") -> Iterator[None]:
    """Mount at `target` for the test, or skip when this machine does not let us."""
    target.mkdir(parents=True, exist_ok=True)
    kind = ["-t", "tmpfs"] if source == "tmpfs" else []
    run = subprocess.run(
        ["mount", *kind, *options, source, str(target)], capture_output=True, text=True
    )
    if run.returncode != 0:
        pytest.skip(f"cannot mount here ({run.stderr.strip() or run.returncode})")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


# ---- the folder: checks before anything is written -------------------------------------


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
@pytest.mark.parametrize("command", ["eval", "formalize"])
def test_infinite_or_nan_timeout_is_refused(tmp_path: Path, command: str, value: str) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    extra = ["--model", "openai:m"] if command == "formalize" else []
    args = [command, str(data), *extra, "--timeout", value, "--run-dir", str(tmp_path / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    message = one_line_error(result.output)  # nan fails typer's own `min` check first
    assert "--timeout" in message and ("finite" in message or "greater than" in message)
    assert not (tmp_path / "r").exists()


def test_a_run_dir_that_is_a_file_or_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    for run_dir, words in ((blocker, "is a file"), (blocker / "sub", "cannot create it")):
        result = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(run_dir)])
        assert result.exit_code == 2, result.output
        assert words in one_line_error(result.output)
    assert blocker.read_text() == "not a folder"


def test_eval_into_a_formalize_folder_and_the_reverse_are_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    formalized = tmp_path / "f"
    formalized.mkdir()
    (formalized / "formalize.sqlite").write_bytes(b"")
    result = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(formalized)])
    assert result.exit_code == 2
    assert "holds a formalize run" in one_line_error(result.output)
    assert sorted(p.name for p in formalized.iterdir()) == ["formalize.sqlite"]

    evaluated = tmp_path / "e"
    evaluated.mkdir()
    (evaluated / "run.sqlite").write_bytes(b"")
    problems = tmp_path / "p.jsonl"
    problems.write_text(json.dumps({"id": "p", "informal": "Show 1 = 1."}) + "\n")
    args = ["formalize", str(problems), "--model", "openai:m", "--run-dir", str(evaluated)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "holds a eval run" in one_line_error(result.output)
    assert sorted(p.name for p in evaluated.iterdir()) == ["run.sqlite"]


def test_a_typo_in_context_does_not_touch_the_run_folder(tmp_path: Path) -> None:
    problems = tmp_path / "p.jsonl"
    problems.write_text(json.dumps({"id": "p", "informal": "Show 1 = 1."}) + "\n")
    run_dir = tmp_path / "run"
    args = ["formalize", str(problems), "--model", "openai:m", "--backend", "coq"]
    args += ["--context", str(tmp_path / "contxt.txt"), "--run-dir", str(run_dir)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--context" in one_line_error(result.output)
    assert not run_dir.exists()


# ---- the JSON files: atomic, corrupt ones named ---------------------------------------


def test_atomic_write_keeps_the_old_file_when_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    rd.write_json_atomic(target, {"a": 1})
    target.chmod(0o640)

    def full(fd: int) -> None:  # the boundary: the kernel's answer to a write on a full disk
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rd.os, "fsync", full)
    with pytest.raises(InputError, match="run.json: cannot write it .no space left"):
        rd.write_json_atomic(target, {"a": 2})
    monkeypatch.undo()
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left
    rd.write_json_atomic(target, {"a": 3})
    assert json.loads(target.read_text()) == {"a": 3} and target.stat().st_mode & 0o777 == 0o640


@needs_coqc
def test_corrupt_run_files_are_one_line_errors(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    run_dir = tmp_path / "run"
    run_evaluation(EvalConfig(dataset=str(data), timeout=30), run_dir)
    log = run_dir / "run.json"
    log.write_text(log.read_text()[:40])  # a copy cut short
    report = CliRunner().invoke(app, ["report", str(run_dir)])
    assert report.exit_code == 2
    assert "run.json: corrupt" in one_line_error(report.output)
    args = ["eval", str(data), "--run-dir", str(run_dir), "--timeout", "30", "--quiet"]
    resume = CliRunner().invoke(app, args)
    assert resume.exit_code == 2 and "run.json: corrupt" in one_line_error(resume.output)
    log.write_text("[1, 2]")
    report = CliRunner().invoke(app, ["report", str(run_dir)])
    assert report.exit_code == 2 and "expected a JSON object" in one_line_error(report.output)


# ---- the disk: full, read-only -----------------------------------------------------------


@needs_coqc
def test_a_full_disk_is_one_line_and_the_run_resumes_after(tmp_path: Path) -> None:
    formals = {f"t{i}": EASY.replace("easy_add", f"t{i}") for i in range(3)}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    disk = tmp_path / "disk"
    with mounted(disk, "-o", "size=1m"):
        run_dir = disk / "run"
        first = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(run_dir), "--quiet"])
        assert first.exit_code == 0, first.output
        filler = disk / "filler"
        with filler.open("wb") as out:  # fill the rest of the disk
            try:
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
            except OSError:
                pass
        more = write_dataset(
            tmp_path / "d.jsonl", {**formals, "t9": EASY.replace("easy_add", "t9")}
        )
        full = CliRunner().invoke(app, ["eval", str(more), "--run-dir", str(run_dir), "--quiet"])
        assert full.exit_code == 2
        assert "full" in one_line_error(full.output) or "disk" in full.output
        filler.unlink()
        again = CliRunner().invoke(app, ["eval", str(more), "--run-dir", str(run_dir), "--quiet"])
        assert again.exit_code == 0, again.output
        summary = load_summary(run_dir)
        assert summary.attempts == 4 and len(summary.solved) == 4


@needs_coqc
def test_a_finished_run_is_reported_from_read_only_storage(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    source = tmp_path / "src"
    run_evaluation(EvalConfig(dataset=str(data), timeout=30), source / "run")
    (source / "run" / "summary.json").unlink(missing_ok=True)
    view = tmp_path / "ro"
    with mounted(view, "--bind", source=str(source)):
        remount = subprocess.run(["mount", "-o", "remount,ro,bind", str(view)])
        if remount.returncode != 0:
            pytest.skip("cannot remount read-only here")
        before = sorted(p.name for p in (view / "run").iterdir())
        report = CliRunner().invoke(app, ["report", str(view / "run"), "--json"])
        assert report.exit_code == 0, report.output + report.stderr
        assert json.loads(report.stdout)["solved"] == ["easy_add"]
        assert "read-only" in report.stderr and "not written" in report.stderr
        assert sorted(p.name for p in (view / "run").iterdir()) == before


# ---- two processes on one folder ---------------------------------------------------------


@needs_coqc
def test_a_second_process_on_the_same_run_folder_refuses(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    run_dir = tmp_path / "run"

    second_done = threading.Event()

    def slow(body: dict) -> list[str]:
        second_done.wait(timeout=90)  # the first run is still going while the second tries
        return ["```coq\nProof.\n  intros. apply PeanoNat.Nat.add_comm.\nQed.\n```"]

    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "OPENAI_API_KEY": "test-key"}
    with StandinServer() as server:
        server.responder = slow
        args = [sys.executable, "-m", "formalbench", "eval", str(data), "--solver", "whole"]
        args += ["--model", f"openai:standin-model@{server.base_url}", "--run-dir", str(run_dir)]
        args += ["--quiet"]
        first = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            lock = run_dir / rd.LOCK_NAME
            deadline = time.monotonic() + 60
            while not (lock.is_file() and lock.read_text().strip()):
                assert first.poll() is None, first.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.05)
            try:
                second = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
            finally:
                second_done.set()
            assert second.returncode == 2, second.stderr
            message = one_line_error(second.stderr)
            assert "another formalbench process" in message and str(first.pid) in message
            assert first.wait(timeout=120) == 0, first.stderr.read() if first.stderr else ""
        finally:
            if first.poll() is None:
                first.kill()
        assert server.count() == 1  # the second computed nothing
        with RunStore(RunFiles(run_dir).store) as store:
            assert len(list(store.attempts(store.runs()[0].id))) == 1
        # the lock dies with its holder: a later run on the folder goes ahead
        assert subprocess.run(args, env=env, capture_output=True, timeout=120).returncode == 0


# ---- tasks that cannot compile here ------------------------------------------------------


@needs_coqc
def test_preflight_records_a_missing_library_as_environment_not_attempted(
    tmp_path: Path,
) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY, "needs_lib": MISSING})
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "preflight: 1 task(s) cannot compile here" in out and "needs_lib" in out
    assert "Cannot find a physical path bound to logical path" in out
    with RunStore(RunFiles(run_dir).store) as store:
        attempts = {a.task_id: a for a in store.attempts(store.runs()[0].id)}
    missing = attempts["needs_lib"]
    assert missing.error is not None and missing.error.kind == ErrorKind.environment
    assert missing.code == "" and missing.wall_time == 0  # not attempted
    summary = load_summary(run_dir)
    assert summary.environment_tasks == ["needs_lib"]
    assert summary.pass_at_k == {"1": 1.0} and summary.evaluated == 1  # left out of pass@k
    assert summary.taxonomy == {"environment": 1}
    assert any("needs_lib" in w for w in summary.warnings)
    report = CliRunner().invoke(app, ["report", str(run_dir)])
    assert "warning:" in report.output and "left out of pass@k" in report.output


@needs_coqc
def test_without_preflight_the_missing_library_is_still_environment(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY, "needs_lib": MISSING})
    run_dir = tmp_path / "run"
    args = ["eval", str(data), "--run-dir", str(run_dir), "--no-preflight", "--quiet"]
    assert CliRunner().invoke(app, args).exit_code == 0
    with RunStore(RunFiles(run_dir).store) as store:
        attempts = {a.task_id: a for a in store.attempts(store.runs()[0].id)}
    assert attempts["needs_lib"].error is None  # attempted: the portfolio ran on it
    summary = load_summary(run_dir)
    assert summary.environment_tasks == ["needs_lib"] and summary.pass_at_k == {"1": 1.0}


def test_admitted_original_compiles_every_kind_of_coq_hole() -> None:
    formal = (
        "Lemma helper : True.\nProof. exact I. Qed.\n"
        "Theorem a : 1 = 1.\nProof.\n"  # a proof left open
        "Admitted.\nTheorem b : 2 = 2.\nProof.\n  admit.\nAdmitted.\nTheorem c : 3 = 3.\n"
    )
    text = admitted_original(Task(id="t", language=Language.coq, formal=formal))
    assert "Qed." not in text and text.count("Admitted.") >= 3
    if shutil.which("coqc"):
        backend = CoqBackend(workers=1, timeout=30)
        try:
            result = backend.check(text)
        finally:
            backend.close()
        assert result.compiled, result.errors


class CountingCoq(CoqBackend):
    """Real coqc, counting the checks it is asked for."""

    def __init__(self) -> None:
        super().__init__(workers=2, timeout=60)
        self.calls = 0

    def check(self, source, *, targets=(), timeout=None, **where):  # type: ignore[no-untyped-def]
        self.calls += 1
        return super().check(source, targets=targets, timeout=timeout, **where)


@needs_coqc
def test_preflight_compiles_coq_originals_together_and_redoes_a_failed_batch() -> None:
    good = [
        Task(id="a", language=Language.coq, header="Require Import Arith.\n", formal=EASY),
        Task(id="b", language=Language.coq, header="Require   Import Arith.\n", formal=EASY),
        Task(
            id="c",
            language=Language.coq,
            header="(* Lia *) Require Import Arith.\n",
            formal="Lemma c : True.\nProof.\n",
        ),
    ]
    backend = CountingCoq()
    try:
        assert asyncio.run(check_originals(backend, good, 60)) == {}
        assert backend.calls == 1  # one file for the three: they load the same libraries
        typo = Task(
            id="typo",
            language=Language.coq,
            header="Require Import Arith.\n",
            formal="Theorem typo : no_such_name = 0.\nProof.\nAdmitted.\n",
        )
        missing = Task(id="needs_lib", language=Language.coq, formal=MISSING)
        failed = asyncio.run(check_originals(backend, [*good, typo, missing], 60))
    finally:
        backend.close()
    assert sorted(failed) == ["needs_lib", "typo"] and "NoSuchLib" in failed["needs_lib"][0]
    # the failed batch, then each of its tasks alone; needs_lib loads another library: alone
    assert backend.calls == 1 + 1 + 4 + 1


@needs_coqc
def test_preflight_never_passes_a_task_on_a_library_another_task_loaded() -> None:
    """A task that forgot its `Require` compiled in a batch after one that made it (the
    library stays loaded after the module ends), and failed in every attempt; one whose
    `Global` option outlives its module is checked alone likewise."""
    real = std("Coq.Reals.Rdefinitions.R")
    loads = Task(
        id="loads",
        language=Language.coq,
        header="Require Import Reals.\n",
        formal=f"Lemma loads : forall x : {real}, x = x.\nProof.\n",
    )
    forgot = Task(
        id="forgot",
        language=Language.coq,
        formal=f"Lemma forgot : forall x : {real}, x = x.\nProof.\n",
    )
    sets = Task(
        id="sets",
        language=Language.coq,
        header="Require Import Arith.\n",
        formal="Global Set Implicit Arguments.\n" + EASY,
    )
    after = Task(
        id="after",
        language=Language.coq,
        header="Require Import Arith.\n",
        formal="Definition idf A (x : A) := x.\nLemma after : idf 0 = 0.\nProof.\n",
    )
    backend = CountingCoq()
    try:
        failed = asyncio.run(check_originals(backend, [loads, forgot, sets, after], 60))
    finally:
        backend.close()
    assert sorted(failed) == ["after", "forgot"], failed
    assert backend.calls == 4  # nothing batched: no two tasks load the same and stay local


def test_typed_errors_are_retried_by_kind_and_old_strings_too(tmp_path: Path) -> None:
    def attempt(task: str, error: AttemptError | str | None) -> Attempt:
        return Attempt(task_id=task, solver="whole", verdict=Verdict(passed=False), error=error)

    with RunStore(tmp_path / "run.sqlite") as store:
        run_id = store.open_run({"dataset": "d", "solver": "whole"}, {})
        store.add_tasks(
            run_id, [Task(id=f"t{i}", language=Language.coq, formal=EASY) for i in range(5)]
        )
        store.record_attempt(run_id, attempt("t0", AttemptError(kind="model", message="503")))
        store.record_attempt(run_id, attempt("t1", AttemptError(kind="format", message="x")))
        store.record_attempt(run_id, attempt("t2", AttemptError(kind="environment", message="y")))
        store.record_attempt(run_id, attempt("t3", None))
        # a row as an older formalbench stored it: the error a `tag: message` string
        old = attempt("t3", None).model_dump(mode="json") | {"error": "backend: coqc missing"}
        store._conn.execute(
            "UPDATE attempts SET attempt = ? WHERE task_id = 't3'", (json.dumps(old),)
        )
        assert store.forget_retryable(run_id) == 3
        left = {a.task_id: a.error for a in store.attempts(run_id)}
    assert left == {"t1": AttemptError(kind=ErrorKind.format_, message="x")}


# ---- Lean versions -----------------------------------------------------------------------


class _Project:
    """What `version_mismatches` asks of a Lean backend: its `mismatch` (the real sentence
    maker of backends.lean.toolchain over this project's versions)."""

    def mismatch(self, toolchain: str | None, library_revision: str | None) -> str | None:
        from formalbench.backends.lean.toolchain import mismatch_sentence

        ours = ("leanprover/lean4:v4.24.0", "a" * 40, "v4.24.0")
        return mismatch_sentence(ours, toolchain, library_revision)


def test_lean_version_mismatch_names_both_versions() -> None:
    def lean(task_id: str, toolchain: str) -> Task:
        return Task(
            id=task_id,
            language=Language.lean,
            formal="theorem t : 1 = 1 := sorry",
            toolchain=toolchain,
        )

    tasks = [lean("same", "leanprover/lean4:v4.24.0"), lean("old", "leanprover/lean4:v4.9.0")]
    found = version_mismatches(_Project(), tasks)  # type: ignore[arg-type]
    assert [ids for _, ids in found] == [["old"]]
    with pytest.raises(InputError) as info:
        refuse_version_mismatch(found)
    message = str(info.value)
    assert "v4.9.0" in message and "v4.24.0" in message and "--allow-version-mismatch" in message
    assert version_mismatches(CoqBackend.__new__(CoqBackend), tasks) == []  # cannot say


class LeanProject(Backend):
    """A Lean backend at the process boundary: every check compiles (no Lean toolchain here),
    while `mismatch` is the real comparison of backends.lean.toolchain against a project on
    Lean v4.24.0."""

    name = "lean"
    language = Language.lean

    def check(self, source, *, targets=(), timeout=None, **where):  # type: ignore[no-untyped-def]
        return CheckResult(backend=self.name, axioms={t: [] for t in targets})

    def version(self) -> str:
        return "lean leanprover/lean4:v4.24.0"

    def mismatch(self, toolchain: str | None, library_revision: str | None) -> str | None:
        return _Project().mismatch(toolchain, library_revision)


def test_a_run_on_another_lean_version_is_refused_before_it_starts(tmp_path: Path) -> None:
    task = Task(
        id="old_task",
        language=Language.lean,
        formal="theorem old_task : 1 + 1 = 2 := by\n  sorry\n",
        toolchain="leanprover/lean4:v4.9.0",
    )
    data = tmp_path / "d.jsonl"
    data.write_text(task.model_dump_json() + "\n")
    config = EvalConfig(dataset=str(data), tactics=["rfl"])
    with pytest.raises(InputError, match=r"v4\.9\.0 \(this project has .*v4\.24\.0\)"):
        run_evaluation(config, tmp_path / "run", backend=LeanProject(workers=1))
    assert not (tmp_path / "run").exists()
    allowed = config.model_copy(update={"allow_version_mismatch": True})
    result = run_evaluation(allowed, tmp_path / "run", backend=LeanProject(workers=1))
    assert result.new_attempts == 1
    assert any("--allow-version-mismatch: the task was made for" in n for n in result.notes)


@needs_coqc
def test_preflight_gives_an_original_more_than_a_short_attempt_timeout() -> None:
    """`--timeout 10` is for the attempts; an original cut short by it was let through and
    its statement's error counted as the prover's (PutnamBench's mathcomp-analysis files)."""
    missing = Task(id="needs_lib", language=Language.coq, formal=MISSING)
    backend = CountingCoq()
    try:
        failed = asyncio.run(check_originals(backend, [missing], 0.01))
    finally:
        backend.close()
    assert list(failed) == ["needs_lib"] and "NoSuchLib" in failed["needs_lib"][0]
