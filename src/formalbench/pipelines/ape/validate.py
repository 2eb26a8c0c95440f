"""Compile validation of mined tasks (`ape mine --backend coq`): which tasks can be attempted.

A task is valid when, in the project at the task's commit (the tree where `ape eval`
compiles its answers: the commit's sources with the dependency closure of the file built),

1. its BEFORE file (`content_before`, the file the model is given) compiles: Coq ran to its
   end and reported no error. A created file's chunk whose start ends mid-lemma fails here
   (issue 30 item 2); an empty before (a new file's first chunk) is the empty file;
2. its AFTER file (`content_after`, the gold) compiles; and
3. the AFTER file is complete against the BEFORE one, by the rule answers are judged by
   (`completeness.judge_completeness`): no declaration rests on an axiom or a hole that no
   declaration of the file before rested on.

Warnings are recorded, never a reason (see `completeness`). Each result also records the Coq
versions the commit declares (`coqversions`) and the toolchain that ran; a task that fails to
compile at a commit made for another Coq than the running one is reported as "made for Coq
X (running Y)", its own failure kept as `cause`/`detail`.

Results are stored one transaction per task in `ape.sqlite` with the rule's number and the
toolchain: a rerun redoes only tasks without a result of this rule on this toolchain.
SIGINT/SIGTERM stop the validation at once (`stopping.stop_threads_on_signals`: running Coq
processes killed, nothing they returned recorded, exit 130/143); the rerun resumes.

Text reaches coqc only through the project's Coq backend (sandboxed, time and memory
limits). Lean would need `lake env lean` in the restored Lake project; no Lean toolchain
exists here, so `--backend lean` stops with the install hint instead of pretending.

`executor="ray"` runs each task's compiles as one Ray task (`RayTasks`); the trees are still
built or restored here, once each, and must be on a filesystem the Ray workers see.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from formalbench.backends.ray_backend import RayWorkerError, check_executor
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.core.records import CheckResult, CheckStatus
from formalbench.pipelines.ape.coqversions import declared_at, made_for
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.mining import STORE_NAME
from formalbench.pipelines.ape.outcome import StageOutcome, shorten
from formalbench.pipelines.ape.project import (
    BuiltTrees,
    GitArchiveProvider,
    ProjectError,
)
from formalbench.pipelines.stopping import Interrupted, stop_threads_on_signals
from formalbench.store.ape import ApeStore

RULE = 2  # 1: after compiled without warning; 2: before and after compile, after complete
DRIFT_CAUSES = frozenset(
    {
        "a dependency does not build",
        "coqdep failed",
        "before does not compile",
        "after does not compile",
    }
)


def judge_in_tree(
    tree: Path, before: str, after: str, path: str, timeout: float = 300.0
) -> dict[str, Any]:
    """Compile `before` and `after` (the file at `path`) in `tree` and judge the pair by the
    rule of the module doc: `{kept, reason, detail, before, after, completeness, version}`."""
    from formalbench.pipelines.ape.completeness import (
        FileView,
        allowed_axioms,
        backend_for,
        compile_record,
        judge_completeness,
        read_view,
    )

    backend = backend_for(tree, timeout, path)
    out: dict[str, Any] = {"kept": False, "version": " ".join(backend.version().split()[:2])}
    if before.strip():
        base = read_view(backend, before, timeout)
    else:  # a new file's first chunk: the empty file, nothing to compile
        base = FileView(CheckResult(backend="coq", status=CheckStatus.ok))
    out["before"] = compile_record(base.result)
    if not base.result.compiled:
        return {**out, "reason": "before does not compile", "detail": _first(base.result)}
    if base.problem:
        return {**out, "reason": "before cannot be read by Coq", "detail": base.problem}
    gold = read_view(backend, after, timeout, guesses=list(base.statements))
    out["after"] = compile_record(gold.result)
    if not gold.result.compiled:
        return {**out, "reason": "after does not compile", "detail": _first(gold.result)}
    policy = VerifierPolicy()
    verdict = judge_completeness(base, gold, policy, allowed_axioms(backend, policy))
    out["completeness"] = verdict
    if not verdict["complete"]:
        return {**out, "reason": "after is not complete", "detail": verdict["reasons"][0]}
    out["kept"] = True
    return out


def _first(result: CheckResult) -> str:
    """The first error of a compile (whole), or how the run ended."""
    if result.status != CheckStatus.ok:
        detail = f": {result.detail}" if result.detail else ""
        return shorten(f"Coq ended with {result.status.value}{detail}")
    if result.errors:
        first = result.errors[0]
        where = f"line {first.line}: " if first.line else ""
        return shorten(where + first.message)
    return "no error reported"


def validate_task(
    trees: BuiltTrees,
    task: dict[str, Any],
    judge: Callable[[Path, str, str, str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Build (or restore) the tree of the task's commit with the file's closure here, and
    judge the task's before and after files in it with `judge` (here, or as a Ray task)."""
    path = task["file_path_after"]
    judge = judge or judge_in_tree
    out: dict[str, Any] = {"kept": False, "rule": RULE}
    try:
        tree = trees.tree_for(task["commit_hash"], path)
        out.update(judge(tree, task["content_before"], task["content_after"], path))
    except (InputError, ToolchainMissingError, RayWorkerError):
        raise  # bad input, or the executor failed (not the task): the run stops, resumable
    except ProjectError as exc:  # no project file, coqdep failed, a dependency does not build
        out.update(error=True, reason=exc.reason, detail=shorten(str(exc)))
    except Exception as exc:  # anything else: recorded with its type, never silent
        out.update(error=True, reason=type(exc).__name__, detail=shorten(str(exc)))
    return out


