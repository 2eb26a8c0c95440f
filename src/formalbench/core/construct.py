"""Records of benchmark construction from a textbook (CAM-Bench): what each stage hands on.

The pipeline has three phases that different modules own, so the records they pass between
them live here, in `core`, where every layer can read them:

1. extraction (deterministic): a textbook folder -> `TextbookItem`s (exercises and labelled
   statements) -> one `ExtractedExercise` per exercise with its dependency expansion tree
   (`ExpansionNode`, Algorithm 1: depth budget, cycle guard, provenance of every node);
2. source stages (models): clean, naturalize, recover conditions, review, repair ->
   `ConstructProblem` with the CAM-Bench text fields, of which only `problem_finally` may
   change after condition recovery, and its review trail;
3. formal stages (models + assistant): semantic blocks, block-wise translation and review,
   packaging (records of their own, beside the code that makes them).

Unresolved references are kept as such (`Reference.resolved` is False): nothing is invented.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from formalbench.core.ids import RecordId
from formalbench.core.records import Record, TokenUsage

# Kinds of labelled statements an exercise may refer to (the reader maps each textbook's
# environment names onto these; `exercise` and `solution` are the items themselves).
STATEMENT_KINDS = (
    "definition",
    "theorem",
    "lemma",
    "proposition",
    "corollary",
    "example",
    "equation",
    "algorithm",
)


class Reference(Record):
    """One cross-reference made by a text, as written and as resolved."""

    raw: str  # the source text of the reference, e.g. `\acronymref{theorem}{NMUS}`
    key: str  # the label looked up, e.g. `NMUS` or `thm:rank-nullity`
    kind: str | None = None  # the kind the reference names, when it names one
    resolved: bool = False  # a labelled item with this key exists in the textbook


class TextbookItem(Record):
    """A labelled piece of a textbook: an exercise, or a statement others may refer to."""

    label: str  # the key references use (unique within the textbook)
    kind: str  # `exercise` or one of STATEMENT_KINDS
    text: str  # macros the source defines are expanded
    title: str | None = None
    number: str | None = None  # the number the book prints, where it can be known
    section: str = ""  # chapter / section path, e.g. `Vector Spaces / Subspaces`
    source_file: str = ""  # path relative to the textbook folder
    line: int | None = None
    solution: str | None = None  # exercises only
    refs: list[Reference] = Field(default_factory=list)


class ExpansionNode(Record):
    """A node of an exercise's dependency expansion (Algorithm 1 of CAM-Bench)."""

    label: str
    kind: str
    text: str
    depth: int  # hops from the exercise (0 = the exercise itself)
    via: str | None = None  # the raw reference in the parent that brought this node in
    parent: str | None = None  # label of the parent node (provenance)
    children: list[ExpansionNode] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)  # keys referenced but not found
    truncated: list[str] = Field(default_factory=list)  # keys left out: depth or cycle


class ExtractedExercise(Record):
    """An exercise as extraction hands it to the model stages."""

    id: RecordId  # stable id within the textbook, e.g. `fcla/NM.C10`
    source: str  # book and section, e.g. `fcla/Nonsingular Matrices`
    source_idx: str  # the exercise as the book names it, e.g. `Exercise NM.C10`
    section: str = ""
    text: str
    solution: str | None = None
    refs: list[Reference] = Field(default_factory=list)
    expansion: ExpansionNode


class ReviewLabel(StrEnum):
    accept = "accept"
    revise = "revise"
    hold = "hold"


class ReviewFlag(StrEnum):
    missing_assumption = "missing_assumption"
    task_drift = "task_drift"
    missing_dependency = "missing_dependency"
    missing_def = "missing_def"
    unsuitable = "unsuitable"  # asks to describe / plot / compute by software: not formalizable


class Pool(StrEnum):
    """The funnel's pools: original items, items repaired after `revise`, after `hold`."""

    original = "OI"
    revised = "RI"
    held = "HI"


class SourceReview(Record):
    """One source-level review of `problem_finally` against the original `problem`."""

    label: ReviewLabel
    flags: list[ReviewFlag] = Field(default_factory=list)
    reason: str = ""
    suggestion: str = ""
    pool: Pool = Pool.original
    round: int = 1
    model: str = ""
    tokens: TokenUsage = Field(default_factory=TokenUsage)


class ConstructProblem(Record):
    """An exercise after the source stages: the CAM-Bench text fields and the review trail."""

    index: int
    id: RecordId
    source: str
    source_idx: str
    problem: str  # the exercise as extracted
    problem_clean: str | None = None
    problem_with_context: str | None = None
    problem_standardized_math: str | None = None
    problem_finally: str | None = None
    reviews: list[SourceReview] = Field(default_factory=list)
    usable: bool = False  # accepted, at first review or after repair + re-review
