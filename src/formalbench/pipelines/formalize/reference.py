"""Candidates against the problem's reference statement: BEq and GTED (IndiMathBench §5).

A problem of the PROBLEMS file may carry `reference`, a formal statement in the run's
assistant. After the compile rounds each finished candidate is compared with it, once: the
verdict is kept in the store's step table under `reference:<candidate id>` with the hash of
the candidate's text, so a resumed run recomputes nothing.

Coq: BEq by the tier-1 portfolio (`comparison.beq_coq`, real coqc) and GTED over Coq's fully
printed terms. Lean: BEq by the tier-1 portfolio through the run's Lean backend
(`comparison.beq_lean`); without one `beq` is None (unknown, never False). GTED comes from
the statement text (`metrics.lean_optree`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from formalbench.backends.base import Backend
from formalbench.core.errors import FormalbenchError
from formalbench.core.formalization import Candidate, Problem
from formalbench.core.records import Language
from formalbench.store.formalize import FormalizeStore

ABOVE = 0.9  # IndiMathBench's "GTED > 0.9" column


def _step(candidate: Candidate) -> str:
    return f"reference:{candidate.id}"


def _digest(problem: Problem, candidate: Candidate) -> str:
    text = f"{problem.reference}\0{candidate.code}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def stored(store: FormalizeStore, problem: Problem, candidate: Candidate) -> dict[str, Any] | None:
    """The comparison kept for `candidate`, or None (none yet, or made for another text)."""
    if not problem.reference:
        return None
    value = store.step_value(candidate.problem_id, _step(candidate))
    if not isinstance(value, dict) or value.get("digest") != _digest(problem, candidate):
        return None
    return value


def compare_run(store: FormalizeStore, backend: Backend, language: Language) -> int:
    """Compare every finished candidate of a problem with a reference; returns how many
    comparisons were made now (the stored ones are not redone)."""
    made = 0
    for problem in store.problems():
        if not problem.reference:
            continue
        todo = [
            c
            for c in store.candidates(problem.id)
            if c.rounds and c.error is None and stored(store, problem, c) is None
        ]
        for candidate in todo:
            value = compare_one(problem.reference, candidate, backend, language)
            value["digest"] = _digest(problem, candidate)
            store.mark_step(problem.id, _step(candidate), value)
            made += 1
    return made


def compare_one(
    reference: str, candidate: Candidate, backend: Backend, language: Language
) -> dict[str, Any]:
    """{"beq", "forward", "backward", "gted", "compiled", "error"} for one candidate; a
    candidate that does not compile gets beq False and no GTED."""
    # imported here: `report` reads the table through this module and must stay light
    from formalbench.backends.coq import CoqBackend
    from formalbench.comparison.beq_coq import CoqBeq
    from formalbench.comparison.compare import coq_gted
    from formalbench.metrics.gted import gted
    from formalbench.metrics.lean_optree import LeanParseError, lean_tree

    out: dict[str, Any] = {"beq": None, "gted": None, "compiled": candidate.compiled}
    if language == Language.lean:
        from formalbench.backends.lean.backend import LeanBackend
        from formalbench.comparison.beq_lean import LeanBeq

        out["error"] = "BEq needs a Lean backend: beq is unknown"
        if candidate.compiled:
            try:
                out["gted"] = round(gted(lean_tree(reference), lean_tree(candidate.code)), 4)
            except LeanParseError as exc:
                out["error"] = f"GTED: {exc}"
        if isinstance(backend, LeanBackend):
            out.pop("error", None)
            if not candidate.compiled:
                out["beq"] = False
                return out
            try:
                found = LeanBeq(backend, timeout=backend.timeout).compare(reference, candidate.code)
            except FormalbenchError as exc:
                out["error"] = str(exc)
                return out
            out.update(
                beq=found.beq,
                forward=found.forward.counts,
                backward=found.backward.counts,
                tier=found.tier,
            )
        return out
    if not candidate.compiled:
        out["beq"] = False
        return out
    if not isinstance(backend, CoqBackend):
        out["error"] = f"BEq needs the coqc backend, not {type(backend).__name__}"
        return out
    try:
        result = CoqBeq(backend, timeout=backend.timeout).compare(reference, candidate.code)
    except FormalbenchError as exc:
        out["error"] = str(exc)
        return out
    out.update(
        beq=result.beq,
        forward=result.forward.counts,
        backward=result.backward.counts,
        tier=result.tier,
    )
    if result.compiled:
        score = coq_gted(result)
        if score["gted"] is None:
            out["error"] = f"GTED: {score['gted_error']}"
        else:
            out["gted"] = round(score["gted"], 4)
    return out


def reference_table(store: FormalizeStore, labels: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per model label, over first translations of problems with a reference: BEq count
    (None on Lean), GTED mean and count above 0.9 (over compiled candidates with a GTED),
    compiled count, candidates."""
    table: dict[str, dict[str, Any]] = {}
    for problem in store.problems():
        if not problem.reference:
            continue
        for c in store.candidates(problem.id):
            if not c.rounds or c.error is not None or c.translation != 0:
                continue
            row = table.setdefault(
                labels.get(c.model, c.model),
                {"candidates": 0, "compiled": 0, "beq": 0, "gteds": []},
            )
            row["candidates"] += 1
            row["compiled"] += c.compiled
            value = stored(store, problem, c) or {}
            if value.get("beq") is None and c.language == Language.lean:
                row["beq"] = None
            elif row["beq"] is not None:
                row["beq"] += bool(value.get("beq"))
            if c.compiled and isinstance(value.get("gted"), int | float):
                row["gteds"].append(float(value["gted"]))
    for row in table.values():
        scores = row.pop("gteds")
        row["gted_mean"] = round(sum(scores) / len(scores), 4) if scores else None
        row["gted_above_0_9"] = sum(s > ABOVE for s in scores)
    return table
