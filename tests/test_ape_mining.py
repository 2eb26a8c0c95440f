"""Mining APE tasks from the two shipped histories, and the filter pieces on their own."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.pipelines.ape.filters import (
    chunks,
    conventional_type,
    counts,
    denoise,
    diff_lines,
    inferred_type,
)
from formalbench.pipelines.ape.mining import mine
from formalbench.pipelines.ape.task import ApeTask, MineConfig
from tests.shared_data import DATA, needs_shared

HIST = DATA / "git-histories"


def test_conventional_prefix_parsing() -> None:
    assert conventional_type("feat: add x") == "feat"
    assert conventional_type("fix(List)!: wrong lemma") == "fix"
    assert conventional_type("feature: typo'd") == "feat"
    assert conventional_type("faet(Data/Nat): more") == "feat"
    assert conventional_type("chore:bump toolchain") == "chore"
    assert conventional_type("Add lemma foo: bar") is None  # a colon later is not a prefix
    assert inferred_type("Fix the statement of foo") == "fix"
    assert inferred_type("[B] Prove compactness") == "feat"


def test_counts_and_denoised_diff() -> None:
    before = "import A\n-- note\ntheorem t : 1 = 1 := rfl\n"
    after = "import B\n/- other note -/\ntheorem t : 1 = 1 := by rfl\n\ntheorem u : 2 = 2 := rfl\n"
    c = counts(diff_lines(before, after))
    assert (c.added_lines, c.total_changes) == (5, 8)
    assert c.pure_changes == 7  # difflib puts the 3 removals first: only the last pairs up
    f = counts(diff_lines(denoise(before, "lean"), denoise(after, "lean")))
    assert (f.added_lines, f.total_changes, f.pure_changes) == (2, 3, 2)


def test_modified_file_chunks_carry_earlier_hunks() -> None:
    before = "".join(f"Lemma l{i} : True. Proof. exact I. Qed.\n\n\n\n\n\n\n\n" for i in range(40))
    after = before
    for i in range(0, 40, 4):
        after = after.replace(f"Lemma l{i} :", f"Lemma l{i}' :")
    parts = chunks(before, after, "modified", "coq", limit=3)
    assert len(parts) == 10
    assert parts[0][0] == before and parts[-1][1] == after
    for (_, a), (b, _) in zip(parts, parts[1:], strict=False):
        assert a == b
    assert chunks(before, after, "modified", "coq", limit=100) == [(before, after)]


def _store_rows(run_dir) -> int:
    with sqlite3.connect(run_dir / "ape.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM ape_tasks").fetchone()[0]


@needs_shared
@pytest.mark.parametrize(
    ("bundle", "language", "limit"), [("coq-topology", "coq", 80), ("batteries", "lean", 40)]
)
def test_mine_shipped_history_and_resume(tmp_path, bundle, language, limit) -> None:
    cfg = MineConfig(limit=limit)
    summary = mine(HIST / f"{bundle}.bundle", tmp_path, cfg)
    assert summary.language == language
    assert summary.commits == limit  # every walked commit is recorded
    left = list(summary.funnel.values())
    assert left == sorted(left, reverse=True)
    assert summary.candidates >= left[0] >= left[-1] == summary.kept > 0
    assert summary.candidates > summary.kept  # an inferred history may keep every type
    from formalbench.store.ape import ApeStore

    with ApeStore(tmp_path / "ape.sqlite") as store:
        kept = [ApeTask(**t) for t in store.kept_tasks()]
    suffix = ".v" if language == "coq" else ".lean"
    for task in kept:
        assert task.type in cfg.kept_types(task.type_source)
        assert task.file_path_after.endswith(suffix)
        assert 1 <= task.filtered.pure_changes <= cfg.thresholds(language).max_filtered_changes
        assert task.content_before != task.content_after
        assert task.gold_diff.startswith("--- a/")
    # resume: forget the newest commits, walk again, same funnel and no duplicate rows
    rows = _store_rows(tmp_path)
    with sqlite3.connect(tmp_path / "ape.sqlite") as conn:
        conn.execute("DELETE FROM ape_tasks WHERE position < 5")
        conn.execute("DELETE FROM ape_commits WHERE position < 5")
    again = mine(HIST / f"{bundle}.bundle", tmp_path, cfg)
    assert again.funnel == summary.funnel and _store_rows(tmp_path) == rows


@needs_shared
def test_cli_mine_json_and_report(tmp_path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "ape",
            "mine",
            str(HIST / "coq-topology.bundle"),
            "--run-dir",
            str(tmp_path),
            "--limit",
            "30",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["commits"] == 30 and data["language"] == "coq"
    assert data["funnel"]["commit_type"] <= data["candidates"]
    res = runner.invoke(app, ["report", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["kind"] == "ape" and report["funnel"] == data["funnel"]
    bad = runner.invoke(app, ["ape", "mine", str(tmp_path / "nope"), "--run-dir", str(tmp_path)])
    assert bad.exit_code == 2


def test_created_file_chunks_pack_blocks() -> None:
    after = "".join(
        f"(* block {i}\n\n inside *)\nLemma l{i} : True.\nProof. exact I. Qed.\n\n"
        for i in range(30)
    )
    parts = chunks("", after, "created", "coq", limit=20)
    assert len(parts) > 1 and parts[0][0] == "" and parts[-1][1] == after
    for (_, a), (b, _) in zip(parts, parts[1:], strict=False):
        assert a == b
    # blank lines inside a comment never split a block
    assert all("(* block" not in a.rsplit("\n\n", 1)[-1] or "*)" in a for _, a in parts)


@needs_shared
def test_lean_source_roots_follow_the_lakefile(tmp_path) -> None:
    from formalbench.pipelines.ape.gitsource import GitRepo
    from formalbench.pipelines.ape.sources import lean_filter, lean_roots

    repo = GitRepo.open(HIST / "batteries.bundle", tmp_path)
    first = repo.git("log", "--diff-filter=A", "--format=%H", "HEAD", "--", "lakefile.lean")
    first = first.split()[-1]  # the first lakefile: a lakefile.lean naming the library Std
    head = repo.git("rev-parse", "HEAD").strip()
    assert lean_roots(repo, first) == ["Std"]
    assert "Batteries" in lean_roots(repo, head)
    accept = lean_filter(repo, head)
    assert accept("Batteries/Data/List/Basic.lean")
    assert not accept("BatteriesTest/list.lean") and not accept("Batteries.lean")
    repo.close()
