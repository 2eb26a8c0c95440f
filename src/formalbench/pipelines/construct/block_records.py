"""Records of the formal stages (steps 8-11): blocks, compile rounds, block reviews, trails.

They are pydantic models so that the model's structured replies are validated against them
(a block list, a review report) and every trail round-trips through the store as JSON. The
records phase 2 hands over (`ConstructProblem`) live in `core.construct`; these belong to
phase 3 alone and stay beside its code.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from formalbench.core.records import Diagnostic, Record, TokenUsage


def _has_content(value: str) -> str:
    if not value.strip():
        raise ValueError("a block needs content")
    return value


BlockContent = Annotated[str, AfterValidator(_has_content)]  # a block's text, never blank


class BlockKind(StrEnum):
    """Table 8 of CAM-Bench: how a block is translated."""

    hints = "hints"  # informal guidance: kept for provenance, never formalized
    defn = "defn"  # definitions, predicates, notation, named terms
    opt_prob = "opt_prob"  # objective, feasible set, constraints
    algo = "algo"  # algorithms, update rules, iterations
    thm = "thm"  # theorem targets: proof left as a hole

    @property
    def formalizable(self) -> bool:
        return self is not BlockKind.hints


class Block(Record):
    """One semantic block of an exercise (Appendix C.1 of the seed)."""

    index: int  # 1-based position in the exercise
    source: str
    source_idx: str
    kind: BlockKind
    content: BlockContent
    term: str | None = None  # the name a defn / opt_prob / algo block introduces


class ProposedBlock(Record):
    """A block as the model proposes it (the pipeline numbers and sources it)."""

    kind: BlockKind
    content: BlockContent
    term: str | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _alias(cls, value: object) -> object:
        aliases = {"alg": "algo", "algorithm": "algo", "hint": "hints", "theorem": "thm"}
        if isinstance(value, str):
            return aliases.get(value.strip().lower(), value.strip().lower())
        return value


class BlockSplit(Record):
    """The model's reply to the block-split prompt."""

    blocks: list[ProposedBlock]

    @model_validator(mode="after")
    def _theorem_is_root(self) -> BlockSplit:
        kinds = [b.kind for b in self.blocks]
        if BlockKind.thm not in kinds:
            raise ValueError(
                "no `thm` block in the model's plan (the exercise's theorem must be a block)"
            )
        last = max(i for i, k in enumerate(kinds) if k.formalizable)
        if kinds[last] is not BlockKind.thm:
            raise ValueError("the last formal block must be the theorem (the root)")
        return self


class Severity(StrEnum):
    P0 = "P0"
    P1 = "P1"
    P2 = "P2"


class OverallStatus(StrEnum):
    usable = "usable"
    usable_with_revision = "usable_with_revision"
    not_usable_yet = "not_usable_yet"


class Truth(StrEnum):
    true = "true"
    false = "false"
    unknown = "unknown"
    not_applicable = "not_applicable"


class ReviewIssue(Record):
    severity: Severity
    issue_type: str
    location: str = ""
    reason: str = ""
    suggested_fix: str = ""


class BlockReview(Record):
    """The structured report of the block reviewer (Appendix C.3 of the seed)."""

    math_equivalent: bool
    truth_judgement: Truth
    overall_status: OverallStatus
    dominant_issue_types: list[str] = Field(default_factory=list)
    top_priority_fix: str = ""
    issues: list[ReviewIssue] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)

    @property
    def usable(self) -> bool:
        return self.overall_status is OverallStatus.usable


class WeakeningVerdict(Record):
    """The model's judgement of a rewrite against the version it replaces."""

    weakens: bool
    reason: str = ""


class CompileRound(Record):
    """One version of a block's code and what the assistant (and the text checks) said."""

    stage: str  # translate | repair | rewrite | rewrite_repair
    round: int
    code: str
    compiled: bool
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    format_failure: str | None = None
    tokens: TokenUsage = Field(default_factory=TokenUsage)


class ReviewRound(Record):
    """One round of Algorithm 3: the review, and the rewrite it led to (if any)."""

    round: int
    code: str
    review: BlockReview | None = None
    review_error: str | None = None  # the reply could not be read as a report
    rewrite: str | None = None
    rejected: list[str] = Field(default_factory=list)  # why the rewrite was refused
    compiles: list[CompileRound] = Field(default_factory=list)
    outcome: str = ""  # accepted | rejected | recompiled | compile_failed | unreadable


class BlockStatus(StrEnum):
    skipped = "skipped"  # hints: not formalized
    accepted = "accepted"  # compiled and reviewed usable
    review_failed = "review_failed"  # compiled, never reviewed usable within S rounds
    compile_failed = "compile_failed"  # no compilable version within R repairs


class BlockTrail(Record):
    """Everything that happened to one block: its rounds, reviews and final code."""

    block: Block
    status: BlockStatus
    code: str = ""  # the version in the file ("" when the block is not in it)
    compiles: list[CompileRound] = Field(default_factory=list)
    reviews: list[ReviewRound] = Field(default_factory=list)
    failure: str | None = None

    @property
    def compiled(self) -> bool:
        return self.status in (BlockStatus.accepted, BlockStatus.review_failed)
