"""Compile validation on real coqc: a small-closure file of the shipped Coq library."""

from __future__ import annotations

import shutil

import pytest

from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.project import BuiltTrees, GitArchiveProvider, dependency_closure
from formalbench.pipelines.ape.validate import validate_task
from formalbench.store.snapshots import SnapshotStore
from formalbench.toolchains.toolchain import resolve
from tests.shared_data import DATA, needs_shared

pytestmark = [
    needs_shared,
    pytest.mark.coq,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed"),
]
COMMIT = "40256857a47f"  # "InverseImage.v": a file whose dependencies are few
PATH = "theories/ZornsLemma/InverseImage.v"


# the APE build and validation on the toolchain are tested on rocq-9.2 by test_ape_layout.py
COQ8_HISTORY = pytest.mark.host(
    "the shipped coq-topology history (written for Coq 8) does not build on Rocq 9.2: `Expected a single focused goal`"
)


def _task(repo: GitRepo) -> dict:
    sha = repo.git("rev-parse", COMMIT).strip()
    parent = repo.git("rev-parse", f"{sha}^").strip()
    return {
        "id": f"{COMMIT}:{PATH}:0",
        "commit_hash": sha,
        "parent_commit_hash": parent,
        "file_path_before": PATH,
        "file_path_after": PATH,
        "content_before": repo.show(parent, PATH),
        "content_after": repo.show(sha, PATH),
    }


@COQ8_HISTORY
def test_validation_keeps_gold_and_drops_broken_after(tmp_path) -> None:
    repo = GitRepo.open(DATA / "git-histories" / "coq-topology.bundle", tmp_path)
    task = _task(repo)
    snapshots = SnapshotStore(tmp_path / "snap")
    trees = BuiltTrees(GitArchiveProvider(repo.path), tmp_path / "trees", snapshots)
    good = validate_task(trees, task)
    assert good["kept"], good
    assert good["after"]["compiled"] and good["before"]["compiled"]
    assert good["completeness"]["complete"] and good["rule"] == 2
    assert good["version"].startswith(f"coq {resolve().version()}")
    broken = dict(
        task, content_after=task["content_after"] + "\nLemma bad : False.\nProof. exact I. Qed.\n"
    )
    bad = validate_task(trees, broken)
    assert not bad["kept"] and bad["reason"] == "after does not compile"
    assert bad["after"]["errors"] and bad["after"]["status"] == "ok"
    # the built tree is in the snapshot store: a fresh work folder restores it, .vo included
    tree = trees.tree_for(task["commit_hash"], PATH)
    closure = dependency_closure(tree, PATH)
    assert closure and all((tree / (f[:-2] + ".vo")).is_file() for f in closure)
    assert any(i.startswith(f"coq-{task['commit_hash']}") for i in snapshots.ids())
    again = BuiltTrees(GitArchiveProvider(repo.path), tmp_path / "trees2", snapshots)
    restored = again.tree_for(task["commit_hash"], PATH)
    assert all((restored / (f[:-2] + ".vo")).is_file() for f in closure)
    repo.close()


@COQ8_HISTORY
def test_validate_run_two_workers_share_one_build(tmp_path) -> None:
    from formalbench.pipelines.ape.validate import validate_run
    from formalbench.store.ape import ApeStore

    bundle = DATA / "git-histories" / "coq-topology.bundle"
    repo = GitRepo.open(bundle, tmp_path)
    good = _task(repo)
    repo.close()
    broken = dict(
        good, id=good["id"] + "-broken", content_after=good["content_after"] + "\nFail.\n"
    )
    with ApeStore(tmp_path / "ape.sqlite") as store:
        store.set_meta("source", str(bundle))
        store.set_meta("language", "coq")
        store.put_commit(
            good["commit_hash"], 0, "feat", [(t["id"], None, t) for t in (good, broken)]
        )
    seen: list[tuple[int, int]] = []
    outcome = validate_run(
        tmp_path, "coq", workers=2, on_progress=lambda d, t, s, r: seen.append((d, t))
    )
    assert outcome.kept == 1 and seen[-1] == (2, 2)
    assert outcome.reasons == {"after does not compile": 1}
    with ApeStore(tmp_path / "ape.sqlite") as store:
        results = store.results("validate")
    assert results[good["id"]]["kept"] and not results[broken["id"]]["kept"]
    built = list((tmp_path / "trees" / "built").iterdir())
    assert len([p for p in built if p.name.startswith(f"coq-{good['commit_hash']}")]) == 1


@pytest.mark.ray
@COQ8_HISTORY
def test_validate_run_compiles_on_ray(tmp_path, monkeypatch) -> None:
    """`--executor ray`: the trees are built here, the compiles run as Ray tasks on a local
    Ray, and the verdicts are the same as with the thread pool."""
    ray = pytest.importorskip("ray")
    from formalbench.backends import ray_backend
    from formalbench.pipelines.ape.validate import validate_run
    from formalbench.store.ape import ApeStore

    bundle = DATA / "git-histories" / "coq-topology.bundle"
    repo = GitRepo.open(bundle, tmp_path)
    good = _task(repo)
    repo.close()
    broken = dict(
        good, id=good["id"] + "-broken", content_after=good["content_after"] + "\nFail.\n"
    )
    with ApeStore(tmp_path / "ape.sqlite") as store:
        store.set_meta("source", str(bundle))
        store.set_meta("language", "coq")
        store.put_commit(
            good["commit_hash"], 0, "feat", [(t["id"], None, t) for t in (good, broken)]
        )
    ran: list[str] = []
    real_run = ray_backend.RayTasks.run

    def counted(self, func, *args):
        ran.append(func.__name__)
        return real_run(self, func, *args)

    monkeypatch.setattr(ray_backend.RayTasks, "run", counted)
    # (Ray stays up for the session's other Ray tests, as theirs does: a restart costs ~10 s)
    kept = validate_run(tmp_path, "coq", workers=2, executor="ray").kept
    assert ray.is_initialized()
    assert kept == 1
    assert ran == ["judge_in_tree"] * 2  # before and after of each task, on Ray
    with ApeStore(tmp_path / "ape.sqlite") as store:
        results = store.results("validate")
    assert results[good["id"]]["kept"] and results[good["id"]]["completeness"]["complete"]
    assert not results[broken["id"]]["kept"] and results[broken["id"]]["after"]["errors"]
