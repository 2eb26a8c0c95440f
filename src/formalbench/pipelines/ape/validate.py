"""Compile validation: keep a task only if its "after" compiles cleanly in the project at the
commit (and record whether its "before" compiles in the project at the parent).

Cleanly = the assistant ran to the end with no error and no warning, read from the backend's
structured diagnostics (`CheckResult.errors` / `.warnings`), never from text matching. Text
reaches coqc only through the project's Coq backend (sandboxed, time and memory limits).
Lean would need `lake env lean` in the restored Lake project; no Lean toolchain exists here,
so `--validate lean` stops with the install hint instead of pretending.

`executor="ray"` (`ape mine --validate coq --executor ray`) runs the compiles as Ray tasks
(`backends.ray_backend.RayTasks`), for histories of thousands of commits; the project trees
are still built or restored here, once each, and must be on a filesystem the Ray workers see
(always so on a local Ray; a shared folder on a cluster).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from formalbench.backends.ray_backend import RayWorkerError, check_executor
from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.mining import STORE_NAME
from formalbench.pipelines.ape.project import BuiltTrees, GitArchiveProvider, coq_project_args
from formalbench.store.ape import ApeStore


def check_in_tree(tree: Path, content: str, timeout: float = 300.0) -> dict[str, Any]:
    """Compile `content` with the tree's flags; the verdict and its diagnostics."""
    from formalbench.backends.coq import CoqBackend

    _, flags = coq_project_args(tree)
    backend = CoqBackend(args=flags, timeout=timeout, workers=1)
    result = backend.check(content)
    return {
        "status": str(result.status),
        "errors": [d.message[:500] for d in result.errors],
        "warnings": [d.message[:500] for d in result.warnings],
        "complete": result.status == "ok" and not result.errors and not result.warnings,
        "version": " ".join(backend.version().split()[:2]),  # "coq 8.16.1", without flags
    }


def validate_run(
    run_dir: Path,
    language: str,
    limit: int | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
    snapshot_store: Path | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
) -> int:
    """Validate the kept tasks of a mined run (newest first); returns how many passed.
    `workers` tasks are compiled at once (coqc processes; builds of one tree are shared),
    here (`executor="local"`) or as Ray tasks (`"ray"`, on the cluster at `ray_address`)."""
    check_executor(executor, ray_address)
    if language == "lean":
        if shutil.which("lake") is None:
            raise ToolchainMissingError(
                "`lake` not found on PATH; install a Lean toolchain with elan to validate Lean"
            )
        raise InputError("--validate lean: Lean projects are not supported by this build yet")
    store_path = Path(run_dir) / STORE_NAME
    if not store_path.is_file():
        raise InputError(f"{run_dir}: not an ape run (no {STORE_NAME}); run `ape mine` first")
    with ApeStore(store_path) as store:
        if store.get_meta("language") != "coq":
            raise InputError(f"{run_dir}: --validate coq on a {store.get_meta('language')} run")
        repo = GitRepo.open(store.get_meta("source"), Path(run_dir))
        snapshots = None
        from formalbench.store.snapshots import SnapshotStore

        snapshots = SnapshotStore(snapshot_store or Path(run_dir) / "snapshots")
        trees = BuiltTrees(GitArchiveProvider(repo.path), Path(run_dir) / "trees", snapshots)
        tasks = list(store.kept_tasks())[: limit if limit is not None else None]
        passed = finished = 0
        compile_in: Callable[[Path, str], dict[str, Any]] = check_in_tree
        if executor == "ray" and tasks:
            from formalbench.backends.ray_backend import RayTasks

            ray_tasks = RayTasks(workers, ray_address)

            def compile_in(tree: Path, content: str) -> dict[str, Any]:
                return ray_tasks.run(check_in_tree, tree, content)

        def one(task: dict[str, Any]) -> dict[str, Any]:
            done = store.get_result(task["id"], "validate")
            if done is None:
                done = validate_task(trees, task, compile_in)
                store.put_result(task["id"], "validate", done)
            return done

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for done in pool.map(one, tasks):
                finished += 1
                passed += bool(done["kept"])
                if on_progress:
                    on_progress(finished, len(tasks), f"{passed} kept")
        return passed


def validate_task(
    trees: BuiltTrees,
    task: dict[str, Any],
    compile_in: Callable[[Path, str], dict[str, Any]] = check_in_tree,
) -> dict[str, Any]:
    """Build (or restore) the trees of the task's commit and parent here, and compile the
    files after and before in them with `compile_in` (here, or as a Ray task)."""
    path_after = task["file_path_after"]
    out: dict[str, Any] = {"kept": False}
    try:
        after_tree = trees.tree_for(task["commit_hash"], path_after)
        out["after"] = compile_in(after_tree, task["content_after"])
        if task.get("file_path_before"):
            before_tree = trees.tree_for(task["parent_commit_hash"], task["file_path_before"])
            out["before"] = compile_in(before_tree, task["content_before"])
    except (InputError, ToolchainMissingError, RayWorkerError):
        raise  # bad input, or the executor failed (not the task): the run stops, resumable
    except Exception as exc:  # a dependency that does not build: the task cannot be validated
        out["reason"] = f"{type(exc).__name__}: {exc}"[:500]
        return out
    out["kept"] = bool(out["after"]["complete"])
    if not out["kept"]:
        out["reason"] = "after does not compile cleanly"
    return out
