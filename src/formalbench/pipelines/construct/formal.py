"""Phase 3 of `formalbench construct`: steps 8-11 over the usable exercises of a run.

Per exercise: split into semantic blocks (step 8); then, block by block in index order,
translate after the frozen prefix and repair from the diagnostics (step 9, Algorithm 2) and
review / rewrite / recompile the compiled block (step 10, Algorithm 3) before it joins the
prefix; a final whole-file compile; packaging (step 11). Translation and review alternate per
block rather than in two passes over the file: a rewrite of block b can then never break a
later block that was translated against b's earlier version, and the prefix a block sees is
made of accepted blocks only.

Everything is kept in `run_dir/construct.sqlite` (component `construct_formal`): every model
answer and every compile as it happens, each exercise's package when it is finished. A killed
run, started again, replays the finished steps from there (no model call, no compile) and
goes on; a finished exercise is not touched at all. Exercises run concurrently
(`config.concurrency`); compiles run on the backend's own pool.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from formalbench.backends.base import Backend
from formalbench.core.construct import ConstructProblem
from formalbench.core.errors import InputError
from formalbench.core.records import CheckResult
from formalbench.llm.base import ChatModel
from formalbench.pipelines.construct.block_records import BlockStatus, BlockTrail
from formalbench.pipelines.construct.block_review import review_block
from formalbench.pipelines.construct.block_session import FormalStageConfig, Session
from formalbench.pipelines.construct.blockfile import BlockFile
from formalbench.pipelines.construct.blocks import split_blocks
from formalbench.pipelines.construct.package import package, stem_of, write_package
from formalbench.pipelines.construct.translate import translate_block
from formalbench.pipelines.run_dir import write_text_atomic
from formalbench.store.construct_formal import ConstructFormalStore
from formalbench.store.db import StoreError

__all__ = ["FormalResult", "FormalStageConfig", "formal_summary", "run_formal_stages"]

DATABASE = "construct.sqlite"


class Progress(Protocol):
    """(phase, done, total, resumed): `resumed` of `done` were finished by an earlier run
    (the progress display leaves them out of the rate)."""

    def __call__(self, phase: str, done: int, total: int, resumed: int = 0, /) -> None: ...


@dataclass
class FormalResult:
    """What the formal stages produced (counts over all exercises, this run and earlier)."""

    exercises: int = 0
    blocks: int = 0  # formal blocks (hints are not counted)
    blocks_compiled: int = 0
    blocks_accepted: int = 0
    instances: int = 0  # packaged formal files
    tasks: int = 0
    validation: dict[str, int] = field(default_factory=dict)
    tasks_file: Path = Path("tasks.jsonl")
    instances_dir: Path = Path("instances")
    fresh_calls: int = 0  # model calls made by this process (0 for a finished run)
    fresh_compiles: int = 0
    prompt_hashes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["tasks_file"] = str(self.tasks_file)
        out["instances_dir"] = str(self.instances_dir)
        return out


async def run_formal_stages(
    problems: Sequence[ConstructProblem],
    *,
    backend: Backend,
    model: ChatModel,
    run_dir: Path,
    config: FormalStageConfig,
    progress: Progress | None = None,
) -> FormalResult:
    """Steps 8-11 over `problems` (the usable ones), resumably; see the module doc."""
    run_dir = Path(run_dir)
    stems = _stems(problems)
    store = ConstructFormalStore(run_dir / DATABASE)
    session = Session(store, model, backend, config)
    instances_dir = run_dir / "instances"
    try:
        for problem in problems:
            store.add_problem(problem.id, problem.model_dump(mode="json"))
        total = len(problems)
        done = resumed = 0
        limit = asyncio.Semaphore(max(1, config.concurrency))

        async def one(problem: ConstructProblem) -> dict[str, Any]:
            nonlocal done, resumed
            result = store.result(problem.id)
            if result is None:
                async with limit:
                    result = await construct_exercise(session, problem, stems[problem.id])
                store.finish_problem(problem.id, result["status"], result)
            else:
                resumed += 1
            write_package(instances_dir, result)
            done += 1
            if progress is not None:  # shown as "formal: exercises"
                progress("exercises", done, total, resumed)
            return result

        # A TaskGroup: when one exercise fails (the model endpoint is gone, a budget is
        # spent), the others are cancelled before the store closes; what they finished stays.
        try:
            async with asyncio.TaskGroup() as group:
                running = [group.create_task(one(p)) for p in problems]
        except BaseExceptionGroup as failed:  # the first failure, as the caller knows it
            raise failed.exceptions[0] from None
        results = [t.result() for t in running]
    finally:
        store.close()
    tasks_file = run_dir / "tasks.jsonl"
    lines = [json.dumps(r["task"], ensure_ascii=False) + "\n" for r in results if r["task"]]
    write_text_atomic(tasks_file, "".join(lines))
    out = counts(results, run_dir)
    out.fresh_calls, out.fresh_compiles = session.fresh_calls, session.fresh_compiles
    out.prompt_hashes = dict(session.prompt_hashes)
    return out


def counts(results: Sequence[dict[str, Any]], run_dir: Path) -> FormalResult:
    """The figures of a set of exercise packages (as the store keeps them)."""
    out = FormalResult(
        exercises=len(results),
        tasks_file=run_dir / "tasks.jsonl",
        instances_dir=run_dir / "instances",
        tasks=sum(1 for r in results if r["task"]),
    )
    for r in results:
        stats = r["statistics"]
        out.blocks += stats.get("formal_blocks", 0)
        out.blocks_compiled += stats.get("blocks_compiled", 0)
        out.blocks_accepted += stats.get("blocks_accepted", 0)
        out.instances += any(isinstance(v, str) for v in r["files"].values())
        out.validation[r["status"]] = out.validation.get(r["status"], 0) + 1
    return out


def formal_summary(run_dir: Path) -> FormalResult:
    """The formal stages' figures of a run folder, read-only from its store (for reports:
    `blocks`, `blocks_compiled`, `instances`, `tasks_file`...); exercises not finished yet
    are not counted. A folder whose store has no formal tables yet counts nothing."""
    run_dir = Path(run_dir)
    path = run_dir / DATABASE
    if not path.is_file():
        return counts([], run_dir)
    try:
        store = ConstructFormalStore(path, readonly=True)
    except StoreError:  # the source stages ran, the formal ones not yet
        return counts([], run_dir)
    try:
        return counts(store.results(), run_dir)
    finally:
        store.close()


def _stems(problems: Sequence[ConstructProblem]) -> dict[str, str]:
    stems: dict[str, str] = {}
    taken: set[str] = set()
    for p in problems:
        if p.id in stems:
            raise InputError(f"construct problems: the id {p.id!r} is given twice")
        stem, n = stem_of(p.id), 1
        while stem.lower() in taken:  # `a/b` and `a_b` would share a file
            n += 1
            stem = f"{stem_of(p.id)}_{n}"
        taken.add(stem.lower())
        stems[p.id] = stem
    return stems


async def construct_exercise(
    session: Session, problem: ConstructProblem, stem: str
) -> dict[str, Any]:
    """Steps 8-11 for one exercise; returns its package (see package.package)."""
    split = await split_blocks(session, problem)
    if split.error is not None:
        return package(
            problem, stem, None, [], None, tokens=_tokens(session, problem),
            split_error=split.error,
        )  # fmt: skip
    bfile = BlockFile.start(session.syntax, session.header)
    trails: list[BlockTrail] = []
    for block in split.blocks:
        if not block.kind.formalizable:
            trails.append(BlockTrail(block=block, status=BlockStatus.skipped))
            continue
        rounds = await translate_block(session, problem, bfile, block)
        last = rounds[-1]
        if not last.compiled:
            trails.append(
                BlockTrail(
                    block=block,
                    status=BlockStatus.compile_failed,
                    compiles=rounds,
                    failure=f"no compiling version after {len(rounds) - 1} repair round(s)",
                )
            )
            continue
        reviewed = await review_block(session, problem, bfile, block, last.code)
        bfile.freeze(block, reviewed.code)
        trails.append(
            BlockTrail(
                block=block,
                status=reviewed.status,
                code=reviewed.code,
                compiles=rounds,
                reviews=reviewed.rounds,
                failure=reviewed.failure,
            )
        )
    final: CheckResult = await session.compile(bfile.text)
    return package(
        problem,
        stem,
        bfile,
        trails,
        final,
        tokens=_tokens(session, problem),
        tasks_from_unreviewed=session.config.tasks_from_unreviewed,
    )


def _tokens(session: Session, problem: ConstructProblem) -> dict[str, int]:
    used = session.tokens[problem.id]
    return {"prompt_tokens": used.prompt, "completion_tokens": used.completion}