def _with_versions(result: dict[str, Any], coq: dict[str, Any] | None) -> dict[str, Any]:
    """The result with the commit's declared Coq versions; a compile failure outside the
    declared range is reported as made for that Coq."""
    if coq is None:
        return result
    result = {**result, "coq": coq}
    if not result["kept"] and coq["fits"] is False and result.get("reason") in DRIFT_CAUSES:
        cause = result["reason"]
        result.update(
            reason=made_for(coq), cause=cause, detail=f"{cause}: {result.get('detail', '')}"
        )
    return result


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
    `workers` tasks are validated at once (coqc processes; builds of one tree are shared),
    here (`executor="local"`) or as Ray tasks (`"ray"`, on the cluster at `ray_address`).
    Raises `Interrupted` on SIGINT/SIGTERM, after recording every validation that ended."""
    check_executor(executor, ray_address)
    if language == "lean":
        if shutil.which("lake") is None:
            raise ToolchainMissingError(
                "`lake` not found on PATH; install a Lean toolchain with elan to validate Lean"
            )
        raise InputError("--backend lean: Lean projects are not supported by this build yet")
    run_dir = Path(run_dir).resolve()  # every path below reaches coqc, coqdep or bwrap
    store_path = run_dir / STORE_NAME
    if not store_path.is_file():
        raise InputError(f"{run_dir}: not an ape run (no {STORE_NAME}); run `ape mine` first")
    from formalbench.store.snapshots import SnapshotStore
    from formalbench.toolchains.toolchain import resolve

    chain = resolve()
    running = {"name": chain.name, "version": chain.version()}
    with ApeStore(store_path) as store:
        if store.get_meta("language") != "coq":
            raise InputError(f"{run_dir}: --backend coq on a {store.get_meta('language')} run")
        repo = GitRepo.open(store.get_meta("source"), run_dir)
        try:
            snapshots = SnapshotStore(Path(snapshot_store or run_dir / "snapshots").resolve())
            trees = BuiltTrees(GitArchiveProvider(repo.path), run_dir / "trees", snapshots)
            tasks = list(store.kept_tasks())[: limit if limit is not None else None]
            declared: dict[str, dict[str, Any] | None] = {}
            for task in tasks:
                sha = task["commit_hash"]
                if sha not in declared:
                    found = declared_at(repo, sha)
                    declared[sha] = None if found is None else found.as_dict(running["version"])
            store.set_meta("validation_toolchain", running)
            outcome = _validate(
                store,
                trees,
                tasks,
                declared,
                running,
                on_progress,
                workers,
                executor,
                ray_address,
            )
        finally:
            repo.close()
    return outcome


def _reusable(done: Any, running: dict[str, str]) -> bool:
    """A stored result a rerun keeps: made by this rule on this toolchain."""
    return isinstance(done, dict) and done.get("rule") == RULE and done.get("toolchain") == running


def _validate(
    store: ApeStore,
    trees: BuiltTrees,
    tasks: list[dict[str, Any]],
    declared: dict[str, dict[str, Any] | None],
    running: dict[str, str],
    on_progress: Callable[[int, int, str, int], None] | None,
    workers: int,
    executor: str,
    ray_address: str | None,
) -> StageOutcome:
    outcomes: dict[str, dict[str, Any]] = {}
    for task in tasks:
        done = store.get_result(task["id"], "validate")
        if _reusable(done, running):
            outcomes[task["id"]] = done
    todo = [t for t in tasks if t["id"] not in outcomes]
    judge: Callable[[Path, str, str, str], dict[str, Any]] = judge_in_tree
    if executor == "ray" and todo:
        from formalbench.backends.ray_backend import RayTasks

        ray_tasks = RayTasks(workers, ray_address)

        def judge(tree: Path, before: str, after: str, path: str) -> dict[str, Any]:
            return ray_tasks.run(judge_in_tree, tree, before, after, path, 300.0)

    running_now = 0
    count_lock = threading.Lock()
    record_lock = threading.Lock()

    def report() -> None:
        if on_progress:
            kept = sum(bool(r["kept"]) for r in outcomes.values())
            # tasks validated by an earlier run count as done, never in the rate
            on_progress(len(outcomes), len(tasks), f"{kept} kept", len(tasks) - len(todo))

    with stop_threads_on_signals("validations", lambda: running_now) as caught:

        def one(task: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal running_now
            if caught.signum is not None:
                return None
            with count_lock:
                running_now += 1
            try:
                result = validate_task(trees, task, judge)
            except Exception:
                if caught.signum is not None:  # a tool killed by the stop: not the task's
                    return None
                raise
            finally:
                with count_lock:
                    running_now -= 1
            stamp = {"toolchain": running, "validated_at": datetime.now(UTC).isoformat()}
            result = _with_versions({**result, **stamp}, declared.get(task["commit_hash"]))
            with record_lock:  # a result its killed processes made is never recorded
                if caught.signum is not None:
                    return None
                store.put_result(task["id"], "validate", result)
            return result

        report()
        pool = ThreadPoolExecutor(max_workers=max(1, workers))
        try:
            pending: dict[Future[dict[str, Any] | None], str] = {
                pool.submit(one, task): task["id"] for task in todo
            }
            while pending and caught.signum is None:
                finished, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in finished:
                    task_id = pending.pop(future)
                    if caught.signum is not None:
                        break
                    result = future.result()  # InputError and the like stop the run
                    if result is not None:
                        outcomes[task_id] = result
                        report()
        finally:
            # Ray's waits end only with their task: do not wait for them after a stop
            pool.shutdown(wait=executor != "ray" or caught.signum is None, cancel_futures=True)
    if caught.signum is not None:
        store.set_meta("validation_status", "interrupted")
        raise Interrupted(caught.signum)
    store.set_meta("validation_status", "finished")
    ordered = [outcomes[t["id"]] for t in tasks if t["id"] in outcomes]
    outcome = StageOutcome.of("validation", ordered)
    outcome.notes = version_notes(ordered, running)
    return outcome


def version_notes(results: list[dict[str, Any]], running: dict[str, str]) -> list[str]:
    """One line per declared Coq range the running toolchain is outside: how many tasks
    come from such commits and how many of them were not kept."""
    by_range: dict[str, list[int]] = {}
    for result in results:
        coq = result.get("coq")
        if coq and coq.get("fits") is False:
            seen = by_range.setdefault(coq["declared"], [0, 0])
            seen[0] += 1
            seen[1] += not result["kept"]
    return [
        f"{n} task(s) from commits made for Coq {declared} ({lost} not kept); running "
        f"{running['name']} (Coq {running['version']}): `--toolchain NAME` runs another "
        "installed Coq"
        for declared, (n, lost) in sorted(by_range.items(), key=lambda kv: -kv[1][0])
    ]
