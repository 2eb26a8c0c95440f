"""`formalbench formalize`: informal problems in, ranked candidate statements out, resumable.

Order of work: (7) split multi-part problems when asked, (1) label categories, (2) fetch
each category's context, then per problem, concurrently: (3-4) every model's k chains of
translation and compile repair, (5) alignment against the problem's decomposition with
fresh re-translations of misaligned statements, and, once all chains of the problem are
done, (6) the judge's ranked summary. Model calls run on asyncio (bounded by the endpoint
limits and by `concurrency` chains in flight); compiles run on the backend's own pool.

Everything lands in `<run dir>/formalize.sqlite` as it is made, and model replies in the
run's response cache, so a rerun redoes nothing finished and re-asks nothing answered.
"""

from __future__ import annotations

import asyncio
import platform
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from formalbench import __version__
from formalbench.backends.base import Backend
from formalbench.backends.registry import language_of, make_backend
from formalbench.backends.sandbox import live_count
from formalbench.core.formalization import Problem
from formalbench.judge.ranking import rank_candidates
from formalbench.llm.base import BudgetExceededError, ChatModel, ModelCallError
from formalbench.llm.budget import BudgetedModel, TokenBudget, UsageMeter
from formalbench.llm.cached import CachedModel
from formalbench.llm.embeddings import OpenAIEmbedder, make_embedder
from formalbench.llm.prompts import load_prompt
from formalbench.llm.registry import make_model
from formalbench.pipelines.formalize.candidates import chain_done, run_chain
from formalbench.pipelines.formalize.config import FormalizeConfig, check_resumable
from formalbench.pipelines.formalize.context import (
    load_fewshot,
    prepare_contexts,
    read_context_file,
)
from formalbench.pipelines.formalize.label import label_problem
from formalbench.pipelines.formalize.metrics import (
    FormalizeFiles,
    FormalizeMetrics,
    write_metrics,
)
from formalbench.pipelines.formalize.problems import load_problems, resolve_problems_path
from formalbench.pipelines.formalize.reference import compare_run
from formalbench.pipelines.formalize.session import FormalizeObserver, Session
from formalbench.pipelines.formalize.split import split_problem
from formalbench.pipelines.formalize.statement import ASSISTANTS
from formalbench.pipelines.run_dir import (
    RunLock,
    check_run_dir,
    claim_run_dir,
    full_disk_errors,
    read_json_object,
    write_json_atomic,
)
from formalbench.pipelines.stopping import Interrupted, stop_on_signals
from formalbench.store.formalize import FormalizeStore
from formalbench.store.response_cache import ResponseCache

T = TypeVar("T")
PROMPTS = {
    "translate": "formalize_translate",
    "repair": "formalize_repair",
    "label": "formalize_label",
    "split": "formalize_split",
    "decompose": "judge_decompose",
    "align": "judge_align",
    "rank": "judge_rank",
    "fix_json": "structured_fix",
}


@dataclass
class FormalizeResult:
    files: FormalizeFiles
    problems: int
    finished: int  # problems with their summary
    elapsed: float
    incomplete: list[str] = field(default_factory=list)  # why some problems are not finished
    notes: list[str] = field(default_factory=list)
    metrics: FormalizeMetrics | None = None  # the run's numbers, as written to metrics.json

    @property
    def failed_stages(self) -> list[str]:
        """One line per stage in which every item failed (the command exits 1): no
        candidate compiled, or none of the compiled ones could be judged."""
        return failed_stages(self.metrics) if self.metrics is not None else []


def failed_stages(metrics: FormalizeMetrics) -> list[str]:
    """See `FormalizeResult.failed_stages`; read from the run's numbers."""
    models = metrics.models
    candidates = sum(m.candidates + m.retranslations for m in models)
    compiled = sum(m.compiled + m.retranslations_compiled for m in models)
    unreadable = sum(m.format_failures for m in models)
    judged = sum(m.judged + m.retranslations_judged for m in models)
    judge_errors = sum(m.judge_errors for m in models)
    lines = []
    if candidates and not compiled:
        why = f"{unreadable} model repl(ies) held no usable code" if unreadable else "see report"
        lines.append(f"compile: 0 of {candidates} candidates compiled ({why})")
    if compiled and not judged and judge_errors:
        lines.append(
            f"alignment: 0 of {compiled} compiled candidates could be judged "
            f"({judge_errors} unreadable judgement(s))"
        )
    return lines


