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
from formalbench.pipelines.ape.outcome import StageOutcome
from formalbench.pipelines.ape.project import (
    BuiltTrees,
    GitArchiveProvider,
    ProjectError,
    coq_project_args,
)
from formalbench.store.ape import ApeStore


def check_in_tree(
    tree: Path, content: str, timeout: float = 300.0, path: str | None = None
) -> dict[str, Any]:
    """Compile `content` with the tree's flags (and those of `path`'s library, when the
    project gives libraries their own); the verdict and its diagnostics."""
    from formalbench.backends.coq import CoqBackend

    _, flags = coq_project_args(Path(tree).resolve(), path)
    backend = CoqBackend(args=flags, timeout=timeout, workers=1)
    result = backend.check(content)
    return {
        "status": str(result.status),
        "errors": [d.message[:500] for d in result.errors],
        "warnings": [d.message[:500] for d in result.warnings],
        "complete": result.status == "ok" and not result.errors and not result.warnings,
        "version": " ".join(backend.version().split()[:2]),  # "coq 8.16.1", without flags
    }


def _check_file(tree: Path, content: str, path: str) -> dict[str, Any]:
    return check_in_tree(tree, content, path=path)


def validate_run(
    run_dir: Path,
    language: str,
    limit: int | None = None,
    on_progress: Callable[[int, int, str, int], None] | None = None,
    snapshot_store: Path | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
) -> StageOutcome:
    """Validate the kept tasks of a mined run (newest first); what became of them.
    `workers` tasks are compiled at once (coqc processes; builds of one tree are shared),
    here (`executor="local"`) or as Ray tasks (`"ray"`, on the cluster at `ray_address`)."""
    check_executor(executor, ray_address)
    if language == "lean":
        if shutil.which("lake") is None:
            raise ToolchainMissingError(
                "`lake` not found on PATH; install a Lean toolchain with elan to validate Lean"
            )
        raise InputError("--validate lean: Lean projects are not supported by this build yet")
    run_dir = Path(run_dir).resolve()  # every path below reaches coqc, coqdep or bwrap
    store_path = run_dir / STORE_NAME
    if not store_path.is_file():
        raise InputError(f"{run_dir}: not an ape run (no {STORE_NAME}); run `ape mine` first")
    with ApeStore(store_path) as store:
        if store.get_meta("language") != "coq":
            raise InputError(f"{run_dir}: --validate coq on a {store.get_meta('language')} run")
        repo = GitRepo.open(store.get_meta("source"), run_dir)
        snapshots = None
        from formalbench.store.snapshots import SnapshotStore

        snapshots = SnapshotStore(Path(snapshot_store or run_dir / "snapshots").resolve())
        trees = BuiltTrees(GitArchiveProvider(repo.path), run_dir / "trees", snapshots)
        tasks = list(store.kept_tasks())[: limit if limit is not None else None]
        passed = finished = 0
        outcomes: list[dict[str, Any]] = []
        compile_in: Callable[[Path, str, str], dict[str, Any]] = _check_file
        if executor == "ray" and tasks:
            from formalbench.backends.ray_backend import RayTasks

            ray_tasks = RayTasks(workers, ray_address)

            def compile_in(tree: Path, content: str, path: str) -> dict[str, Any]:
                return ray_tasks.run(check_in_tree, tree, content, 300.0, path)

        stored = {t["id"] for t in tasks if store.get_result(t["id"], "validate") is not None}
        resumed = 0
        if on_progress:  # the total before the first task, which may take minutes
            on_progress(0, len(tasks), "", 0)

        def one(task: dict[str, Any]) -> dict[str, Any]:
            done = store.get_result(task["id"], "validate")
            if done is None:
                done = validate_task(trees, task, compile_in)
                store.put_result(task["id"], "validate", done)
            return done

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for task, done in zip(tasks, pool.map(one, tasks), strict=True):
                finished += 1
                resumed += task["id"] in stored  # validated by an earlier run: not timed
                passed += bool(done["kept"])
                outcomes.append(done)
                if on_progress:
                    on_progress(finished, len(tasks), f"{passed} kept", resumed)
        return StageOutcome.of("validation", outcomes)


def validate_task(
    trees: BuiltTrees,
    task: dict[str, Any],
    compile_in: Callable[[Path, str, str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build (or restore) the trees of the task's commit and parent here, and compile the
    files after and before in them with `compile_in` (here, or as a Ray task)."""
    path_after = task["file_path_after"]
    compile_in = compile_in or _check_file
    out: dict[str, Any] = {"kept": False}
    try:
        after_tree = trees.tree_for(task["commit_hash"], path_after)
        out["after"] = compile_in(after_tree, task["content_after"], path_after)
        if task.get("file_path_before"):
            before_tree = trees.tree_for(task["parent_commit_hash"], task["file_path_before"])
            out["before"] = compile_in(
                before_tree, task["content_before"], task["file_path_before"]
            )
    except (InputError, ToolchainMissingError, RayWorkerError):
        raise  # bad input, or the executor failed (not the task): the run stops, resumable
    except ProjectError as exc:  # no project file, coqdep failed, a dependency does not build
        out.update(error=True, reason=exc.reason, detail=str(exc)[:500])
        return out
    except Exception as exc:  # anything else: recorded with its type, never silent
        out.update(error=True, reason=type(exc).__name__, detail=str(exc)[:500])
        return out
    out["kept"] = bool(out["after"]["complete"])
    if not out["kept"]:
        first = (out["after"]["errors"] or out["after"]["warnings"] or [out["after"]["status"]])[0]
        out.update(reason="after does not compile cleanly", detail=first[:500])
    return out
