"""Records of autoformalization (IndiMathBench, FMC): problems, candidates, reviews.

A problem is informal text; each model proposes candidates, each candidate goes through
compile-feedback rounds and a semantic alignment check; a summary ranks the candidates; a
person accepts (possibly after editing) or rejects. Every step is a record so that the
pipeline can stop and resume and the dashboard can show the whole trail.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from formalbench.core.ids import RecordId
from formalbench.core.records import Diagnostic, Language, Record, TokenUsage


class Problem(Record):
    """One informal problem to formalize (a line of the PROBLEMS JSONL)."""

    id: RecordId
    informal: str
    solution: str | None = None  # for "find" problems: the answer to state as "X iff ..."
    category: str | None = None  # given, or labelled by a model from a configured list
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    # a formal statement to compare candidates with (BEq, GTED), in the run's assistant
    reference: str | None = None


class CompileRound(Record):
    """One translation or repair of a candidate and what the assistant said of it."""

    round: int  # 1 = first translation; 2.. = repairs fed with the previous diagnostics
    code: str
    compiled: bool
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    raw_output: str = ""
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    format_failure: str | None = None  # no code block, wrong language, prose only


class Decomposition(Record):
    """The informal problem taken apart before judging a statement against it (FMC)."""

    data_type: str
    conditions: list[str] = Field(default_factory=list)
    proof_goal: str


class Alignment(Record):
    """The semantic judgement of a compiled candidate against the decomposition."""

    aligned: bool
    explanation: str = ""
    decomposition: Decomposition | None = None
    model: str | None = None
    raw_output: str = ""
    # The judge's reply could not be read (after retries): `aligned` is then False but the
    # candidate was not found misaligned, so it is not re-translated.
    error: str | None = None


class Candidate(Record):
    """One model's formal statement for one problem, with its whole trail."""

    id: str  # f"{problem_id}/{model}/{sample}" plus "#t{n}" for a re-translation
    problem_id: str
    model: str
    sample: int
    language: Language
    translation: int = 0  # how many times it was re-translated from scratch after misalignment
    rounds: list[CompileRound] = Field(default_factory=list)
    alignment: Alignment | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    parts: list[str] = Field(default_factory=list)  # "shared conditions + part i" splits
    # A model call that failed for good (endpoint down, budget spent): the candidate is kept
    # with its rounds so far and resumed by the next run, not counted as a result.
    error: str | None = None

    @property
    def code(self) -> str:
        return self.rounds[-1].code if self.rounds else ""

    @property
    def compiled(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].compiled

    @property
    def tokens(self) -> TokenUsage:
        return sum((r.tokens for r in self.rounds), TokenUsage())


class RankedCandidate(Record):
    candidate_id: str
    rank: int  # 1 = best
    verdict: str = ""  # what it got wrong, and which parts another got right


class ProblemSummary(Record):
    """The ensemble's summary of one problem: candidates ranked, each with its faults."""

    problem_id: str
    ranking: list[RankedCandidate] = Field(default_factory=list)
    text: str = ""
    model: str | None = None
    error: str | None = None  # the judge's ranking could not be read; order is the fallback
    # the judge sees each distinct statement once, under a key (C1, C2...) that its verdicts
    # and text use: key -> the ids of the candidates with that statement
    keys: dict[str, list[str]] = Field(default_factory=dict)


class ReviewStatus(StrEnum):
    unreviewed = "unreviewed"
    accepted = "accepted"
    rejected = "rejected"


class ReviewDecision(Record):
    """A person's decision on a problem; `version` guards against two tabs overwriting."""

    problem_id: str
    status: ReviewStatus
    candidate_id: str | None = None
    code: str | None = None  # the accepted text, after the reviewer's edits
    edited: bool = False
    note: str = ""
    reviewer: str = ""
    at: str = ""  # ISO time
    version: int = 0
