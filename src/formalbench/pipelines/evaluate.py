"""`formalbench eval`: run a solver over a benchmark, verify every attempt, store it, resume.

The loop is a fixed number of asyncio workers pulling (task, sample) pairs from one
iterator, so memory stays flat however many attempts a run has. Model calls of one attempt
overlap the proof-assistant checks of others: solvers verify through `Backend.acheck`,
which runs on the backend's own bounded pool (or on Ray actors with `--executor ray`).
A Coq verdict runs whole where the assistant runs (`Backend.on_assistant`): with Ray, on
the actor that owns the coqc backend, since the kernel route's compiles and dumps
share files (the cached original's `.vo`, the candidate's); each
actor compiles a task's original once and keeps its `.vo` for later attempts it checks.

Every finished attempt is committed to the run store at once, in its own transaction, and
the store refuses a second attempt for the same (task, solver, sample); so a run killed at
any moment, SIGKILL included, resumes with nothing lost or recorded twice, and a rerun of a
finished run does no work at all.
"""

from __future__ import annotations

import asyncio
import math
import platform
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from formalbench import __version__
from formalbench.backends.base import Backend
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_prepare import preparation_note, prepare_tasks
from formalbench.backends.coq_project import tasks_project, without_build
from formalbench.backends.ray_backend import check_executor
from formalbench.backends.registry import language_of, make_backend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.errors import InputError
from formalbench.core.records import Attempt, Diagnostic, ErrorKind, Language, Task
from formalbench.datasets.filters import select
from formalbench.datasets.loader import Problem, load_tasks
from formalbench.llm.base import ChatModel
from formalbench.llm.budget import BudgetedModel, TokenBudget, UsageMeter
from formalbench.llm.cached import CachedModel
from formalbench.llm.registry import make_model
from formalbench.pipelines.preflight import (
    check_originals,
    environment_attempt,
    refuse_version_mismatch,
    version_mismatches,
)
from formalbench.pipelines.run_config import EvalConfig
from formalbench.pipelines.run_dir import (
    RunLock,
    check_run_dir,
    claim_run_dir,
    full_disk_errors,
)
from formalbench.pipelines.run_files import RunFiles, write_run_log
from formalbench.pipelines.stopping import Interrupted, stop_on_signals
from formalbench.solvers.base import Solver, SolverConfig, make_solver, solver_class
from formalbench.store.response_cache import ResponseCache
from formalbench.store.runs import RunStore
from formalbench.store.verdict_cache import VerdictCache
from formalbench.toolchains.prepare import toolchain_facts
from formalbench.toolchains.toolchain import tasks_toolchain

RUN_BUDGET_NAME = "run"
RETRY_NOTE = "fix that and rerun the same command: they are tried again"


class EvalObserver(Protocol):
    """What the command line shows while a run goes: counts, pass rate, rate."""

    def started(self, total: int, done: int, passed: int) -> None: ...

    def attempt_done(self, attempt: Attempt) -> None: ...


@dataclass
class EvalResult:
    run_id: str
    files: RunFiles
    tasks: int
    samples: int
    new_attempts: int
    skipped_attempts: int  # already in the store from an earlier, interrupted or finished run
    elapsed: float
    stopped: str | None = None  # why the run stopped before the end (budget), else None
    problems: list[Problem] = field(default_factory=list)  # skipped dataset lines
    notes: list[str] = field(default_factory=list)
    # Set when every attempt of the run ended without a verdict (a model, backend, format
    # or environment error): one line with the count and the reasons; the command exits 1.
    failed: str | None = None
    # Samples the preflight recorded as `environment` in this run (their tasks' originals do
    # not compile here): neither new attempts nor done before; tried again on the next run.
    not_attempted: int = 0


def every_attempt_failed(attempts: Sequence[Attempt]) -> str | None:
    """One line when no attempt of `attempts` reached a verdict (each recorded an error):
    `12 of 12 attempts failed before a verdict: model: ... (12)`; else None."""
    if not attempts or any(a.error is None for a in attempts):
        return None
    reasons = Counter(_first_line(str(a.error)) for a in attempts if a.error is not None)
    shown = "; ".join(f"{why} ({n})" for why, n in reasons.most_common(3))
    more = f"; {len(reasons) - 3} other reason(s)" if len(reasons) > 3 else ""
    if all(a.error is not None and a.error.kind == ErrorKind.environment for a in attempts):
        # the preflight's: nothing was attempted, and saying "attempts failed" would not be true
        tasks = len({a.task_id for a in attempts})
        # the line must keep the fix it names (a build command): a longer cut than the others
        reasons = Counter(_first_line(str(a.error), 600) for a in attempts if a.error)
        shown = "; ".join(f"{why} ({n})" for why, n in reasons.most_common(3))
        return f"{tasks} task(s) not attempted: {shown}{more}; {RETRY_NOTE}"
    return f"{len(attempts)} of {len(attempts)} attempts failed before a verdict: {shown}{more}"


