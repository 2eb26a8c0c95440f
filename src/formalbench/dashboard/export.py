"""The accepted problems of a reviewed formalize run, as a dataset of `Task` records (JSONL).

Each task carries its whole provenance in `trail`: which model wrote the accepted statement,
every compile round it went through, the alignment judgement, the summary's rank, who
accepted it and when, and a unified diff of what the reviewer changed. A dataset built from
people's edits is only trustworthy if the edits can be audited.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.core.formalization import CompileRound, Problem, ReviewDecision
from formalbench.core.records import Informal, Language, Task
from formalbench.dashboard.views import CandidateView, edit_diff, order_candidates, run_language
from formalbench.datasets.text import kind_of, split_header
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore


def accepted_tasks(formalize: FormalizeStore, review: ReviewStore) -> list[Task]:
    """One task per accepted problem, in the run's problem order."""
    config = formalize.config()
    tasks = []
    for decision in review.accepted():
        problem = formalize.problem(decision.problem_id)
        if problem is None:  # decided, then removed from the run: nothing to export
            continue
        candidates = formalize.candidates(problem.id)
        summary = formalize.summary(problem.id)
        chosen = next((c for c in candidates if c.id == decision.candidate_id), None)
        language = chosen.language if chosen is not None else run_language(config, candidates)
        if language is None:
            raise InputError(
                f"problem {problem.id!r}: cannot tell its language (no candidates and no "
                "`language` in the run's config)"
            )
        view = next(
            (v for v in order_candidates(candidates, summary) if v.candidate is chosen), None
        )
        trail = {
            "formalize": _candidate_trail(view, summary),
            "review": review_trail(
                decision,
                review,
                chosen.code if chosen is not None else "",
                chosen.id if chosen is not None else decision.problem_id,
            ),
        }
        tasks.append(_task(problem, decision, language, trail))
    return tasks


def _task(
    problem: Problem,
    decision: ReviewDecision,
    language: Language,
    trail: dict[str, Any],
) -> Task:
    header, formal = split_header(decision.code or "", language)
    labels = {"category": problem.category} if problem.category else {}
    return Task(
        id=problem.id,
        language=language,
        formal=formal,
        header=header,
        source=problem.source,
        informal=Informal(statement=problem.informal, solution=problem.solution),
        kind=kind_of(formal, language),
        labels=labels,
        trail=trail,
        metadata=dict(problem.metadata),
    )


def _candidate_trail(view: CandidateView | None, summary: Any) -> dict[str, Any]:
    if view is None:
        return {"candidate": None}
    chosen = view.candidate
    return {
        "candidate": chosen.id,
        "model": chosen.model,
        "sample": chosen.sample,
        "translation": chosen.translation,
        "compiled": chosen.compiled,
        "rounds": [_round(r) for r in chosen.rounds],
        "alignment": chosen.alignment.model_dump(mode="json") if chosen.alignment else None,
        "prompt_hashes": dict(chosen.prompt_hashes),
        "tokens": chosen.tokens.model_dump(mode="json"),
        "summary_rank": view.rank,
        "summary_key": view.key,
        "summary_verdict": view.verdict,
        "summary": summary.text if summary is not None else None,
        "summary_model": summary.model if summary is not None else None,
    }


def _round(r: CompileRound) -> dict[str, Any]:
    return {
        "round": r.round,
        "compiled": r.compiled,
        "code": r.code,
        "diagnostics": [d.model_dump(mode="json", exclude_none=True) for d in r.diagnostics],
        "format_failure": r.format_failure,
    }


def review_trail(
    decision: ReviewDecision, review: ReviewStore, original: str, name: str
) -> dict[str, Any]:
    """The `review` object of an exported task (both run kinds): the decision, the diff of
    the reviewer's edit against `original` (shown as file `name`), the re-check of that
    version and the history of decisions."""
    return {
        "status": decision.status.value,
        "reviewer": decision.reviewer,
        "at": decision.at,
        "note": decision.note,
        "version": decision.version,
        "edited": decision.edited,
        "diff": edit_diff(original, decision.code or "", name),
        "recheck": review.checked(decision.problem_id, decision.version),
        "history": [
            {
                k: d.model_dump(mode="json")[k]
                for k in ("version", "status", "reviewer", "at", "note")
            }
            for d in review.history(decision.problem_id)
        ],
    }


def to_jsonl(tasks: Iterable[Task]) -> str:
    return "".join(t.model_dump_json() + "\n" for t in tasks)


def write_jsonl(tasks: Iterable[Task], path: str | Path) -> int:
    """Write tasks to `path` atomically (a reader never sees half a file); returns the count."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--export {str(path)!r}: is a directory, expected a file name")
    if not target.parent.is_dir():
        raise InputError(f"--export {str(path)!r}: folder {str(target.parent)!r} does not exist")
    items = list(tasks)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".export-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(to_jsonl(items))
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"--export {str(path)!r}: cannot write ({exc.strerror or exc})") from None
    return len(items)
