"""`formalbench construct`: extraction, then the source stages, then the formal stages.

Order of work: (1) extraction (phase 1, deterministic), stored whole once; a rerun reads it
back instead of reading the textbook again, and refuses other extraction settings; (2) the
source stages of every exercise, concurrently (`concurrency` exercises in flight), each
step stored as it finishes; (3) the formal stages (phase 3) on the usable problems, which
keep their own tables in the same file. `stop_after` ends the run after a phase.

A killed run resumes: finished steps are in `construct.sqlite`, model replies answered but
not yet stored are in the run's response cache (`responses.sqlite`). The folder is held by
one process (run.lock); SIGINT/SIGTERM stop the run cleanly (finished steps stay stored)
with exit 130/143; `construct.json` says what ran, with which models and prompts, and how
far it got.

Failures are part of the result, as in `eval`: a selection with no exercise in it is an
InputError before anything is written (the extraction of a new run is made before its
folder is); `stopped_after` names the last phase that was finished, not the one asked
for, so a run whose source stages left exercises unfinished says so; and
`failures` lists the stages in which exercises failed (`failures.run_failures`), which the
command prints at the end and turns into exit 1 when a whole stage failed.
"""

from __future__ import annotations

import asyncio
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formalbench import __version__
from formalbench.backends.base import Backend
from formalbench.backends.sandbox import live_count
from formalbench.core.construct import ConstructProblem, ExtractedExercise
from formalbench.core.errors import InputError
from formalbench.llm.base import BudgetExceededError, ChatModel, ModelCallError
from formalbench.llm.cached import CachedModel
from formalbench.llm.registry import make_model
from formalbench.pipelines.construct.config import SOURCE_STEPS, STEPS, ConstructConfig, Phase
from formalbench.pipelines.construct.failures import StageFailure, run_failures
from formalbench.pipelines.construct.funnel import Funnel, funnel
from formalbench.pipelines.construct.inputs import extract
from formalbench.pipelines.construct.session import SourceSession
from formalbench.pipelines.construct.source import run_source_stages
from formalbench.pipelines.run_dir import (
    RunLock,
    check_run_dir,
    claim_run_dir,
    full_disk_errors,
    read_json_object,
    write_json_atomic,
)
from formalbench.pipelines.stopping import Interrupted, stop_on_signals
from formalbench.store.construct import ConstructStore
from formalbench.store.response_cache import ResponseCache

if TYPE_CHECKING:
    from formalbench.pipelines.construct.formal import Progress

KIND = "construct"
STORE_NAME = "construct.sqlite"
RESPONSES_NAME = "responses.sqlite"
LOG_NAME = "construct.json"


@dataclass
class ConstructResult:
    run_dir: Path
    exercises: int  # extracted (after --pattern / --limit)
    problems: int = 0  # through the source stages
    usable: int = 0
    stopped_after: Phase | None = None  # the last phase finished (None: not even extraction)
    asked: Phase = "formal"  # the last phase asked for (--stop-after)
    funnel: Funnel | None = None
    formal: dict[str, Any] | None = None  # what the formal stages report (see _formal)
    elapsed: float = 0.0
    incomplete: list[str] = field(default_factory=list)  # why some exercises are unfinished
    failures: list[StageFailure] = field(default_factory=list)  # stages with failed exercises
    format_failures: int = 0  # model replies never usable, source and formal stages

    @property
    def finished(self) -> bool:
        """Every phase asked for was done, with no exercise left unfinished."""
        return self.stopped_after == self.asked and not self.incomplete

    @property
    def failed_stages(self) -> list[StageFailure]:
        """The stages in which every exercise failed: the run produced nothing past them."""
        return [f for f in self.failures if f.whole]


def run_construct(
    config: ConstructConfig,
    run_dir: str | Path,
    progress: Progress | None = None,
    *,
    models: Mapping[str, ChatModel] | None = None,
    backend: Backend | None = None,
) -> ConstructResult:
    """Run (or resume) the construct run of `config` in `run_dir`.

    `models` (by step, see config.STEPS) and `backend` let a program use models and a
    backend it built itself; models still go through the run's response cache, and the
    caller keeps ownership of `backend`.
    """
    return asyncio.run(_run(config, Path(run_dir), progress, dict(models or {}), backend))


def _bare_models(config: ConstructConfig, given: dict[str, ChatModel]) -> dict[str, ChatModel]:
    """One model per step (steps naming the same spec share it); nothing is written."""
    if not config.needs_models():
        return {}
    steps = SOURCE_STEPS if config.stop_after == "source" else STEPS
    missing = [s for s in steps if s not in given and not config.models.get(s)]
    if missing:
        raise InputError(
            f"--model: no model for step(s) {', '.join(missing)} "
            "(give --model SPEC, or use --extract-only)"
        )
    made: dict[str, ChatModel] = {}
    out: dict[str, ChatModel] = {}
    for step in steps:
        if step in given:
            out[step] = given[step]
            continue
        spec = config.models[step]
        if spec not in made:
            made[spec] = make_model(spec)
        out[step] = made[spec]
    return out