def _first_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else "unknown error"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def choose_language(tasks: list[Task], backend: str | None) -> tuple[str, list[Task]]:
    """The backend to use (its canonical name) and the tasks it can check.

    Without `--backend` the tasks' own language decides; a dataset in two languages needs
    the user to say which half to run rather than silently dropping the other. A name is
    read case-insensitively; an unknown one is an InputError listing the known backends.
    """
    languages = sorted({t.language.value for t in tasks})
    if backend is None:
        if len(languages) > 1:
            raise InputError(
                f"the dataset has tasks in {' and '.join(languages)}; choose one with --backend"
            )
        return languages[0], tasks  # the language names are the backend names
    wanted = language_of(backend)
    name = backend.strip().lower()
    kept = [t for t in tasks if t.language == wanted]
    if not kept:
        raise InputError(
            f"--backend {name}: the dataset has no {wanted.value} tasks "
            f"(it has {', '.join(languages)})"
        )
    return name, kept


def load_selected_tasks(config: EvalConfig) -> tuple[list[Task], list[Problem]]:
    dataset = load_tasks(
        config.dataset,
        on_error=config.on_error,
        project_given="coq_project" in config.backend_options,  # `--coq-project` overrides
    )
    chosen = config.selection
    tasks = select(
        dataset.tasks,
        split=chosen.split,
        pattern=chosen.pattern,
        labels=chosen.labels or None,
        sample=chosen.sample,
        seed=chosen.seed,
    )
    if not tasks:
        raise InputError(f"{config.dataset}: no task matches the selection ({chosen})")
    return list(tasks), [*dataset.skipped, *dataset.problems]


def build_backend(config: EvalConfig, name: str, language: Language) -> Backend:
    options = {"timeout": config.timeout, **config.backend_options}
    coq_project = options.pop("coq_project", None)  # `--coq-project`, or the tasks' field
    if name == "coq" and coq_project is not None:
        options["project_dir"] = coq_project
    if config.executor == "ray":
        from formalbench.backends.ray_backend import RayBackend

        return RayBackend(
            name,
            options,
            language=language,
            workers=config.workers,
            address=config.ray_address,
            timeout=config.timeout,
        )
    return make_backend(name, workers=config.workers, **options)


def make_run_model(config: EvalConfig) -> ChatModel | None:
    """The model the config names, bare (the run's cache and budget go around it later)."""
    if config.model is None:
        return None
    options: dict[str, Any] = {}
    if config.model_concurrency is not None:
        options["concurrency"] = config.model_concurrency
    return make_model(config.model, **options)


def wrap_model(
    config: EvalConfig, files: RunFiles, meter: UsageMeter, model: ChatModel, *, cache: bool
) -> ChatModel:
    """`model` under the run's response cache (when `cache`) and the run's token budget."""
    if cache:
        model = CachedModel(model, ResponseCache(files.responses))
    budget = TokenBudget(config.run_token_budget, name=RUN_BUDGET_NAME)
    return BudgetedModel(model, budget, meter)


def solver_config(config: EvalConfig, samples: int, language: Language) -> SolverConfig:
    knobs: dict[str, Any] = {
        "samples": samples,
        "check_timeout": config.timeout,
        "show_answer": config.show_answer,
    }
    for key in ("temperature", "max_tokens", "max_turns"):
        if getattr(config, key) is not None:
            knobs[key] = getattr(config, key)
    if config.token_budget is not None:
        knobs["token_budget"] = config.token_budget
    if config.tactics is not None:
        knobs["tactics"] = {**SolverConfig().tactics, language: list(config.tactics)}
    return SolverConfig(**knobs)


