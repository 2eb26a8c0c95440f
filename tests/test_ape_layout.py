"""`ape mine` reads a Coq project's load path from every convention, at each revision:
`_CoqProject`, the older `Make`, dune's `coq.theory`, a plain Makefile's `-R`/`-Q`; and a
relative `--run-dir` validates with real coqc (paths handed to the sandbox are absolute)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.pipelines.ape.coqlayout import read_layout
from formalbench.pipelines.ape.mining import mine
from formalbench.pipelines.ape.task import MineConfig
from formalbench.store.ape import ApeStore

needs_coqc = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")

LEMMA_A = """Definition double (n : nat) : nat := n + n.

Lemma double_zero : double 0 = 0.
Proof. reflexivity. Qed.
"""
LEMMA_B = """Require Import Lib.A.

Lemma double_two : double 2 = 4.
Proof.
  unfold double.
  simpl.
  reflexivity.
Qed.
"""
LEMMA_C = """Require Import Lib.A.

Lemma double_succ : forall n, double (S n) = S (S (double n)).
Proof.
  intros n.
  unfold double.
  simpl.
  rewrite <- plus_n_Sm.
  reflexivity.
Qed.
"""


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "GIT_AUTHOR_DATE": "2020-01-01T00:00:00",
        "GIT_COMMITTER_DATE": "2020-01-01T00:00:00",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def _commit(repo: Path, message: str, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        path = repo / name
        if text is None:
            _git(repo, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        _git(repo, "add", name)
    _git(repo, "commit", "-q", "-m", message)


def _history(root: Path) -> Path:
    """One library through four conventions: Make, dune, Makefile, _CoqProject; each era
    adds one lemma file in its own library folder."""
    repo = root / "lib"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, "Add the double function", {"Make": "-R . Lib\nA.v\n", "A.v": LEMMA_A})
    _commit(repo, "Add double_two", {"B.v": LEMMA_B, "Make": "-R . Lib\nA.v\nB.v\n"})
    dune = "(coq.theory\n (name Lib)\n (theories Stdlib)\n (flags (:standard -w -notation-overridden)))\n"
    _commit(
        repo,
        "Move to dune",
        {"Make": None, "A.v": None, "B.v": None, "theories/A.v": LEMMA_A},
    )
    _commit(repo, "Add dune files", {"theories/dune": dune, "dune-project": "(lang dune 3.0)\n"})
    _commit(repo, "Prove double_two again", {"theories/B.v": LEMMA_B})
    _commit(
        repo,
        "Build with make",
        {"theories/dune": None, "Makefile": "SRC := theories\nCOQFLAGS = -Q $(SRC) Lib\n"},
    )
    _commit(repo, "Prove double_succ", {"theories/C.v": LEMMA_C})
    _commit(repo, "Add a _CoqProject", {"_CoqProject": "-Q theories Lib\n"})
    _commit(repo, "Add double_succ twin", {"theories/D.v": LEMMA_C.replace("succ", "succ2")})
    _commit(repo, "Update the README", {"README.md": "A library.\n"})
    return repo


def test_layout_of_each_convention() -> None:
    files = {
        "_CoqProject": "-R theories Top\n-arg -w -arg -deprecated\ntheories/X.v\n",
        "Make": "-I .\n-R . Old\nX.v\n",
        "a/dune": "(include_subdirs qualified)\n(coq.theory (name A.B) (theories C))\n; x\n",
        "c/dune": "(coq.theory (name C))\n",
        "Makefile": "LIB := Mk # the name\nall:\n\tcoqc -R src $(LIB) src/X.v\n",
    }

    def layout(*present: str):
        return read_layout(lambda p: files.get(p) if p in present else None, lambda: list(present))

    cp = layout("_CoqProject", "Make")
    assert cp and cp.origin == "_CoqProject" and cp.contains("theories/X.v")
    assert not cp.contains("theories/Y.v")  # files listed: only those
    assert cp.flags() == ["-R", "theories", "Top", "-w", "-deprecated"]
    make = layout("Make", "a/dune")
    assert make and make.origin == "Make" and make.flags(options=False) == ["-R", ".", "Old"]
    dune = layout("a/dune", "c/dune", "Makefile")
    assert dune and dune.origin == "dune" and dune.outside == ()  # C is the project's own
    assert dune.contains("a/sub/Y.v") and dune.contains("c/Z.v") and not dune.contains("c/d/Z.v")
    mk = layout("Makefile")
    assert mk and mk.origin == "Makefile" and mk.flags() == ["-R", "src", "Mk"]
    assert layout("README") is None


def test_mining_reads_the_load_path_of_every_era(tmp_path) -> None:
    repo = _history(tmp_path)
    summary = mine(repo, tmp_path / "run", MineConfig(type_source="inferred"))
    assert summary.language == "coq"
    with ApeStore(tmp_path / "run" / "ape.sqlite") as store:
        kept = {t["file_path_after"]: t for t in store.kept_tasks()}
        dropped = dict(
            store.conn.execute("SELECT id, dropped_at FROM ape_tasks WHERE dropped_at IS NOT NULL")
        )
    # one lemma file per era became a task: Make (B.v), dune (theories/B.v),
    # Makefile (theories/C.v), _CoqProject (theories/D.v) (a root commit has no diff)
    assert {"B.v", "theories/B.v", "theories/C.v", "theories/D.v"} <= set(kept)
    # the one commit with no project file at all (between Make and dune) is not a library
    assert [t for t, why in dropped.items() if why == "library_path" and t.endswith(".v")] == [
        t for t in dropped if t.endswith(":theories/A.v")
    ]
    assert not any("README" in t for t in kept)


@pytest.mark.coq
@needs_coqc
def test_relative_run_dir_validates_in_each_era(tmp_path, monkeypatch) -> None:
    _history(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app,
        ["ape", "mine", "lib", "--run-dir", "runs/ape", "--type-source", "inferred"]
        + ["--backend", "coq", "--json"],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    with ApeStore(tmp_path / "runs/ape/ape.sqlite") as store:
        checked = store.results("validate")
    # every lemma-adding task compiles in its own era's layout, found by coqdep there
    assert out["validated"] == len(checked) == 4, checked
    paths = {tid.split(":")[1] for tid in checked}
    assert paths == {"B.v", "theories/B.v", "theories/C.v", "theories/D.v"}
    assert out["validation"]["reasons"] == {}


@pytest.mark.coq
@needs_coqc
def test_stage_where_every_task_fails_alike_says_why_and_exits_1(tmp_path, monkeypatch) -> None:
    repo = tmp_path / "lib"
    repo.mkdir()
    _git(repo, "init", "-q")
    broken = LEMMA_A.replace("reflexivity", "exact I")  # the dependency does not build
    _commit(repo, "Add the double function", {"_CoqProject": "-R . Lib\n", "A.v": broken})
    _commit(repo, "Add double_two", {"B.v": LEMMA_B})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app,
        ["ape", "mine", "lib", "--run-dir", "runs/ape", "--type-source", "inferred"]
        + ["--backend", "coq", "--limit", "1"],
    )
    assert result.exit_code == 1, result.output
    assert "validation failed for every task (1): a dependency does not build" in result.stderr
    assert "A.v" in result.stderr  # the example detail names the file


def test_sandbox_runs_in_a_relative_folder(tmp_path, monkeypatch) -> None:
    """bwrap binds and enters only absolute paths: a relative folder is made absolute."""
    from formalbench.backends.sandbox import run_limited

    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    out = run_limited(["sh", "-c", "pwd; echo $HOME"], cwd="work", timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(tmp_path / "work"), str(tmp_path / "work" / ".home")]
