"""APE evaluation: for each benchmark task, N patches from the model, each repaired and
applied by DiffRepair, passed through the verifier's gate, compiled by the real assistant in
the project at the commit, and (when it is complete: clean compile, and no declaration rests
on an axiom or hole the file before did not have, `completeness`) graded by the judge (4
samples, vote rule). Results are stored per task; a task already evaluated with N samples is skipped.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.llm.base import ChatModel
from formalbench.llm.prompts import load_prompt
from formalbench.pipelines.ape.completeness import FileView, check_answer
from formalbench.pipelines.ape.completeness import baseline as before_view
from formalbench.pipelines.ape.diffrepair import apply_reply
from formalbench.pipelines.ape.gate import gate_findings
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.judge import judge_patch
from formalbench.pipelines.ape.mining import STORE_NAME
from formalbench.pipelines.ape.outcome import StageOutcome
from formalbench.pipelines.ape.project import BuiltTrees, GitArchiveProvider
from formalbench.pipelines.ape.synthesize import synthesize_task
from formalbench.store.ape import ApeStore


def _open(run_dir: Path) -> ApeStore:
    path = Path(run_dir) / STORE_NAME
    if not path.is_file():
        raise InputError(f"{run_dir}: not an ape run (no {STORE_NAME}); run `ape mine` first")
    return ApeStore(path)


def _validated(store: ApeStore) -> list[dict[str, Any]]:
    """Mined tasks that passed compile validation (all mined ones if none was run)."""
    tasks = list(store.kept_tasks())
    checked = store.results("validate")
    if checked:
        tasks = [t for t in tasks if checked.get(t["id"], {}).get("kept")]
    return tasks


def synthesize_run(
    run_dir: Path,
    model: ChatModel,
    judge: ChatModel | None = None,
    limit: int | None = None,
    on_progress: Callable[[int, int, str, int], None] | None = None,
    retry_errors: bool = False,
) -> StageOutcome:
    """Instructions for the validated tasks. A stored verdict is kept; a stored error (an
    unreadable reply, a failed call) is redone only with `retry_errors`, e.g. with another
    model, so a rerun neither pays twice nor keeps a model's failure for good."""
    with _open(run_dir) as store:
        tasks = _validated(store)[:limit]
        kept = resumed = 0
        results: list[dict[str, Any]] = []
        for n, task in enumerate(tasks, start=1):
            done = store.get_result(task["id"], "synthesize")
            if done is None or (retry_errors and done.get("error")):
                attempt = 0 if done is None else int(done.get("attempt", 0)) + 1
                done = asyncio.run(synthesize_task(model, task, judge, attempt=attempt))
                store.put_result(task["id"], "synthesize", done)
            else:
                resumed += 1  # stored by an earlier run: not timed
            kept += bool(done.get("kept"))
            results.append(done)
            if on_progress:
                on_progress(n, len(tasks), f"{kept} kept", resumed)
        return StageOutcome.of("synthesis", results)


def evaluate_run(
    run_dir: Path,
    model: ChatModel,
    samples: int,
    judge: ChatModel | None = None,
    on_progress: Callable[[int, int, str, int], None] | None = None,
) -> int:
    """Evaluate every benchmark task; returns how many got at least one judged pass."""
    with _open(run_dir) as store:
        synth = store.results("synthesize")
        if not synth:
            raise InputError(f"{run_dir}: no instructions yet; run `ape synthesize` first")
        by_id = {t["id"]: t for t in _validated(store)}
        tasks = [by_id[tid] for tid, s in synth.items() if s.get("kept") and tid in by_id]
        repo = GitRepo.open(store.get_meta("source"), Path(run_dir))
        from formalbench.store.snapshots import SnapshotStore

        trees = BuiltTrees(
            GitArchiveProvider(repo.path),
            Path(run_dir) / "trees",
            SnapshotStore(Path(run_dir) / "snapshots"),
        )
        solved = resumed = 0
        for n, task in enumerate(tasks, start=1):
            done = store.get_result(task["id"], "eval")
            if done is None or len(done.get("samples", [])) < samples:
                done = asyncio.run(
                    _evaluate_task(model, judge or model, trees, task, synth[task["id"]], samples)
                )
                store.put_result(task["id"], "eval", done)
            else:
                resumed += 1  # stored by an earlier run: not timed
            solved += any(s.get("judged") for s in done["samples"])
            if on_progress:
                on_progress(n, len(tasks), f"{solved} solved", resumed)
        repo.close()
        return solved


async def _evaluate_task(
    model: ChatModel,
    judge: ChatModel,
    trees: BuiltTrees,
    task: dict[str, Any],
    labels: dict[str, Any],
    samples: int,
) -> dict[str, Any]:
    messages = load_prompt("ape_patch").render(
        path=task["file_path_after"],
        language=task["language"],
        instruction=labels["instruction"],
        content_before=task["content_before"],
    )
    temperature = 0.0 if samples == 1 else 0.6
    replies = await asyncio.gather(
        *(model.generate(messages, n=1, temperature=temperature, seed=i) for i in range(samples))
    )
    out = []
    baseline: dict[str, FileView] = {}  # Coq's view of the file before, read once per task
    for reply in replies:
        text = reply[0].text if reply else ""
        out.append(await _one_sample(judge, trees, task, labels, text, baseline))
    return {"samples": out}


async def _one_sample(
    judge: ChatModel,
    trees: BuiltTrees,
    task: dict[str, Any],
    labels: dict[str, Any],
    reply: str,
    baseline: dict[str, FileView],
) -> dict[str, Any]:
    before = task["content_before"]
    result = apply_reply(reply, before, path=task["file_path_after"], language=task["language"])
    sample: dict[str, Any] = {"apply": result.summary(), "applied": result.applied}
    sample.update(compiled=False, judged=False)
    if not result.applied or result.content is None:
        return sample
    findings = gate_findings(before, result.content, task["language"])
    if findings:
        sample["gate"] = [f"{f.reason}: {f.message}"[:200] for f in findings]
        return sample
    tree = await asyncio.to_thread(trees.tree_for, task["commit_hash"], task["file_path_after"])
    if "before" not in baseline:
        baseline["before"] = await asyncio.to_thread(before_view, tree, before)
    check = await asyncio.to_thread(check_answer, tree, baseline["before"], result.content)
    sample["check"] = check
    sample["compiled"] = bool(check["complete"])
    if not sample["compiled"]:
        return sample
    patch = "\n".join(
        difflib.unified_diff(
            before.splitlines(), result.content.splitlines(), "a", "b", n=3, lineterm=""
        )
    )
    verdict = await judge_patch(judge, labels["instruction"], before, patch, task["language"])
    sample["judge"] = verdict
    sample["judged"] = verdict["passed"]
    return sample
