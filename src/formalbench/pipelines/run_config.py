"""What an evaluation run is: the one record that decides what a run does and resumes.

It is stored with the run; reopening a run directory with a config that differs in a key
that decides verdicts or samples (solver, model, backend, dataset, selection...) is refused
by the store, so one run never mixes incompatible attempts.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import Language, Record
from formalbench.pipelines.run_dir import default_run_dir


class Selection(Record):
    """Which tasks of the dataset the run covers."""

    split: str | None = None
    pattern: str | None = None  # glob over task ids
    labels: list[str] = Field(default_factory=list)  # key=value
    sample: int | None = Field(default=None, ge=1)  # a fixed-seed sample of N tasks
    seed: int = 0


class EvalConfig(Record):
    """Everything `formalbench eval` was asked to do (see README, "Use")."""

    dataset: str
    solver: str = "portfolio"
    model: str | None = None
    samples: int = Field(default=1, ge=1)
    backend: str | None = None  # None: the language of the tasks (coq or lean)
    backend_options: dict[str, Any] = Field(default_factory=dict)
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    workers: int | None = Field(default=None, ge=1)  # proof-assistant processes
    concurrency: int | None = Field(default=None, ge=1)  # attempts in flight at once
    timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)  # seconds for one check
    selection: Selection = Field(default_factory=Selection)
    on_error: Literal["skip", "fail"] = "fail"  # malformed dataset lines
    temperature: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_turns: int | None = Field(default=None, ge=1)
    token_budget: int | None = Field(default=None, ge=1)  # per task
    run_token_budget: int | None = Field(default=None, ge=1)  # the whole run
    tactics: list[str] | None = None  # portfolio: replaces the task language's default list
    model_concurrency: int | None = Field(default=None, ge=1)  # model calls in flight
    retry_errors: bool = False  # redo attempts that failed on a model or backend error
    show_answer: bool = False  # give the model the expected answer of construction tasks
    # Check each task's original once before the run (None: on for the portfolio solver).
    preflight: bool | None = None
    allow_version_mismatch: bool = False  # run Lean tasks made for another toolchain/library
    # Coq: axioms allowed besides the presets (`--allow-axiom`) and the presets (None: the
    # default; `--allow-axioms`); see checking/coq_axioms.py
    allowed_axioms: list[str] = Field(default_factory=list)
    axiom_presets: list[str] | None = None
    # Coq: confirm each pass with coqchk (checking/coq_replay.py); off: coqc's kernel alone
    replay: bool = True

    def policy(self, language: Language) -> VerifierPolicy:
        """The verifier's policy of this run (the task's own `allowed_axioms` come on top)."""
        return VerifierPolicy(axiom_presets=self.axiom_presets, replay=self.replay).with_axioms(
            self.allowed_axioms, language
        )

    def wants_preflight(self) -> bool:
        return self.solver == "portfolio" if self.preflight is None else self.preflight

    def checked_tactics(self) -> list[str] | None:
        """The tactic list as the run uses and stores it (each stripped), None for the
        default one; an InputError when it is unusable (an empty entry, or given to a solver
        that reads no tactics)."""
        if self.tactics is None:
            return None
        if self.solver != "portfolio":
            raise InputError(f"--tactics is for the portfolio solver, not {self.solver!r}")
        tactics = [t.strip() for t in self.tactics]
        if not tactics or any(not t or "\n" in t for t in tactics):
            raise InputError(
                f"--tactics {self.tactics!r}: give one or more tactics, one per entry, none empty"
            )
        return tactics

    def identity(self) -> dict[str, Any]:
        """The part of the config stored with the run and compared on resume.

        Workers, concurrency, executor and budgets change how fast or how far a run goes,
        not what an attempt is, so a resume may change them; so does `retry_errors`, which
        only says what a resume redoes. The tactic list decides what the portfolio tries,
        so it is part of the identity (`tactics`, None for the default list).
        """
        data = self.model_dump(mode="json")
        harness = ("workers", "concurrency", "executor", "ray_address", "run_token_budget")
        checks = ("preflight", "allow_version_mismatch")
        for key in (*harness, "model_concurrency", "retry_errors", *checks):
            data.pop(key, None)
        for key, default in (("allowed_axioms", []), ("axiom_presets", None)):
            if data.get(key) == default:  # the runs made before these options resume
                data.pop(key, None)
        if data.get("replay") is True:  # the default: runs stored before it resume as before
            data.pop("replay")
        data["params"] = {
            k: data.pop(k)
            for k in ("timeout", "max_turns", "token_budget", "show_answer")
            if k in data
        }
        return data


def default_eval_dir(config: EvalConfig) -> Path:
    """The run folder of `config` when `--run-dir` is not given (`run_dir.default_run_dir`):
    keyed by the identity a resume compares, less `samples`, which a resume may raise."""
    identity = config.identity()
    identity.pop("samples", None)
    return default_run_dir("eval", config.dataset, identity)


def check_seconds(option: str, value: float) -> float:
    """A time limit given on the command line: a positive, finite number of seconds
    (`inf` would let one check run for ever, `nan` compares false with everything)."""
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{option} {value:g}: must be a positive, finite number of seconds")
    return value