async def _run(
    config: ConstructConfig,
    root: Path,
    progress: Progress | None,
    given: dict[str, ChatModel],
    given_backend: Backend | None,
) -> ConstructResult:
    start = time.perf_counter()
    check_run_dir(root, KIND)
    bare = _bare_models(config, given)
    # A new run's extraction is made before its folder, so an empty selection writes nothing.
    fresh = None if (root / STORE_NAME).is_file() else await _extract(config)
    lock: RunLock | None = None
    cache: ResponseCache | None = None
    result = ConstructResult(root, 0, asked=config.stop_after)
    hashes: dict[str, str] = {}
    asked = 0
    status = "incomplete"
    try:
        for model in dict.fromkeys(bare.values()):  # one clear error now, before any work
            await model.preflight()
        lock = claim_run_dir(root, KIND)
        with full_disk_errors(root), ConstructStore(root / STORE_NAME) as store:
            try:
                exercises = await _extraction(config, store, progress, fresh)
                result.exercises = len(exercises)
                result.stopped_after = "extract"
                if config.stop_after != "extract":
                    cache = ResponseCache(root / RESPONSES_NAME)
                    models = {step: CachedModel(m, cache) for step, m in bare.items()}
                    session = SourceSession(
                        store=store,
                        models=models,
                        format_retries=config.format_retries,
                        temperature=config.temperature,
                        max_tokens=config.max_tokens,
                        prompt_hashes=hashes,
                    )
                    try:
                        problems = await _guarded(
                            _source(session, exercises, config, progress, result)
                        )
                    finally:
                        asked = session.asked
                    if not result.incomplete:
                        result.stopped_after = "source"
                    if config.stop_after == "formal" and not result.incomplete:
                        usable = [p for p in problems if p.usable]
                        work = _formal(config, root, store, usable, models["formal"], given_backend)
                        result.formal = await _guarded(work(progress))
                        result.stopped_after = "formal"
                status = "finished" if result.finished else "incomplete"
            except Interrupted:
                status = "interrupted"
                raise
            finally:
                if store.extraction_stats() is not None:
                    result.funnel = funnel(store.problems())
                    result.problems = result.funnel.exercises
                    result.usable = result.funnel.usable
                    found = run_failures(store, result.incomplete)
                    result.failures, result.format_failures = found.stages, found.format_failures
                log = _log(config, bare, result, status, hashes, asked)
                _write_log(root, log, time.perf_counter() - start)
    finally:
        if lock is not None:
            lock.release()
        if cache is not None:
            cache.close()
        for model in dict.fromkeys(bare.values()):
            await model.aclose()
        result.elapsed = time.perf_counter() - start
    return result


async def _guarded(job: Any) -> Any:
    """Await `job` with SIGINT/SIGTERM turned into a clean stop (see pipelines.stopping)."""
    work = asyncio.ensure_future(job)
    with stop_on_signals(work, live_count) as caught:
        try:
            return await work
        except asyncio.CancelledError:
            if caught.signum is None:
                raise
            raise Interrupted(caught.signum) from None


async def _extract(config: ConstructConfig) -> tuple[list[ExtractedExercise], dict[str, int]]:
    """The exercises `config` selects from its source, and the counts; an InputError when
    there is none (a run with nothing to do is bad input, as in `eval`)."""
    exercises, stats = await asyncio.to_thread(
        extract, config.source, depth=config.depth, pattern=config.pattern, limit=config.limit
    )
    if not exercises:
        raise InputError(_nothing_selected(config, stats))
    return exercises, stats


def _nothing_selected(config: ConstructConfig, stats: Mapping[str, int]) -> str:
    book = stats.get("book_exercises")
    if config.pattern is None:
        return f"{config.source}: no exercises in it; nothing to construct"
    has = f" (it has {book} exercises)" if book else ""
    return (
        f"--pattern {config.pattern!r}: no exercise of {config.source} matches{has}; "
        "nothing to construct"
    )


async def _extraction(
    config: ConstructConfig,
    store: ConstructStore,
    progress: Progress | None,
    fresh: tuple[list[ExtractedExercise], dict[str, int]] | None = None,
) -> list[ExtractedExercise]:
    """The stored extraction when it was made with the same settings, else `fresh` (made
    before the store was opened) or a new one."""
    identity = config.extraction_identity()
    stored = store.meta("extraction_identity")
    resumed = 0  # an extraction read back from the store is not timed
    if stored is not None and store.extraction_stats() is not None:
        if stored != identity:
            changed = sorted(k for k in identity if stored.get(k) != identity[k])
            raise InputError(
                f"--run-dir {store.path.parent}: holds an extraction made with other "
                f"settings ({', '.join(changed)}); use a new --run-dir or the same settings"
            )
        exercises = store.exercises()
        if not exercises:  # stored by a formalbench that did not refuse an empty selection
            raise InputError(_nothing_selected(config, store.extraction_stats() or {}))
        resumed = len(exercises)
    else:
        exercises, stats = fresh if fresh is not None else await _extract(config)
        store.put_exercises(exercises, stats)
        store.set_meta("extraction_identity", identity)
    if progress is not None:
        progress("extract", len(exercises), len(exercises), resumed)
    return exercises


