"""The APE task record (one per commit, file and chunk) and the mining configuration.

Field names follow the APE-Bench I dataset card, so a mined run can be compared with it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ChangeCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an exported task's counts are read back

    added_lines: int = 0
    total_changes: int = 0  # added + removed lines
    pure_changes: int = 0  # a removed line directly followed by an added one counts once
    absolute_added_lines: int = 0  # added - removed


class ApeTask(BaseModel):
    id: str
    commit_hash: str
    parent_commit_hash: str
    date: str
    author: str = ""
    message: str
    type: str  # feat / fix / refactor / chore / other
    type_source: str = "conventional"  # or "inferred" for repositories without prefixes
    toolchain_content: str = ""
    language: str
    change_type: str
    file_path_before: str | None
    file_path_after: str | None
    content_before: str
    content_after: str
    gold_diff: str
    counts: ChangeCounts
    filtered_gold_diff: str
    filtered: ChangeCounts
    is_split_hunk: bool = False
    chunk: int = 0
    input_tokens: int = 0


class Thresholds(BaseModel):
    """The content filters' thresholds, all set: what the filters read."""

    min_filtered_changes: int
    max_filtered_changes: int
    min_distinct_ratio: float
    max_scattered_edits: int
    max_scattered_share: float
    min_total_edits: int
    max_input_tokens: int


# Per language. Lean: the reference's values (tuned on mathlib). Coq: chosen with hand-labelled
# candidates of four Coq histories (bench/bench_ape_filters.py; docs/decisions.md,
# "Per-language filter thresholds"): Coq proofs repeat tactic lines (`intros.`, `auto.`,
# bullets), so the distinct-lines ratio tuned on Lean drops real proofs.
LANGUAGE_THRESHOLDS: dict[str, Thresholds] = {
    "lean": Thresholds(
        min_filtered_changes=1,
        max_filtered_changes=100,
        min_distinct_ratio=0.8,
        max_scattered_edits=10,
        max_scattered_share=0.1,
        min_total_edits=10,
        max_input_tokens=16384,
    ),
    "coq": Thresholds(
        min_filtered_changes=1,
        max_filtered_changes=200,
        min_distinct_ratio=0.6,
        max_scattered_edits=100,
        max_scattered_share=0.35,
        min_total_edits=10,
        max_input_tokens=16384,
    ),
}


# Commit types mined. A conventional prefix is the author's word: the reference's four kinds.
# A type inferred from the subject's first verb is a guess, and "other" (subjects such as
# "Lemma concat_app: ...", "Two lemmas about mymax") held a third of the labelled Coq tasks
# while being no less noisy than the rest, so an inferred history keeps it.
TASK_TYPES: dict[str, list[str]] = {
    "conventional": ["feat", "fix", "refactor", "chore"],
    "inferred": ["feat", "fix", "refactor", "chore", "other"],
}


class MineConfig(BaseModel):
    """Every threshold of the filters. A threshold left None takes its language's value
    (`LANGUAGE_THRESHOLDS`, by `thresholds` once the history's language is known); one given
    explicitly (a command-line option) wins over it."""

    types: list[str] | None = None  # None: TASK_TYPES of the history's type source
    type_source: str = "auto"  # conventional / inferred / auto (inferred when < half conventional)
    max_diff_lines: int = 100  # chunking threshold on pure changes
    min_filtered_changes: int | None = None
    max_filtered_changes: int | None = None
    min_distinct_ratio: float | None = None
    max_scattered_edits: int | None = None
    max_scattered_share: float | None = None
    min_total_edits: int | None = None
    max_input_tokens: int | None = None
    chars_per_token: int = 4  # no tokenizer is installed offline: tokens estimated from length
    since: str | None = None
    limit: int | None = None

    def kept_types(self, type_source: str) -> list[str]:
        """The commit types mined: those given, else the type source's (`TASK_TYPES`)."""
        if self.types is not None:
            return self.types
        return TASK_TYPES.get(type_source, TASK_TYPES["conventional"])

    def thresholds(self, language: str) -> Thresholds:
        """`language`'s thresholds, with those set here instead."""
        values = LANGUAGE_THRESHOLDS.get(language, LANGUAGE_THRESHOLDS["lean"]).model_dump()
        mine = {k: getattr(self, k) for k in values if getattr(self, k) is not None}
        return Thresholds(**{**values, **mine})
