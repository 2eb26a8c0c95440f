"""What a problem page shows, put together from the run's records.

Kept apart from the web routes so that ordering and selection rules (compiled candidates
first, then the summary's rank) are plain functions, tested without a server.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any

from formalbench.backends.registry import LANGUAGES
from formalbench.core.formalization import (
    Candidate,
    Problem,
    ProblemSummary,
    RankedCandidate,
    ReviewDecision,
)
from formalbench.core.records import Diagnostic, Language, Severity


@dataclass
class CandidateView:
    candidate: Candidate
    rank: int | None  # the summary's rank (1 = best); None when the summary skips it
    verdict: str  # the summary's remark on this candidate
    key: str | None = None  # the name the summary's text uses for its statement (C1, C2...)
    comparison: dict[str, Any] | None = None  # BEq and GTED against the problem's reference

    @property
    def errors(self) -> list[Diagnostic]:
        last = self.candidate.rounds[-1] if self.candidate.rounds else None
        return [d for d in (last.diagnostics if last else []) if d.severity == Severity.error]


@dataclass
class ProblemView:
    problem: Problem
    candidates: list[CandidateView]
    summary: ProblemSummary | None
    decision: ReviewDecision | None
    history: list[ReviewDecision] = field(default_factory=list)

    def find(self, candidate_id: str | None) -> CandidateView | None:
        return next((c for c in self.candidates if c.candidate.id == candidate_id), None)


def order_candidates(
    candidates: list[Candidate], summary: ProblemSummary | None
) -> list[CandidateView]:
    """Compiling candidates first, then by the summary's rank, then in the order they came.

    The paper's reviewers start from a verified statement; among those the summary's ranking
    is the best guess of the most faithful one.
    """
    ranked: dict[str, RankedCandidate] = (
        {r.candidate_id: r for r in summary.ranking} if summary else {}
    )
    keys = {cid: key for key, ids in summary.keys.items() for cid in ids} if summary else {}
    views = [
        CandidateView(
            c,
            ranked[c.id].rank if c.id in ranked else None,
            ranked[c.id].verdict if c.id in ranked else "",
            keys.get(c.id),
        )
        for c in candidates
    ]
    order = {id(v): i for i, v in enumerate(views)}
    return sorted(
        views,
        key=lambda v: (
            not v.candidate.compiled,
            v.rank is None,
            v.rank or 0,
            order[id(v)],
        ),
    )


def editor_start(view: ProblemView, wanted: str | None) -> tuple[CandidateView | None, str]:
    """The candidate in the editor and its text: the one asked for, else the decided one
    (with the decided text), else the first in order."""
    if wanted is not None:
        chosen = view.find(wanted)
        if chosen is not None:
            return chosen, chosen.candidate.code
    if view.decision is not None and view.decision.code is not None:
        return view.find(view.decision.candidate_id), view.decision.code
    first = view.candidates[0] if view.candidates else None
    return first, first.candidate.code if first else ""


def edit_diff(original: str, edited: str, name: str) -> str:
    """A unified diff from the candidate's text to the reviewer's text ('' if unchanged)."""
    if original == edited:
        return ""
    lines = difflib.unified_diff(
        original.splitlines(keepends=True),
        edited.splitlines(keepends=True),
        fromfile=f"{name} (generated)",
        tofile=f"{name} (reviewed)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def run_settings(config: dict[str, Any] | None) -> dict[str, Any]:
    """The run's settings: `formalbench formalize` stores them under "config" (beside the
    "identity" it compares on resume); a flat dict is read as the settings themselves."""
    config = config or {}
    nested = config.get("config")
    return nested if isinstance(nested, dict) else config


def run_language(config: dict[str, Any] | None, candidates: list[Candidate]) -> Language | None:
    """The run's language: its settings say it (language, or the backend's), else its
    candidates do."""
    settings = run_settings(config)
    value = settings.get("language")
    if isinstance(value, str) and value in Language.__members__:
        return Language(value)
    name = backend_name(config, None)
    if name in LANGUAGES:
        return LANGUAGES[name]
    return candidates[0].language if candidates else None


def backend_name(config: dict[str, Any] | None, language: Language | None) -> str | None:
    """The backend that checked the run's candidates: the settings', else the language's own.
    Only the name is read (of a `{"name": …, options…}` entry too): the registry refuses a
    name it does not know, and nothing else the settings say reaches the backend."""
    value = run_settings(config).get("backend")
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"].strip().lower()
    return language.value if language is not None else None


MAX_CHECK_TIMEOUT = 600.0  # seconds; a run folder cannot make a re-check wait for ever


def check_timeout(config: dict[str, Any] | None) -> float | None:
    """The run's time limit for one check, within (0, MAX_CHECK_TIMEOUT]; None: the
    backend's default. A run folder is data (issue 29 item 1): this and the backend's *name*
    are all a re-check takes from it; programs, flags and project folders come from the
    reviewer's own command line (`formalbench review --project/--toolchain`)."""
    value = run_settings(config).get("timeout")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return min(float(value), MAX_CHECK_TIMEOUT)
