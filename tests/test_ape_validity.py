"""Which mined tasks `ape mine --validate` keeps (issue 30 items 2 and 3), on real coqc: the
before file compiles, the after file compiles and is complete; warnings are recorded, not
reasons; a dependency's error is kept whole; a created file is never chunked mid-lemma."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formalbench.pipelines.ape.filters import chunks
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.validate import validate_run
from formalbench.store.ape import ApeStore
from tests.test_ape_layout import _commit, _git

needs_coqc = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")

DEP = """Definition double (n : nat) : nat := n + n.

Lemma double_zero : double 0 = 0.
Proof. reflexivity. Qed.
"""
HEAD = "Require Import Lib.A.\n\n"
GOOD = "Lemma double_one : double 1 = 2.\nProof. reflexivity. Qed.\n"
# a lemma whose statement and proof are apart: a blank line inside one command
SPLIT = "Lemma double_two :\n  double 2 = 4.\n\nProof.\n  reflexivity.\nQed.\n"


def _repo(root: Path, dep: str = DEP, extra: dict[str, str | None] | None = None) -> Path:
    repo = root / "lib"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, "Add the double function", {"_CoqProject": "-R . Lib\n", "A.v": dep})
    _commit(repo, "Add B", {"B.v": HEAD + GOOD, **(extra or {})})
    return repo


def _run(root: Path, repo: Path, tasks: dict[str, tuple[str, str, str | None]]) -> Path:
    """A run folder whose kept tasks are `tasks` (id -> before, after, file_path_before),
    all of file B.v at the repository's last commit."""
    git = GitRepo.open(repo, root)
    sha = git.git("rev-parse", "HEAD").strip()
    parent = git.git("rev-parse", "HEAD^").strip()
    git.close()
    rows = []
    for tid, (before, after, path_before) in tasks.items():
        record = {
            "id": tid,
            "commit_hash": sha,
            "parent_commit_hash": parent,
            "file_path_before": path_before,
            "file_path_after": "B.v",
            "content_before": before,
            "content_after": after,
        }
        rows.append((tid, None, record))
    run = root / "run"
    run.mkdir()
    with ApeStore(run / "ape.sqlite") as store:
        store.set_meta("source", str(repo))
        store.set_meta("language", "coq")
        store.put_commit(sha, 0, "feat", rows)
    return run


def _results(run: Path) -> dict:
    with ApeStore(run / "ape.sqlite") as store:
        return store.results("validate")


@pytest.mark.coq
@needs_coqc
def test_before_must_compile_and_after_must_be_complete(tmp_path) -> None:
    """Each of these was kept before issue 30: the before file was compiled only when the
    task had a `file_path_before`, and a clean compile of the after file was enough."""
    repo = _repo(tmp_path)
    mid = HEAD + "Lemma double_two :\n"  # a created file's chunk ending mid-lemma
    holed = HEAD + GOOD + "Lemma double_three : double 3 = 7.\nAdmitted.\n"
    tasks = {
        "good": (HEAD, HEAD + GOOD, "B.v"),
        "new-file-first-chunk": ("", HEAD + GOOD, None),
        "mid-lemma": (mid, mid + "  double 2 = 4.\nProof. reflexivity. Qed.\n", None),
        "new-hole": (HEAD + GOOD, holed, "B.v"),
        "broken-after": (HEAD, HEAD + GOOD.replace("reflexivity", "exact I"), "B.v"),
    }
    outcome = validate_run(_run(tmp_path, repo, tasks), "coq")
    got = _results(tmp_path / "run")
    assert {t for t, r in got.items() if r["kept"]} == {"good", "new-file-first-chunk"}
    assert got["mid-lemma"]["reason"] == "before does not compile"
    assert got["mid-lemma"]["before"]["errors"] and "after" not in got["mid-lemma"]
    assert got["new-hole"]["reason"] == "after is not complete"
    assert got["new-hole"]["after"]["compiled"]  # it compiles: the rule of answers refuses it
    assert "double_three" in got["new-hole"]["detail"]
    assert got["broken-after"]["reason"] == "after does not compile"
    assert got["broken-after"]["detail"].startswith("line ")
    assert outcome.kept == 2 and outcome.reasons == {
        "before does not compile": 1,
        "after is not complete": 1,
        "after does not compile": 1,
    }
    assert all(r["rule"] == 2 and r["toolchain"]["version"] for r in got.values())


@pytest.mark.rocq
@needs_coqc
def test_a_deprecation_warning_is_recorded_not_a_reason(tmp_path, monkeypatch) -> None:
    """Rocq 9.2 warns on every `From Coq` of a history written for Coq 8 (the issue's
    huffman case): the task is kept, the warning recorded."""
    monkeypatch.setenv("FORMALBENCH_TOOLCHAIN", "rocq-9.2")
    repo = _repo(tmp_path)
    old_style = "From Coq Require Import Arith.\n" + HEAD
    run = _run(tmp_path, repo, {"warned": (old_style, old_style + GOOD, None)})
    assert validate_run(run, "coq").kept == 1
    result = _results(run)["warned"]
    assert result["kept"] and not result["after"]["errors"]
    warning = result["after"]["warnings"][0]
    assert '"From Coq" has been replaced by "From Stdlib"' in warning


@pytest.mark.coq
@needs_coqc
def test_a_dependency_error_is_kept_whole(tmp_path) -> None:
    """The message of a dependency that does not build, as Coq printed it, whole (it was cut
    at 300 characters, mid-word: `expected to have type "n`)."""
    long_name = "a_rather_long_hypothesis_name_" * 4
    dep = DEP + (
        f"Lemma wrong (n : nat) ({long_name}1 {long_name}2 : n = n) : double n = S n.\n"
        "Proof. exact (eq_refl (double n)). Qed.\n"
    )
    repo = _repo(tmp_path, dep=dep)
    run = _run(tmp_path, repo, {"t": (HEAD, HEAD + GOOD, "B.v")})
    outcome = validate_run(run, "coq")
    result = _results(run)["t"]
    assert result["reason"] == "a dependency does not build" and result["error"]
    detail = result["detail"]
    assert "A.v: line 6: In environment" in detail
    assert len(detail) > 300 and "…" not in detail
    assert detail.rstrip().endswith('"double n = S n".')  # the message's own end
    # the one-line summary shortens at a word, never inside one
    (line,) = outcome.lines()
    assert line.endswith(" …)") and not line.endswith("n …)")


def test_a_created_file_is_chunked_between_commands_only() -> None:
    """Split at blank lines that stand between two commands; a blank line inside a lemma
    (between its statement and its proof) is no place to cut."""
    text = HEAD + (GOOD + "\n") * 3 + SPLIT + "\n" + (GOOD.replace("one", "four") + "\n") * 3
    pairs = chunks("", text, "created", "coq", limit=3)
    assert len(pairs) > 2
    for before, after in pairs:
        for piece in (before, after):
            assert piece.count("Lemma") == piece.count("Qed.")  # every lemma whole
    assert pairs[-1][1] == text