async def _source(
    session: SourceSession,
    exercises: Sequence[ExtractedExercise],
    config: ConstructConfig,
    progress: Progress | None,
    result: ConstructResult,
) -> list[ConstructProblem]:
    """Every exercise through the source stages; failed model calls are reported in
    `result.incomplete` (the exercise resumes on the next run), not raised."""
    total = len(exercises)
    done = sum(session.store.problem(e.id) is not None for e in exercises)
    if progress is not None:
        progress("source", done, total, done)
    semaphore = asyncio.Semaphore(config.concurrency)
    finished = done

    async def one(index: int, exercise: ExtractedExercise) -> ConstructProblem | None:
        nonlocal finished
        stored = session.store.problem(exercise.id)
        if stored is not None:
            return stored
        async with semaphore:
            try:
                problem = await run_source_stages(session, index, exercise)
            except (ModelCallError, BudgetExceededError) as exc:
                result.incomplete.append(f"{exercise.id}: {exc}")
                return None
        finished += 1
        if progress is not None:
            progress("source", finished, total, done)
        return problem

    outcomes = await asyncio.gather(*(one(i, e) for i, e in enumerate(exercises)))
    return [p for p in outcomes if p is not None]


def _formal(
    config: ConstructConfig,
    root: Path,
    store: ConstructStore,
    usable: list[ConstructProblem],
    model: ChatModel,
    given_backend: Backend | None,
) -> Callable[[Progress | None], Any]:
    """The formal stages (phase 3) on the usable problems; their figures are kept in the
    store (meta `formal`) so the report needs no knowledge of phase 3's tables."""

    async def work(progress: Progress | None) -> dict[str, Any]:
        from formalbench.backends.registry import make_backend
        from formalbench.pipelines.construct.formal import FormalStageConfig, run_formal_stages

        backend = given_backend or make_backend(config.backend, timeout=config.timeout)
        try:
            backend.preflight()  # an assistant that cannot run is one error, up front
            # every setting the run was given reaches phase 3 (not only R and S)
            stage_config = FormalStageConfig(
                repair_rounds=config.repair_rounds,
                review_rounds=config.review_rounds,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                timeout=config.timeout,
                concurrency=config.concurrency,
            )

            def report(stage: str, done: int, total: int, resumed: int = 0) -> None:
                if progress is not None:  # "formal", not "formal: formal"
                    name = "formal" if stage == "formal" else f"formal: {stage}"
                    progress(name, done, total, resumed)

            outcome = await run_formal_stages(
                usable,
                backend=backend,
                model=model,
                run_dir=root,
                config=stage_config,
                progress=report,
            )
        finally:
            if given_backend is None:
                backend.close()
        instances = outcome.instances
        figures = {
            "blocks": _count(outcome.blocks),
            "blocks_compiled": _count(outcome.blocks_compiled),
            "instances": _count(instances),
            "tasks": _count(outcome.tasks),
            "tasks_file": str(outcome.tasks_file),
            "instances_dir": str(outcome.instances_dir),
        }
        store.set_meta("formal", figures)
        return figures

    return work


def _count(value: Any) -> int:
    """A figure phase 3 gives as a number or as the list of the things counted."""
    return int(value) if isinstance(value, int | float) else len(value)


def _log(
    config: ConstructConfig,
    models: dict[str, ChatModel],
    result: ConstructResult,
    status: str,
    hashes: dict[str, str],
    asked: int,
) -> dict[str, Any]:
    return {
        "kind": KIND,
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
        "status": status,
        "stop_after": config.stop_after,
        "stopped_after": result.stopped_after,
        "config": config.model_dump(mode="json"),
        "versions": {
            "formalbench": __version__,
            "python": platform.python_version(),
            "models": {step: m.spec for step, m in models.items()},
        },
        "prompt_hashes": hashes,
        "exercises": result.exercises,
        "problems": result.problems,
        "usable": result.usable,
        "incomplete": result.incomplete,
        "failed_stages": [f.model_dump(mode="json") for f in result.failures],
        "format_failures": result.format_failures,
        "formal": result.formal,
        "steps_asked_this_session": asked,
    }


def _write_log(root: Path, log: dict[str, Any], elapsed: float) -> None:
    """construct.json: what ran, with which versions, models and prompts, how far it got;
    wall time and prompt hashes add up over the sessions of the run."""
    path = root / LOG_NAME
    previous = read_json_object(path) if path.is_file() else {}
    hashes = {**previous.get("prompt_hashes", {}), **log["prompt_hashes"]}
    log["prompt_hashes"] = dict(sorted(hashes.items()))
    log["wall_time_s"] = round(float(previous.get("wall_time_s", 0.0)) + elapsed, 3)
    write_json_atomic(path, log)