def versions_of(backend: Backend, model: ChatModel | None) -> dict[str, Any]:
    """What a run records it ran with. `backend` (compared on resume) leaves out a Coq
    project's build digest, kept apart in `backend_build`: a rerun after building the
    project resumes the same run (`coq_project.without_build`)."""
    version = backend.version()
    return {
        "formalbench": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "backend": without_build(version),
        "backend_build": version,
        "model": model.spec if model is not None else None,
        "toolchain": info.model_dump() if (info := backend.toolchain_info()) else None,
    }


def _kernel_notes(language: Language, replay: bool) -> list[str]:
    """Coq: a reminder when the coqchk replay is off (the known kernel bugs of the run's
    Coq are in its report, from the toolchain record: `run_files.load_summary`)."""
    if language != Language.coq or replay:
        return []
    return ["--no-replay: passes are not confirmed by coqchk (README, Coq verdicts)"]


def run_evaluation(
    config: EvalConfig,
    run_dir: str | Path,
    observer: EvalObserver | None = None,
    *,
    backend: Backend | None = None,
    model: ChatModel | None = None,
) -> EvalResult:
    """Run (or resume) the evaluation described by `config` in `run_dir`.

    `backend` and `model` replace the ones the config names, for callers that built their
    own (a benchmark measuring the harness alone, a notebook holding a warm backend); the
    run still goes under the config's cache, budget and store.
    """
    return asyncio.run(_evaluate(config, RunFiles(Path(run_dir)), observer, backend, model))


async def _evaluate(
    config: EvalConfig,
    files: RunFiles,
    observer: EvalObserver | None,
    given_backend: Backend | None = None,
    given_model: ChatModel | None = None,
) -> EvalResult:
    start = time.perf_counter()
    check_executor(config.executor, config.ray_address)
    tasks, problems = load_selected_tasks(config)
    skipped = [str(p) for p in problems]
    backend_name, tasks = choose_language(tasks, config.backend)
    notes: list[str] = []
    samples = config.samples
    chosen = solver_class(config.solver)
    if chosen.uses_model and config.model is None and given_model is None:
        raise InputError(f"solver {config.solver!r} needs a model (--model); none was given")
    if chosen.deterministic and samples > 1:
        notes.append(f"solver {config.solver} is deterministic: running 1 sample, not {samples}")
        samples = 1
    update = {"samples": samples, "backend": backend_name, "tactics": config.checked_tactics()}
    if backend_name == "coq" and "coq_project" not in config.backend_options:
        named = tasks_project(tasks)
        if named is not None:
            update["backend_options"] = {**config.backend_options, "coq_project": named}
    if backend_name == "coq" and "toolchain" not in config.backend_options:
        chain = tasks_toolchain(tasks)  # the tasks' own `toolchain`, where they name one
        if chain is not None:
            options = dict(config.backend_options)
            if isinstance(given := update.get("backend_options"), dict):
                options.update(given)
            update["backend_options"] = {**options, "toolchain": chain}
    config = config.model_copy(update=update)
    meter = UsageMeter()
    # Everything that can refuse to start (the folder, the proof assistant and its versions,
    # the model endpoint) is asked before the run folder is made, so a failed start leaves
    # nothing behind.
    check_run_dir(files.root, "eval")
    backend = given_backend or build_backend(config, backend_name, tasks[0].language)
    model: ChatModel | None = None
    lock: RunLock | None = None
    try:
        backend.preflight()
        known: dict[str, tuple[str, list[Diagnostic]]] | None = None
        if isinstance(backend, CoqBackend):  # a task's header as this toolchain needs it
            facts = toolchain_facts(backend.toolchain)
            given = tasks
            tasks, prepared = prepare_tasks(tasks, facts)
            if prepared and config.wants_preflight():
                tasks, known, kept = await _given_where_it_compiles(backend, given, tasks, config)
                prepared = preparation_note(tasks, facts.name)
                notes += [kept] if kept else []
            notes += [prepared] if prepared else []
        mismatches = version_mismatches(backend, tasks)
        if not config.allow_version_mismatch:
            refuse_version_mismatch(mismatches)
        notes += [f"--allow-version-mismatch: {sentence}" for sentence, _ in mismatches]
        notes += _kernel_notes(tasks[0].language, config.replay)
        model = given_model or make_run_model(config)
        if model is not None:
            await model.preflight()
        lock = claim_run_dir(files.root, "eval")  # held until the run ends
        if model is not None:
            model = wrap_model(config, files, meter, model, cache=given_model is None)
        settings = solver_config(config, samples, tasks[0].language)
        # Samples often repeat a proof: each distinct candidate is checked once per run folder.
        verdicts = VerdictCache(files.verdicts)
        policy = config.policy(tasks[0].language)
        verifier = StrictVerifier(backend, policy, cache=verdicts)
        solver = make_solver(config.solver, verifier, model, settings)
        with full_disk_errors(files.root), verdicts, RunStore(files.store) as store:
            run_id = store.open_run(config.identity(), versions_of(backend, model))
            store.add_tasks(run_id, tasks)
            if config.retry_errors:
                retried = store.forget_retryable(run_id, solver=solver.name)
                notes.append(f"--retry-errors: {retried} failed attempt(s) to make again")
            else:  # a task not attempted for its environment is tried on every run (item 7)
                retried = store.forget_retryable(
                    run_id, solver=solver.name, error_tags=(ErrorKind.environment,), reasons=()
                )
                if retried:
                    notes.append(
                        f"{retried} sample(s) not attempted before for their environment "
                        "(a library missing): tried again"
                    )
            done = store.done_samples(run_id, solver=solver.name)
            todo = [(t, i) for t in tasks for i in range(samples) if (t.id, i) not in done]
            before_preflight = len(todo)
            if config.wants_preflight() and todo:
                todo, note = await _preflight(
                    config, backend, store, run_id, solver.name, todo, known
                )
                notes += [note] if note else []
            if observer is not None:
                passed = store.counts(run_id)["passed"]
                observer.started(len(tasks) * samples, len(tasks) * samples - len(todo), passed)
            try:
                new, stopped = await _work(
                    config, solver, store, run_id, iter(todo), observer, total=len(todo)
                )
            except Interrupted:  # SIGINT/SIGTERM: what is recorded stays; a rerun resumes
                store.set_status(run_id, "interrupted")
                write_run_log(files, store, run_id, meter, time.perf_counter() - start, skipped)
                raise
            store.set_status(
                run_id, "finished" if stopped is None and new == len(todo) else "interrupted"
            )
            write_run_log(files, store, run_id, meter, time.perf_counter() - start, skipped)
            failed = every_attempt_failed(list(store.attempts(run_id)))
    finally:
        if lock is not None:
            lock.release()
        backend.close()
        if model is not None:
            await model.aclose()
    return EvalResult(
        run_id=run_id,
        files=files,
        tasks=len(tasks),
        samples=samples,
        new_attempts=new,
        skipped_attempts=len(tasks) * samples - before_preflight,
        not_attempted=before_preflight - len(todo),
        elapsed=time.perf_counter() - start,
        stopped=stopped,
        problems=problems,
        notes=notes,
        failed=failed,
    )