def run_formalize(
    config: FormalizeConfig,
    run_dir: str | Path,
    observer: FormalizeObserver | None = None,
    *,
    models: dict[str, ChatModel] | None = None,
    backend: Backend | None = None,
) -> FormalizeResult:
    """Run (or resume) the formalize run described by `config` in `run_dir`.

    `models` (keyed by the specs of `config`) and `backend` let a program use models and a
    backend it built itself (an in-process model, a configured pool); they still go through
    the run's response cache and budget, and the caller keeps ownership of `backend`.
    """
    files = FormalizeFiles(Path(run_dir))
    return asyncio.run(_run(config, files, observer, models or {}, backend))


def _bare_models(config: FormalizeConfig, given: dict[str, ChatModel]) -> dict[str, ChatModel]:
    """One model per distinct spec (ensemble and judge), before the run's cache and budget:
    building them writes nothing, so a refused start leaves the run folder untouched."""
    specs = dict.fromkeys([*config.models, config.judge])
    return {spec: given[spec] if spec in given else make_model(spec) for spec in specs}


def _models(
    config: FormalizeConfig,
    files: FormalizeFiles,
    meter: UsageMeter,
    bare: dict[str, ChatModel],
) -> dict[str, ChatModel]:
    """The models of `bare` under the run's response cache and token budget."""
    budget = TokenBudget(config.run_token_budget, name="run")
    cache = ResponseCache(files.responses)
    return {
        spec: BudgetedModel(CachedModel(model, cache), budget, meter)
        for spec, model in bare.items()
    }


async def _run(
    config: FormalizeConfig,
    files: FormalizeFiles,
    observer: FormalizeObserver | None,
    given: dict[str, ChatModel],
    given_backend: Backend | None,
) -> FormalizeResult:
    start = time.perf_counter()
    config = config.model_copy(
        update={"problems": str(resolve_problems_path(config.problems).resolve())}
    )
    inputs = load_problems(config.problems)
    language = language_of(config.backend)
    if config.context_file:  # a typo in --context is refused before the folder is touched
        read_context_file(config.context_file)
    check_run_dir(files.root, "formalize")
    meter = UsageMeter()
    models = _bare_models(config, given)
    embedder: OpenAIEmbedder | None = None
    backend: Backend | None = given_backend
    lock: RunLock | None = None
    try:
        for model in models.values():  # one clear error now, not a run of failed candidates
            await model.preflight()
        if config.retriever == "embed" and config.embed_model and not config.context_file:
            embedder = make_embedder(config.embed_model)
            await embedder.preflight()
        if backend is None:
            options = {"timeout": config.timeout, **config.backend_options}
            backend = make_backend(config.backend, workers=config.workers, **options)
        backend.preflight()  # an unreachable verification server is one error, up front
        lock = claim_run_dir(files.root, "formalize")  # held until the run ends
        models = _models(config, files, meter, models)
        with full_disk_errors(files.root), FormalizeStore(files.store) as store:
            stored = store.config()
            if stored is not None:
                check_resumable(stored.get("identity", {}), config, files.root)
            store.set_config({"identity": config.identity(), "config": config.model_dump()})
            session = Session(
                config=config,
                store=store,
                assistant=ASSISTANTS[language],
                backend=backend,
                models={models[s].spec: models[s] for s in config.models},
                judge=models[config.judge],
                fewshot=load_fewshot(language),
                observer=observer,
                embedder=embedder,
                prompt_hashes={k: load_prompt(v).hash for k, v in PROMPTS.items()},
            )
            work = asyncio.ensure_future(_work(session, inputs))
            with stop_on_signals(work, live_count) as caught:  # SIGINT/SIGTERM: see stopping
                try:
                    result = await work
                except asyncio.CancelledError:
                    if caught.signum is None:
                        raise
                    raise Interrupted(caught.signum) from None  # finished steps stay stored
            # BEq runs coqc: after every chain, and kept in the store (a rerun redoes none)
            await asyncio.to_thread(compare_run, store, backend, language)
            _write_log(files, session, backend, meter, result, time.perf_counter() - start)
            result.metrics = write_metrics(files, store)
    finally:
        if lock is not None:
            lock.release()
        if backend is not None and given_backend is None:
            backend.close()
        for model in models.values():
            await model.aclose()
        if embedder is not None:
            await embedder.aclose()
    result.elapsed = time.perf_counter() - start
    return result


async def _gather(limit: int, jobs: list[Awaitable[T]]) -> list[T | BaseException]:
    semaphore = asyncio.Semaphore(limit)

    async def one(job: Awaitable[T]) -> T:
        async with semaphore:
            return await job

    return await asyncio.gather(*(one(j) for j in jobs), return_exceptions=True)


def _failures(results: list[Any], what: str, ids: list[str]) -> list[str]:
    out = []
    for rid, res in zip(ids, results, strict=True):
        if isinstance(res, ModelCallError | BudgetExceededError):
            out.append(f"{rid}: {what}: {res}")
        elif isinstance(res, BaseException):
            raise res
    return out


