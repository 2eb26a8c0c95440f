"""Before an evaluation starts: can each task compile here, and was it made for this Lean?

Why: a task whose original does not compile on this machine (Coq's `Require` of a library
that is not installed, a Lean import the project lacks) fails every attempt for a reason
that has nothing to do with the prover, and such failures used to be counted as the model's
hallucinated identifiers. The preflight compiles each task's original once, with its holes
admitted, and the tasks that do not compile are recorded as `environment` failures (one
attempt per sample, so a resume does not redo them and `--retry-errors` does) instead of
being attempted; the report leaves them out of pass@k with a warning.

Lean tasks carry the toolchain and Mathlib revision they were made for; a project with
other versions elaborates them differently, so a run says so before it starts and refuses
unless `--allow-version-mismatch` is given.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from formalbench.backends.base import Backend
from formalbench.backends.coq_prepare import sentences
from formalbench.checking.holes import fill_holes, find_holes
from formalbench.core.errors import InputError
from formalbench.core.records import (
    Attempt,
    AttemptError,
    CheckResult,
    CheckStatus,
    Diagnostic,
    ErrorKind,
    Language,
    Task,
    Verdict,
)

_QED = re.compile(r"\bQed\.")
_SHOWN_ERRORS = 3
_BATCH = 40  # Coq originals compiled in one file (a failing batch is redone one by one)
# The least time an original gets: the run's `--timeout` is for attempts (a portfolio's 10 s),
# and an original cut short here is attempted, so a statement that does not compile would be
# counted as the prover's failure (PutnamBench's mathcomp-analysis files on a loaded machine).
MIN_TIMEOUT = 120.0


def admitted_original(task: Task) -> str:
    """The task's file with every hole admitted, as the assistant accepts it: Lean holes
    become `sorry` (a warning), Coq holes `admit.` with the proofs closed by `Admitted.`
    (a proof left open, or closed by `Qed` after an `admit`, is an error in coqc)."""
    text = task.source_text
    holes = find_holes(text, task.language)
    if task.language == Language.lean:
        return fill_holes(text, task.language, ["sorry"] * len(holes))
    filled = fill_holes(text, task.language, ["admit."] * len(holes))
    # Every proof ends admitted: only whether the file elaborates matters here.
    return _QED.sub("Admitted.", filled)


def _why(result: CheckResult) -> str | None:
    """Why `result` says the original does not compile here, or None. Only a run that the
    assistant finished counts: a crash, a kill for memory or a timeout may not happen again,
    so those tasks are attempted (and such attempts are `--retry-errors`' to redo)."""
    if result.status != CheckStatus.ok or not result.errors:
        return None
    return " ".join(result.errors[0].message.split())


async def check_originals(
    backend: Backend, tasks: Sequence[Task], timeout: float
) -> dict[str, tuple[str, list[Diagnostic]]]:
    """task id -> (why, error diagnostics) for each task whose original does not compile.

    Loading a Coq library costs more than checking a statement (about 2 s for `Reals` on a
    busy machine), so Coq originals are first compiled together, each (header included)
    inside a `Module` of its own; only a batch that fails is checked again task by task.
    A batch must never pass a task that fails alone, so it holds only tasks that `Require`
    the same libraries (a library stays loaded after its module ends; the rest of a task's
    state, its imports, scopes and options, is undone at `End`), and a task that changes
    state beyond its module (`Global`, `#[global]`, `Load`, `Declare`) is checked alone."""
    timeout = max(timeout, MIN_TIMEOUT)
    coq = [t for t in tasks if t.language == Language.coq]
    singles = [t for t in tasks if t.language != Language.coq]
    groups: dict[tuple[str, ...], list[Task]] = {}
    for task in coq:
        key = _loads(task)
        if key is None:
            singles.append(task)
        else:
            groups.setdefault(key, []).append(task)
    batches: list[list[Task]] = []
    for group in groups.values():
        if len(group) == 1:
            singles += group
        else:
            batches += [group[i : i + _BATCH] for i in range(0, len(group), _BATCH)]

    async def batch(group: list[Task]) -> list[Task]:
        limit = min(timeout * len(group), max(timeout, 300.0))
        result = await backend.acheck(_batch_text(group), timeout=limit)
        return [] if result.compiled else group

    retried = await asyncio.gather(*(batch(g) for g in batches))
    singles += [task for group in retried for task in group]

    async def one(task: Task) -> CheckResult:
        return await backend.acheck(admitted_original(task), timeout=timeout)

    results = await asyncio.gather(*(one(t) for t in singles))
    failed: dict[str, tuple[str, list[Diagnostic]]] = {}
    for task, result in zip(singles, results, strict=True):
        why = _why(result)
        if why is not None:
            failed[task.id] = (why, result.errors[:_SHOWN_ERRORS])
    return failed


_BEYOND_MODULE = frozenset({"Global", "global", "Load", "Declare"})


def _loads(task: Task) -> tuple[str, ...] | None:
    """The task's `Require` sentences (comments left out, spacing normalised), sorted: tasks
    with the same ones load the same libraries. None when the task must be checked alone."""
    requires: set[str] = set()
    for sentence in sentences(task.source_text):
        words = [token.text for token in sentence]
        if _BEYOND_MODULE.intersection(words):
            return None
        if "Require" in words:
            requires.add(" ".join(words))
    return tuple(sorted(requires))


def _batch_text(group: list[Task]) -> str:
    """Each task's admitted file in a module of its own, so that no two tasks' names meet."""
    return "\n".join(
        f"Module FormalbenchPreflight{i}.\n{admitted_original(task).rstrip()}\n"
        f"End FormalbenchPreflight{i}.\n"
        for i, task in enumerate(group)
    )


def environment_attempt(
    task: Task, sample: int, solver: str, why: str, diagnostics: list[Diagnostic]
) -> Attempt:
    """What is recorded for one sample of a task whose original does not compile here."""
    return Attempt(
        task_id=task.id,
        solver=solver,
        sample=sample,
        verdict=Verdict(passed=False, diagnostics=diagnostics, static_only=True),
        error=AttemptError(
            kind=ErrorKind.environment,
            message=f"the task's original does not compile here: {why}",
        ),
    )


def version_mismatches(backend: Backend, tasks: Sequence[Task]) -> list[tuple[str, list[str]]]:
    """(sentence, task ids) for each way the tasks' Lean versions differ from the backend's
    project; empty when they agree, when the tasks name no versions, or when the backend
    cannot say (it has no `mismatch`, as a remote server)."""
    mismatch = getattr(backend, "mismatch", None)
    if mismatch is None:
        return []
    found: dict[str, list[str]] = {}
    asked: dict[tuple[str | None, str | None], str | None] = {}
    for task in tasks:
        if task.language != Language.lean or not (task.toolchain or task.library_revision):
            continue
        key = (task.toolchain, task.library_revision)
        if key not in asked:
            asked[key] = mismatch(*key)
        reason = asked[key]
        if reason:
            found.setdefault(reason, []).append(task.id)
    return list(found.items())


def refuse_version_mismatch(found: list[tuple[str, list[str]]]) -> None:
    """The one-line error of a run whose Lean project differs from its tasks' versions."""
    if not found:
        return
    sentence, ids = found[0]
    more = f" (and {len(found) - 1} other difference(s))" if len(found) > 1 else ""
    raise InputError(
        f"{len(ids)} task(s) ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}): "
        f"{sentence}{more}; use a project with those versions (--lean-project) "
        "or --allow-version-mismatch to run them anyway"
    )
