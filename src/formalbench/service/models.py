"""The requests `formalbench serve` accepts: Kimina Lean Server's shapes, plus the strict route.

Kimina's `/verify` takes `{"codes": [{"custom_id", "proof" | "code"}], "timeout",
"disable_cache", "infotree_type"}`; its `/check` (and `/api/check`, what its current client
posts) takes `{"snippets": [{"id", "code"}], "timeout", "reuse", "debug", "infotree"}`, and an
older single form `{"snippet": {...}}`. Unknown fields are ignored, as Kimina's models do, so a
client sending Lean-only options (`infotree`) works unchanged. Our additions, on any item:
`original` (the task's text) or `task_id` (a text registered with `POST /tasks`); an item that
carries either is decided by the strict verifier.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Item(BaseModel):
    """One candidate, in whichever route's words: `custom_id`/`proof` (or `code`) for `/verify`,
    `id`/`code` for `/check`; `original` or `task_id` asks for the strict verdict."""

    model_config = ConfigDict(extra="ignore")

    custom_id: str | int | None = None
    id: str | int | None = None
    proof: str | None = None
    code: str | None = None
    original: str | None = None
    task_id: str | None = None

    @model_validator(mode="after")
    def _one_task(self) -> Item:
        if self.original is not None and self.task_id is not None:
            raise ValueError("give `original` or `task_id`, not both")
        return self

    def name(self) -> str:
        """The id the answer carries back (Kimina answers ids as strings)."""
        found = self.custom_id if self.custom_id is not None else self.id
        return "" if found is None else str(found)

    def text(self) -> str | None:
        """The candidate's text: `proof` first, then `code` (Kimina's order)."""
        return self.proof if self.proof is not None else self.code


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    codes: list[Item] = Field(min_length=1)
    timeout: float = Field(300, gt=0)
    disable_cache: bool = False


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    snippets: list[Item] | None = None
    snippet: Item | None = None
    timeout: float = Field(30, gt=0)
    reuse: bool = True  # Kimina's "reuse a warm REPL"; False here also skips the verdict cache

    @model_validator(mode="after")
    def _some(self) -> CheckRequest:
        if (self.snippets is None) == (self.snippet is None):
            raise ValueError("give `snippets` (a non-empty list) or `snippet`, not both")
        if self.snippets is not None and not self.snippets:
            raise ValueError("`snippets` must not be empty")
        return self

    def items(self) -> list[Item]:
        return self.snippets if self.snippets is not None else [self.snippet]  # type: ignore[list-item]


class TaskRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    original: str = Field(min_length=1)
