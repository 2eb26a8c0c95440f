"""The accepted problems of a reviewed formalize run, as a dataset of `Task` records (JSONL).

Each task carries its whole provenance in `trail`: which model wrote the accepted statement,
every compile round it went through, the alignment judgement, the summary's rank, who
accepted it and when, and a unified diff of what the reviewer changed. A dataset built from
people's edits is only trustworthy if the edits can be audited.

An exported task is a task: something is left to prove. A model often answers with a proof
(`Proof. lia. Qed.`, `:= by simp`), and a reviewer may accept it or finish one in the page;
exported as it stood, `formalbench eval` refused the file ("its proof is finished"). So
every theorem's proof becomes a hole (`Proof. Admitted.`, `:= by sorry`), definitions keep
their bodies (they are part of what is stated), and a complete accepted text is kept as
`metadata.reference_solution`. An accepted text with no theorem at all leaves nothing to
prove: it is not exported, and the caller is told why (`skipped`).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from formalbench.checking.decls import sentences, split_decls
from formalbench.core.errors import InputError
from formalbench.core.formalization import CompileRound, Problem, ReviewDecision
from formalbench.core.records import Informal, Language, Task
from formalbench.dashboard.views import CandidateView, edit_diff, order_candidates, run_language
from formalbench.datasets.text import has_hole, kind_of, split_header
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore

_THEOREM_KINDS = frozenset({"Theorem", "Goal", "theorem", "example"})
_COQ_BARE_HOLE = re.compile(r"\s*(?:Proof\s*\.\s*)?Admitted\s*\.\s*")
_LEAN_BARE_HOLE = re.compile(r":=\s*(?:by\s+)?sorry\s*")


def hole_proofs(formal: str, language: Language) -> str:
    """`formal` with the whole proof of every theorem (Coq `Theorem`/`Lemma`/.../`Goal`,
    Lean `theorem`/`lemma`/`example`) replaced by a bare hole; a proof that is one already
    is left as it is, and so is every definition."""
    edits: list[tuple[int, int, str]] = []
    for decl in split_decls(formal, language):
        if decl.kind not in _THEOREM_KINDS or decl.body_start >= len(decl.tokens):
            continue
        if language == Language.coq:
            statement = sentences(decl.tokens)[0]
            if decl.body_start < len(statement) - 1:  # `Lemma l : P := term.`
                start, hole = statement[decl.body_start - 1].end, ".\nProof.\nAdmitted."
            else:
                start, hole = statement[-1].end, "\nProof.\nAdmitted."
            if _COQ_BARE_HOLE.fullmatch(formal[start : decl.end]):
                continue
        else:
            start = decl.tokens[decl.body_start].offset
            if _LEAN_BARE_HOLE.fullmatch(formal[start : decl.end]):
                continue
            line_start = formal.rfind("\n", 0, decl.start) + 1
            indent = " " * (len(formal[line_start : decl.start]) + 2)
            hole = f":= by\n{indent}sorry"
        edits.append((start, decl.end, hole))
    out, last = [], 0
    for start, end, hole in edits:
        out += [formal[last:start], hole]
        last = end
    out.append(formal[last:])
    return "".join(out)


def as_task_text(formal: str, language: Language) -> tuple[str, str | None]:
    """(the task's `formal`: every theorem's proof a hole, the reference solution: `formal`
    itself when it held no hole, else None). The first has no hole only when `formal`
    states no theorem."""
    task_text = hole_proofs(formal, language)
    solved = task_text != formal and not has_hole(formal, language)
    return task_text, formal if solved else None


def nothing_to_prove(task_id: str, language: Language) -> str:
    """Why an accepted text was not exported (for `skipped`)."""
    hole = "sorry" if language == Language.lean else "Admitted."
    return f"{task_id}: not exported: it states no theorem, so no proof is left to do ({hole})"


def accepted_tasks(
    formalize: FormalizeStore, review: ReviewStore, skipped: list[str] | None = None
) -> list[Task]:
    """One task per accepted problem, in the run's problem order; an accepted text that
    leaves nothing to prove is left out, with the reason added to `skipped`."""
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
        task = _task(problem, decision, language, trail)
        if has_hole(task.formal, language):
            tasks.append(task)
        elif skipped is not None:
            skipped.append(nothing_to_prove(task.id, language))
    return tasks


def _task(
    problem: Problem,
    decision: ReviewDecision,
    language: Language,
    trail: dict[str, Any],
) -> Task:
    header, accepted = split_header(decision.code or "", language)
    formal, reference = as_task_text(accepted, language)
    labels = {"category": problem.category} if problem.category else {}
    metadata = dict(problem.metadata)
    if reference is not None:
        metadata["reference_solution"] = reference
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
        metadata=metadata,
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