async def _work(session: Session, inputs: list[Problem]) -> FormalizeResult:
    config, store = session.config, session.store
    limit = config.concurrency or max(1, session.backend.workers) * 4
    incomplete: list[str] = []
    problems = inputs
    if config.split_parts:
        cuts = await _gather(limit, [split_problem(session, p) for p in inputs])
        incomplete += _failures(cuts, "split", [p.id for p in inputs])
        problems = [q for cut in cuts if isinstance(cut, list) for q in cut]
    store.add_problems(problems)
    problems = [store.problem(p.id) or p for p in problems]
    labelled = await _gather(limit, [label_problem(session, p) for p in problems])
    incomplete += _failures(labelled, "category", [p.id for p in problems])
    problems = [p for p in labelled if isinstance(p, Problem)]
    language = session.assistant.language
    notes = await prepare_contexts(store, config, language, problems, session.embedder)

    chains = [(p.id, m, s) for p in problems for m in session.models for s in range(config.samples)]
    saved = {c.id: c for c in store.candidates()}
    done = {key for key in chains if chain_done(saved, *key, config)}
    if session.observer is not None:
        session.observer.started(len(chains), len(done))
    semaphore = asyncio.Semaphore(limit)  # chains in flight, over all problems
    outcomes = await asyncio.gather(*(_problem(session, p, semaphore, done) for p in problems))
    incomplete += [why for why in outcomes if why]
    finished = sum(store.summary(p.id) is not None for p in problems)
    files = FormalizeFiles(store.path.parent)
    return FormalizeResult(files, len(problems), finished, 0.0, incomplete, notes)


async def _problem(
    session: Session,
    problem: Problem,
    semaphore: asyncio.Semaphore,
    done: set[tuple[str, str, int]],
) -> str | None:
    """Formalize one problem; returns why it is unfinished, or None. `done` holds the
    chains finished before this run (not reported to the observer again)."""
    store, config = session.store, session.config
    if store.summary(problem.id) is not None:
        return None

    async def chain(model: ChatModel, sample: int) -> Any:
        async with semaphore:
            last = await run_chain(session, problem, model, sample)
        new = (problem.id, model.spec, sample) not in done
        if session.observer is not None and last.error is None and new:
            session.observer.chain_done(last)
        return last

    lasts = await asyncio.gather(
        *(chain(m, s) for m in session.models.values() for s in range(config.samples))
    )
    errors = [c.error for c in lasts if c.error]
    if errors:
        return f"{problem.id}: {len(errors)} candidate(s) stopped by a model error: {errors[0]}"
    # a fixed order (model as given, sample, translation): the summary's prompt must not
    # depend on which chain finished first, or a resumed run would ask the judge again
    order = {spec: i for i, spec in enumerate(session.models)}
    candidates = sorted(
        store.candidates(problem.id),
        key=lambda c: (order.get(c.model, len(order)), c.model, c.sample, c.translation),
    )
    try:
        summary = await rank_candidates(
            session.judge,
            problem,
            candidates,
            decomposition=await session.decomposition(problem),
            assistant=session.assistant.name,
            fence=session.assistant.fence,
            **session.judge_options(),
        )
    except (ModelCallError, BudgetExceededError) as exc:
        return f"{problem.id}: summary: {exc}"
    store.put_summary(summary)
    return None


def _write_log(
    files: FormalizeFiles,
    session: Session,
    backend: Backend,
    meter: UsageMeter,
    result: FormalizeResult,
    elapsed: float,
) -> None:
    """formalize.json: what ran, with which versions and prompts, and what it cost."""
    previous: dict[str, Any] = {}
    if files.log.is_file():
        previous = read_json_object(files.log)
    usage = meter.summary()
    log = {
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
        "status": "finished" if result.finished == result.problems else "incomplete",
        "config": session.config.model_dump(mode="json"),
        "versions": {
            "formalbench": __version__,
            "python": platform.python_version(),
            "backend": backend.version(),
            "models": list(session.models),
            "judge": session.judge.spec,
        },
        "prompt_hashes": dict(sorted(session.prompt_hashes.items())),
        "problems": result.problems,
        "finished": result.finished,
        "incomplete": result.incomplete,
        "notes": result.notes,
        "wall_time_s": round(previous.get("wall_time_s", 0.0) + elapsed, 3),
        "token_usage_this_session": usage,
        "token_usage_sessions": [*previous.get("token_usage_sessions", []), usage],
        "embedding_tokens": previous.get("embedding_tokens", 0)
        + (session.embedder.tokens if isinstance(session.embedder, OpenAIEmbedder) else 0),
    }
    write_json_atomic(files.log, log)
