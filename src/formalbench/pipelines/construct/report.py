"""The report of a construct run, from its files alone: extraction counts, the source funnel
per pool, and the figures of the formal stages.

The formal stages' figures come from what the runner stored when they finished (meta
`formal`); a run whose formal stages were run otherwise still shows its `tasks.jsonl` and
the files under `instances/`. Absent formal stages read as 0 and a null tasks file.
`failed_stages` and `format_failures` are added up from the stored records
(`failures.run_failures`), so a stage that failed for every exercise shows here as it did at
the end of the run.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from formalbench.core.errors import InputError
from formalbench.core.records import Record
from formalbench.pipelines.construct.failures import StageFailure, run_failures
from formalbench.pipelines.construct.funnel import Funnel, funnel
from formalbench.pipelines.run_dir import read_json_object
from formalbench.store.construct import ConstructStore

STORE_NAME = "construct.sqlite"


class ConstructReport(Record):
    kind: str = "construct"
    status: str = "unknown"  # of the last session: finished, incomplete, interrupted
    stop_after: str | None = None
    exercises: int = 0
    references: int = 0
    resolved_references: int = 0
    unresolved_references: int = 0
    # the same counts over the whole book (a --pattern/--limit run selects fewer); None for
    # a JSONL source, which is no book
    book_exercises: int | None = None
    book_references: int | None = None
    book_resolved_references: int | None = None
    book_unresolved_references: int | None = None
    reviewed: int = 0
    accepted: int = 0  # at the first review (pool OI)
    revised: int = 0  # sent to revise at the first review
    held: int = 0  # held at the first review
    usable: int = 0  # accepted at the first review or after repair and re-review
    usable_fraction: float | None = None
    blocks: int = 0
    blocks_compiled: int = 0
    instances: int = 0
    tasks: int | None = None  # tasks written to tasks_file (None: formal stages not run)
    tasks_file: str | None = None
    format_failures: int = 0  # model replies never usable (source and formal stages)
    failed_stages: list[StageFailure] = Field(default_factory=list)  # stages with failures
    unfinished: list[str] = Field(default_factory=list)  # `ID: why`, from the last session
    funnel: Funnel = Field(default_factory=Funnel)

    def warnings(self) -> list[str]:
        """One line per stage in which exercises failed (see failures.StageFailure)."""
        return [f.line() for f in self.failed_stages]


def is_construct_run(run_dir: Path) -> bool:
    return (Path(run_dir) / STORE_NAME).is_file()


def construct_report(run_dir: str | Path) -> ConstructReport:
    root = Path(run_dir)
    path = root / STORE_NAME
    if not path.is_file():
        raise InputError(f"{root}: not a construct run (no {STORE_NAME})")
    log_path = root / "construct.json"
    log = read_json_object(log_path) if log_path.is_file() else {}
    unfinished = [str(line) for line in log.get("incomplete") or []]
    with ConstructStore(path, readonly=True) as store:
        stats = store.extraction_stats() or {}
        shape = funnel(store.problems())
        formal = store.meta("formal") or {}
        failures = run_failures(store, unfinished)
    tasks = formal.get("tasks_file")
    if tasks is None and (root / "tasks.jsonl").is_file():
        tasks = str(root / "tasks.jsonl")
    instances = formal.get("instances")
    if instances is None:
        folder = root / "instances"
        instances = sum(1 for p in folder.iterdir() if p.is_file()) if folder.is_dir() else 0
    return ConstructReport(
        status=str(log.get("status", "unknown")),
        stop_after=log.get("stop_after"),
        exercises=stats.get("exercises", 0),
        references=stats.get("references", 0),
        resolved_references=stats.get("resolved_references", 0),
        unresolved_references=stats.get("unresolved_references", 0),
        book_exercises=stats.get("book_exercises"),
        book_references=stats.get("book_references"),
        book_resolved_references=stats.get("book_resolved_references"),
        book_unresolved_references=stats.get("book_unresolved_references"),
        tasks=formal.get("tasks"),
        reviewed=shape.reviewed,
        accepted=shape.accepted,
        revised=shape.revised,
        held=shape.held,
        usable=shape.usable,
        usable_fraction=shape.usable_fraction,
        blocks=int(formal.get("blocks", 0)),
        blocks_compiled=int(formal.get("blocks_compiled", 0)),
        instances=int(instances),
        tasks_file=tasks,
        format_failures=failures.format_failures,
        failed_stages=failures.stages,
        unfinished=unfinished,
        funnel=shape,
    )
