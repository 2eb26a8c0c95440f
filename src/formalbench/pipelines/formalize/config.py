"""What a formalize run is asked to do; stored with the run and compared on resume.

Defaults are the papers': FMC samples 5 translations per problem at temperature 1.0 and
re-translates a misaligned statement from scratch; IndiMathBench feeds compiler errors back
for up to 6 rounds after the first translation (so a candidate has at most 7 compiles) and
labels problems with a small set of olympiad categories.

Library context is retrieved with BM25 by default; `retriever="embed"` ranks the library by
cosine similarity of embeddings from `embed_model` instead (an OpenAI-compatible
`/v1/embeddings` endpoint). Both are part of the run's identity: they change what a
translator is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from formalbench.core.errors import InputError
from formalbench.core.records import Record

DEFAULT_CATEGORIES: tuple[str, ...] = (
    "algebra",
    "number_theory",
    "combinatorics",
    "geometry",
    "analysis",
)
OTHER = "other"
# Knobs that change how fast or how far a run goes, not what a candidate is: a resume may
# change them freely.
_NOT_IDENTITY = ("workers", "concurrency", "timeout", "index_cache", "run_token_budget")


class FormalizeConfig(Record):
    """Everything `formalbench formalize` was asked to do."""

    problems: str
    models: list[str] = Field(min_length=1)
    backend: str = "lean"
    backend_options: dict[str, Any] = Field(default_factory=dict)
    samples: int = Field(default=5, ge=1)
    temperature: float = Field(default=1.0, ge=0)
    # repair rounds fed with the checker's messages, after the first translation
    repair_rounds: int = Field(default=6, ge=0)
    retranslations: int = Field(default=1, ge=0)  # fresh translations after misalignment
    judge_model: str | None = None  # None: the first model
    judge_temperature: float = Field(default=0.0, ge=0)
    judge_retries: int = Field(default=2, ge=0)  # extra asks when a judge's JSON is unreadable
    categories: list[str] = Field(default_factory=lambda: list(DEFAULT_CATEGORIES))
    context_file: str | None = None
    library: list[str] = Field(default_factory=list)  # source roots to retrieve from
    retriever: Literal["bm25", "embed"] = "bm25"
    embed_model: str | None = None  # openai:NAME[@URL], with retriever="embed"
    context_items: int = Field(default=40, ge=0)  # library declarations per category
    context_chars: int = Field(default=8000, ge=0)
    fewshot: int = Field(default=2, ge=0)
    split_parts: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    workers: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=1)
    index_cache: str | None = None
    run_token_budget: int | None = Field(default=None, ge=1)

    @field_validator("categories")
    @classmethod
    def _categories(cls, value: list[str]) -> list[str]:
        cleaned = list(dict.fromkeys(c.strip() for c in value if c.strip()))
        if not cleaned:
            raise ValueError("at least one category is needed")
        return cleaned

    @model_validator(mode="after")
    def _retrieval(self) -> FormalizeConfig:
        if self.retriever == "embed" and not self.embed_model:
            raise ValueError('retriever "embed" needs embed_model (e.g. openai:NAME@URL)')
        if self.retriever == "bm25" and self.embed_model:
            raise ValueError('embed_model is only used with retriever "embed"')
        return self

    @property
    def max_rounds(self) -> int:
        """Compiles a candidate may have: its first translation and every repair."""
        return 1 + self.repair_rounds

    @property
    def judge(self) -> str:
        return self.judge_model or self.models[0]

    def identity(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        for key in _NOT_IDENTITY:
            data.pop(key, None)
        data["judge_model"] = self.judge
        return data


def check_resumable(stored: dict[str, Any], config: FormalizeConfig, where: Path) -> None:
    """Refuse to continue a run with a config that would mix incompatible candidates."""
    now = config.identity()
    changed = sorted(k for k in set(stored) | set(now) if stored.get(k) != now.get(k))
    if changed:
        detail = "; ".join(f"{k}: {stored.get(k)!r} -> {now.get(k)!r}" for k in changed[:4])
        raise InputError(
            f"{where}: this run was made with other settings ({detail}); "
            "use a new --run-dir or the same settings"
        )


def category_key(name: str) -> str:
    """A category name compared loosely: case, spaces, dashes and `&` do not matter."""
    return "_".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())