async def _preflight(
    config: EvalConfig,
    backend: Backend,
    store: RunStore,
    run_id: str,
    solver: str,
    todo: list[tuple[Task, int]],
    known: dict[str, tuple[str, list[Diagnostic]]] | None = None,
) -> tuple[list[tuple[Task, int]], str | None]:
    """Compile the original of each task still to do once; record the samples of those that
    cannot compile here as environment failures. Returns what is left to do and a note
    naming the tasks left out. `known`: the failures of every task, already found (by
    `_given_where_it_compiles`), so nothing is compiled again."""
    pending = list({t.id: t for t, _ in todo}.values())
    if known is None:
        failed = await check_originals(backend, pending, config.timeout)
    else:
        ids = {t.id for t in pending}
        failed = {k: v for k, v in known.items() if k in ids}
    if not failed:
        return todo, None
    for task, sample in todo:
        if task.id in failed:
            why, diagnostics = failed[task.id]
            store.record_attempt(
                run_id, environment_attempt(task, sample, solver, why, diagnostics)
            )
    first = next(iter(failed.items()))
    names = ", ".join(sorted(failed)[:10]) + (" ..." if len(failed) > 10 else "")
    note = (
        f"preflight: {len(failed)} task(s) cannot compile here and were not attempted "
        f"(recorded as environment failures; {RETRY_NOTE}): {names}; "
        f"e.g. {first[0]}: {first[1][0]}"
    )
    return [(t, i) for t, i in todo if t.id not in failed], note


