"""APE evaluation: for each benchmark task, N patches from the model, each repaired and
applied by DiffRepair, passed through the verifier's gate, compiled by the real assistant in
the project at the commit, and (when it is complete: clean compile, and no declaration rests
on an axiom or hole the file before did not have, `completeness`) graded by the judge (4
samples, vote rule). Results are stored per task; a task already evaluated with N samples is skipped.
"""

from __future__ import annotations

import asyncio
import difflib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.llm.base import ChatModel, Message, ModelCallError
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


@dataclass
class EvalOutcome:
    """What `evaluate_run` did: tasks attempted, those with a judged pass, and the samples
    that ended in an error (a failed call, no readable judge grade), by reason."""

    tasks: int = 0
    solved: int = 0
    error_tasks: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    samples: int = 0
    examples: dict[str, str] = field(default_factory=dict)

    def single_reason(self) -> str | None:
        """The reason, when every sample of every task ended in that one error."""
        if self.samples and sum(self.errors.values()) == self.samples and len(self.errors) == 1:
            return next(iter(self.errors))
        return None


def evaluate_run(
    run_dir: Path,
    model: ChatModel,
    samples: int,
    judge: ChatModel | None = None,
    on_progress: Callable[[int, int, str, int], None] | None = None,
    limit: int | None = None,
    retry_errors: bool = False,
) -> EvalOutcome:
    """Evaluate the benchmark tasks (newest first, the first `limit`). A task stored with
    `samples` samples is kept; one stored with fewer is evaluated again (the response cache
    answers the samples it had). Samples stored as errors are kept on a plain rerun and
    redone with `retry_errors`, as `synthesize_run` does."""
    with _open(run_dir) as store:
        synth = store.results("synthesize")
        if not synth:
            raise InputError(f"{run_dir}: no instructions yet; run `ape synthesize` first")
        tasks = [t for t in _validated(store) if (synth.get(t["id"]) or {}).get("kept")][:limit]
        repo = GitRepo.open(store.get_meta("source"), Path(run_dir))
        from formalbench.store.snapshots import SnapshotStore

        trees = BuiltTrees(
            GitArchiveProvider(repo.path),
            Path(run_dir) / "trees",
            SnapshotStore(Path(run_dir) / "snapshots"),
        )
        out = EvalOutcome(tasks=len(tasks))
        resumed = 0
        for n, task in enumerate(tasks, start=1):
            done = store.get_result(task["id"], "eval")
            labels = synth[task["id"]]
            if done is None or len(done.get("samples", [])) < samples:
                done = asyncio.run(
                    _evaluate_task(model, judge or model, trees, task, labels, samples)
                )
                store.put_result(task["id"], "eval", done)
            elif retry_errors and any(s.get("error") for s in done["samples"]):
                done = asyncio.run(
                    _evaluate_task(
                        model, judge or model, trees, task, labels, samples, done["samples"]
                    )
                )
                store.put_result(task["id"], "eval", done)
            else:
                resumed += 1  # stored by an earlier run: not timed
            out.solved += any(s.get("judged") for s in done["samples"])
            failed = [s for s in done["samples"] if s.get("error")]
            out.error_tasks += bool(failed)
            out.samples += len(done["samples"])
            for s in failed:
                reason = str(s.get("reason") or "no reason recorded")
                out.errors[reason] += 1
                out.examples.setdefault(reason, str(s.get("detail") or ""))
            if on_progress:
                on_progress(n, len(tasks), f"{out.solved} solved", resumed)
        repo.close()
        return out


async def _evaluate_task(
    model: ChatModel,
    judge: ChatModel,
    trees: BuiltTrees,
    task: dict[str, Any],
    labels: dict[str, Any],
    samples: int,
    previous: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """`samples` samples of one task; with `previous`, only its error samples are redone
    (attempt + 1: the judge asks with new seeds, so the cache cannot serve the same
    unreadable replies again) and the others kept."""
    messages = load_prompt("ape_patch").render(
        path=task["file_path_after"],
        language=task["language"],
        instruction=labels["instruction"],
        content_before=task["content_before"],
    )
    count = samples if previous is None else len(previous)
    temperature = 0.0 if count == 1 else 0.6
    redo = [i for i in range(count) if previous is None or previous[i].get("error")]
    attempts = {i: 0 if previous is None else int(previous[i].get("attempt", 0)) + 1 for i in redo}
    replies = await asyncio.gather(*(_patch(model, messages, temperature, i) for i in redo))
    out = list(previous) if previous is not None else [{} for _ in range(count)]
    baseline: dict[str, FileView] = {}  # Coq's view of the file before, read once per task
    for i, reply in zip(redo, replies, strict=True):
        if isinstance(reply, ModelCallError):
            failed = _sample_error(model, "the model call failed", str(reply), attempts[i])
            out[i] = {"applied": False, "compiled": False, "judged": False, **failed}
            continue
        out[i] = await _one_sample(judge, trees, task, labels, reply, baseline, attempts[i])
    return {"samples": out}


async def _patch(
    model: ChatModel, messages: list[Message], temperature: float, seed: int
) -> str | ModelCallError:
    """Sample `seed`'s reply, or the failed call (an error sample, not a verdict)."""
    try:
        reply = await model.generate(messages, n=1, temperature=temperature, seed=seed)
    except ModelCallError as exc:
        return exc
    return reply[0].text if reply else ""


def _sample_error(model: ChatModel, reason: str, detail: str, attempt: int) -> dict[str, Any]:
    """A sample that is no verdict on the answer: kept for `--retry-errors`, counted by
    reason (as synthesis records its errors)."""
    return {
        "error": True,
        "reason": reason,
        "detail": detail[:300],
        "model": model.spec,
        "attempt": attempt,
    }


async def _one_sample(
    judge: ChatModel,
    trees: BuiltTrees,
    task: dict[str, Any],
    labels: dict[str, Any],
    reply: str,
    baseline: dict[str, FileView],
    attempt: int = 0,
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
    try:
        verdict = await judge_patch(
            judge, labels["instruction"], before, patch, task["language"], first_seed=attempt * 4
        )
    except ModelCallError as exc:
        return {**sample, **_sample_error(judge, "the judge call failed", str(exc), attempt)}
    if not any(verdict["grades"]):  # no judge sample graded anything: no verdict was given
        error = _sample_error(judge, "unreadable judge replies", "no grade in any sample", attempt)
        return {**sample, **error, "judge": verdict}
    sample["judge"] = verdict
    sample["judged"] = verdict["passed"]
    if attempt:
        sample["attempt"] = attempt
    return sample
