"""The numbers of a formalize run (the papers' tables), rebuilt from its store alone.

Per model, over its first translations (k per problem): how many compiled at round 1 and
after the feedback rounds (IndiMathBench's "1 turn" vs "with feedback"), how many rounds a
compiled one needed, and of the compiled ones the judge could read, how many it found
aligned (FMC's consistency rate). Re-translations (made only after a misaligned statement,
so a population of their own) are counted in their own columns; formatting failures, judge
errors and tokens count every reply. Per run: problems, and how many have at least one
compiled (coverage) and at least one aligned candidate, any translation, overall and per
category. A candidate stopped by a model error is counted apart, as unfinished.

A model is labelled by its short name (`openai:NAME`) unless two specs of the run share it
(one model name served by two endpoints): those keep their whole spec. `spec` is always
the whole one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from formalbench.core.errors import InputError
from formalbench.core.formalization import Candidate
from formalbench.core.records import Record
from formalbench.pipelines.formalize.reference import reference_table
from formalbench.pipelines.run_dir import is_writable, read_json_object, write_text_atomic
from formalbench.store.formalize import FormalizeStore


@dataclass(frozen=True)
class FormalizeFiles:
    """formalize.sqlite (the store), responses.sqlite (model replies), formalize.json (the
    run's log: config, versions, prompt hashes, tokens), metrics.json (these numbers)."""

    root: Path

    @property
    def store(self) -> Path:
        return self.root / "formalize.sqlite"

    @property
    def responses(self) -> Path:
        return self.root / "responses.sqlite"

    @property
    def log(self) -> Path:
        return self.root / "formalize.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"


def is_formalize_run(run_dir: str | Path) -> bool:
    return FormalizeFiles(Path(run_dir)).store.is_file()


class ModelMetrics(Record):
    model: str  # label: the short name unless another spec of the run has the same one
    spec: str = ""  # the whole spec, endpoint included
    candidates: int = 0  # first translations (re-translations are counted below)
    compiled_round1: int = 0
    compiled: int = 0
    compile_rate_round1: float | None = None
    compile_rate: float | None = None
    mean_rounds_to_compile: float | None = None
    format_failures: int = 0  # rounds whose reply held no usable code
    judged: int = 0  # compiled candidates with a readable judgement
    aligned: int = 0
    alignment_pass_rate: float | None = None
    retranslations: int = 0  # fresh translations after a misaligned statement
    retranslations_compiled: int = 0
    retranslations_judged: int = 0
    retranslations_aligned: int = 0
    judge_errors: int = 0
    unfinished: int = 0  # stopped by a model error, to be resumed
    problems_compiled: int = 0
    problems_compiled_round1: int = 0
    problems_aligned: int = 0
    tokens: dict[str, int] = Field(default_factory=lambda: {"prompt": 0, "completion": 0})


class CategoryMetrics(Record):
    problems: int = 0
    compiled: int = 0
    aligned: int = 0


class FormalizeMetrics(Record):
    kind: str = "formalize"
    problems: int = 0
    compiled: int = 0  # problems with at least one compiled candidate
    compiled_round1: int = 0
    aligned: int = 0  # problems with at least one aligned candidate
    summarized: int = 0
    coverage: float | None = None
    aligned_rate: float | None = None
    candidates: int = 0
    categories: dict[str, CategoryMetrics] = Field(default_factory=dict)
    models: list[ModelMetrics] = Field(default_factory=list)
    # per model label, when problems carry a reference: beq, gted_mean, gted_above_0_9,
    # compiled, candidates (IndiMathBench's table; see pipelines/formalize/reference.py)
    reference: dict[str, dict[str, Any]] = Field(default_factory=dict)
    run: dict[str, Any] = Field(default_factory=dict)


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _aligned(c: Candidate) -> bool:
    return c.alignment is not None and c.alignment.error is None and c.alignment.aligned


def compute(store: FormalizeStore) -> FormalizeMetrics:
    problems = store.problems()
    candidates = store.candidates()
    by_problem: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_problem.setdefault(c.problem_id, []).append(c)
    out = FormalizeMetrics(problems=len(problems), candidates=len(candidates))
    for p in problems:
        mine = by_problem.get(p.id, [])
        compiled = any(c.compiled for c in mine)
        aligned = any(_aligned(c) for c in mine)
        out.compiled += compiled
        out.aligned += aligned
        out.compiled_round1 += any(c.rounds and c.rounds[0].compiled for c in mine)
        out.summarized += store.summary(p.id) is not None
        cat = out.categories.setdefault(p.category or "unlabelled", CategoryMetrics())
        cat.problems += 1
        cat.compiled += compiled
        cat.aligned += aligned
    out.coverage = _rate(out.compiled, out.problems)
    out.aligned_rate = _rate(out.aligned, out.problems)
    models: dict[str, list[Candidate]] = {}
    for c in candidates:
        models.setdefault(c.model, []).append(c)
    from formalbench.judge.ranking import model_labels  # the judge (and llm) only here

    labels = model_labels(models)
    out.models = [_model_metrics(spec, labels[spec], mine) for spec, mine in models.items()]
    out.reference = reference_table(store, labels)
    return out


def _judged(c: Candidate) -> bool:
    return c.compiled and c.alignment is not None and c.alignment.error is None


def _model_metrics(spec: str, label: str, mine: list[Candidate]) -> ModelMetrics:
    m = ModelMetrics(model=label, spec=spec)
    done = [c for c in mine if c.rounds]
    m.unfinished = sum(c.error is not None for c in mine)
    first = [c for c in done if c.translation == 0]
    again = [c for c in done if c.translation > 0]
    m.candidates = len(first)
    m.compiled_round1 = sum(c.rounds[0].compiled for c in first)
    compiled = [c for c in first if c.compiled]
    m.compiled = len(compiled)
    m.compile_rate_round1 = _rate(m.compiled_round1, m.candidates)
    m.compile_rate = _rate(m.compiled, m.candidates)
    if compiled:
        m.mean_rounds_to_compile = round(sum(len(c.rounds) for c in compiled) / len(compiled), 3)
    judged = [c for c in first if _judged(c)]
    m.judged = len(judged)
    m.aligned = sum(_aligned(c) for c in judged)
    m.alignment_pass_rate = _rate(m.aligned, m.judged)
    m.retranslations = len(again)
    m.retranslations_compiled = sum(c.compiled for c in again)
    m.retranslations_judged = sum(_judged(c) for c in again)
    m.retranslations_aligned = sum(_judged(c) and _aligned(c) for c in again)
    m.format_failures = sum(r.format_failure is not None for c in done for r in c.rounds)
    m.judge_errors = sum(c.alignment is not None and c.alignment.error is not None for c in done)
    m.problems_compiled = len({c.problem_id for c in done if c.compiled})
    m.problems_compiled_round1 = len({c.problem_id for c in done if c.rounds[0].compiled})
    m.problems_aligned = len({c.problem_id for c in done if _judged(c) and _aligned(c)})
    tokens = [r.tokens for c in mine for r in c.rounds]
    m.tokens = {
        "prompt": sum(t.prompt for t in tokens),
        "completion": sum(t.completion for t in tokens),
    }
    return m


def load_metrics(run_dir: str | Path) -> FormalizeMetrics:
    """The metrics of a formalize run directory (InputError when it is not one)."""
    files = FormalizeFiles(Path(run_dir))
    if not files.store.is_file():
        raise InputError(f"{run_dir}: not a formalize run (no {files.store.name} in it)")
    writable = is_writable(files.root)  # read-only storage: reported, metrics.json not written
    with FormalizeStore(files.store, readonly=not writable) as store:
        return write_metrics(files, store, write=writable)


def write_metrics(
    files: FormalizeFiles, store: FormalizeStore, *, write: bool = True
) -> FormalizeMetrics:
    metrics = compute(store)
    if files.log.is_file():
        log = read_json_object(files.log)
        metrics.run = {
            k: log.get(k) for k in ("status", "wall_time_s", "versions", "incomplete") if k in log
        }
        usage = log.get("token_usage_sessions") or []
        metrics.run["tokens_fresh"] = sum(
            (u.get("fresh", {}).get("prompt", 0) + u.get("fresh", {}).get("completion", 0))
            for u in usage
        )
    if write:
        write_text_atomic(files.metrics, metrics.model_dump_json(indent=2) + "\n")
    return metrics