async def _given_where_it_compiles(
    backend: Backend, given: list[Task], prepared: list[Task], config: EvalConfig
) -> tuple[list[Task], dict[str, tuple[str, list[Diagnostic]]], str | None]:
    """A preparation is kept only where the toolchain needs it: the prepared originals are
    compiled (the preflight, batched), and a task whose prepared original fails but whose
    original as given compiles runs as given (a safety net: a rule such as
    `mathcomp-ssreflect-first` fires on statements that compile either way, and a rule may
    misjudge one; the check costs only the failures' recompiles). Returns
    the tasks, the preflight failures of those tasks, and a note naming the tasks kept as
    given (None: none)."""
    failed = await check_originals(backend, prepared, config.timeout)
    changed = [g for g, p in zip(given, prepared, strict=True) if p is not g and p.id in failed]
    still = await check_originals(backend, changed, config.timeout) if changed else {}
    chosen = {g.id: g for g in changed if g.id not in still}
    for task_id in chosen:
        del failed[task_id]
    tasks = [chosen.get(p.id, p) for p in prepared]
    note = None
    if chosen:
        names = ", ".join(sorted(chosen)[:10]) + (" ..." if len(chosen) > 10 else "")
        note = (
            f"preflight: {len(chosen)} task(s) compile as given but not prepared on this "
            f"toolchain and run as given: {names}"
        )
    return tasks, failed, note


def _concurrency(config: EvalConfig, solver: Solver, backend_workers: int) -> int:
    """Attempts in flight: more than the assistant's slots, so that a check is always queued.

    With exactly one attempt per slot (as before), a slot stood idle whenever its attempt
    was between two checks (reading the probe, filling the holes, the verifier's text
    layer, the store commit all run in this event loop, one attempt at a time). Twice the
    slots keeps a check queued in the backend's pool, which still bounds how many run.
    The other loss `bench/bench_eval.py coq` showed is the tail: the last long probe (all
    tactics timing out) running alone while the other slot has nothing left to do. Near
    the end of the run (`in_tail` in `_work`) the portfolio splits its Coq probes into
    chunks that idle slots take (`solvers.probe_chunks`).
    """
    if config.concurrency is not None:
        return config.concurrency
    # A model-based solver spends most of an attempt waiting on the model: keep more in flight.
    return backend_workers * (4 if solver.uses_model else 2)


async def _work(
    config: EvalConfig,
    solver: Solver,
    store: RunStore,
    run_id: str,
    todo: Iterator[tuple[Task, int]],
    observer: EvalObserver | None,
    *,
    total: int | None = None,
) -> tuple[int, str | None]:
    """Run the pending attempts with bounded concurrency; returns (recorded, stop reason)."""
    recorded = 0
    in_flight = 0
    taken = 0
    stopped: str | None = None
    times: list[float] = []  # wall time of each finished attempt
    slots = max(1, solver.backend.workers)

    def in_tail() -> bool:
        """Whether the attempts not yet started would all be done, at the rate seen so far,
        before the longest attempt seen so far: one starting now could then end the run
        alone, so the portfolio splits its probes over idle slots (`probe_chunks`)."""
        if total is None:
            return True
        if not times:
            return taken >= total
        left = total - taken
        return left * (math.fsum(times) / len(times)) / slots <= max(times)

    solver.in_tail = in_tail

    async def worker() -> None:
        nonlocal recorded, stopped, in_flight, taken
        for task, sample in todo:  # one shared iterator: each pair is taken once
            if stopped is not None:
                return
            in_flight += 1
            taken += 1
            try:
                attempt = await solver.solve(task, sample)
            finally:
                in_flight -= 1
            times.append(attempt.wall_time)
            error = attempt.error
            if error and error.kind == ErrorKind.budget and error.scope == RUN_BUDGET_NAME:
                # The run's budget, not the task's: leave the attempt undone so a resume
                # with a larger budget makes it, and stop scheduling more.
                stopped = error.message
                return
            if store.record_attempt(run_id, attempt):
                recorded += 1
            if observer is not None:
                observer.attempt_done(attempt)

    backend = solver.verifier.backend  # None only for a text-layer verifier: one slot
    workers = _concurrency(config, solver, backend.workers if backend is not None else 1)
    gathered = asyncio.gather(*(worker() for _ in range(workers)))
    with stop_on_signals(gathered, lambda: in_flight) as caught:
        try:
            await gathered
        except asyncio.CancelledError:
            if caught.signum is None:
                raise
    if caught.signum is not None:
        raise Interrupted(caught.signum)
    return recorded, stopped
