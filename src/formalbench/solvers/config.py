"""Solver settings: the knobs of every solver and the tactic portfolio's defaults."""

from __future__ import annotations

from pydantic import Field

from formalbench.core.records import Language, Record

LEAN_TACTICS: tuple[str, ...] = (
    "rfl",
    "decide",
    "norm_num",
    "simp",
    "omega",
    "linarith",
    "positivity",
    "ring",
    "field_simp",
    "nlinarith",
    "tauto",
    "aesop",
)
COQ_TACTICS: tuple[str, ...] = (
    "easy",
    "reflexivity",
    "auto",
    "tauto",
    "congruence",
    "lia",
    "lra",
    "ring",
    "field",
    "intuition",
    "nia",
    "nra",
    "firstorder",
)


# Each tactic is also tried after these prefixes (the empty one: as it is).
LEAN_PREFIXES: tuple[str, ...] = ("", "intros; ")
COQ_PREFIXES: tuple[str, ...] = ("", "intros; ", "intros; subst; ")
# Loaded inside the proof before the tactics, so a task that does not import them still
# gets lia/lra/nia/nra (`Require` is allowed in a Coq proof and leaves the header alone).
COQ_REQUIRES = "Require Import Lia Lra Psatz Ring Field."


def _default_tactics() -> dict[Language, list[str]]:
    return {Language.lean: list(LEAN_TACTICS), Language.coq: list(COQ_TACTICS)}


def _default_prefixes() -> dict[Language, list[str]]:
    return {Language.lean: list(LEAN_PREFIXES), Language.coq: list(COQ_PREFIXES)}


def _default_requires() -> dict[Language, str]:
    return {Language.coq: COQ_REQUIRES}


class SolverConfig(Record):
    """Knobs of every solver; `None` means the solver's own default (see each solver).

    Defaults follow CAM-Bench's proof-search setting: 16,000 output tokens per call and
    a token budget of 10^6 per task (file); the sequential solver makes a first try and up
    to 32 repair turns per hole at temperature 0.4, the agent 40 turns; whole-proof sampling
    runs at temperature 1.0.
    """

    samples: int = Field(default=1, ge=1)
    temperature: float | None = Field(default=None, ge=0.0)
    max_tokens: int = Field(default=16_000, ge=1)  # output cap of one model call
    # sequential: repair turns per hole after its first try (32); agent: model turns (40)
    max_turns: int | None = Field(default=None, ge=1)
    token_budget: int = Field(default=1_000_000, ge=1)  # prompt + completion, per task
    tactics: dict[Language, list[str]] = Field(default_factory=_default_tactics)
    prefixes: dict[Language, list[str]] = Field(default_factory=_default_prefixes)  # portfolio
    requires: dict[Language, str] = Field(default_factory=_default_requires)  # portfolio
    tactic_timeout: int = Field(default=3, ge=1)  # portfolio: seconds for one tactic
    check_timeout: float | None = Field(default=None, gt=0)  # one check; None: backend's
    search_paths: list[str] = Field(default_factory=list)  # agent: library sources to search
    search_results: int = Field(default=20, ge=1)
    observation_chars: int = Field(default=6_000, ge=200)  # agent/sequential feedback cap
    # Show the informal answer of an evaluation / algorithm task ("find the value") to the
    # model. Off by default: the answer is what such a task asks the prover to find.
    show_answer: bool = False
