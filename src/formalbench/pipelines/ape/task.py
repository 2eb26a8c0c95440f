"""The APE task record (one per commit, file and chunk) and the mining configuration.

Field names follow the APE-Bench I dataset card, so a mined run can be compared with it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class ChangeCounts(BaseModel):
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


class MineConfig(BaseModel):
    """Every threshold of the filters, with the reference's values as defaults."""

    types: list[str] = Field(default_factory=lambda: ["feat", "fix", "refactor", "chore"])
    type_source: str = "auto"  # conventional / inferred / auto (inferred when < half conventional)
    max_diff_lines: int = 100  # chunking threshold on pure changes
    min_filtered_changes: int = 1
    max_filtered_changes: int = 100
    min_distinct_ratio: float = 0.8
    max_scattered_edits: int = 10
    max_scattered_share: float = 0.1
    min_total_edits: int = 10
    max_input_tokens: int = 16384
    chars_per_token: int = 4  # no tokenizer is installed offline: tokens estimated from length
    since: str | None = None
    limit: int | None = None
