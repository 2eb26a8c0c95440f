"""The settings of a construct run, and what several `--model`s mean.

A run has one model per step. `--model SPEC` (plain) names the model of every step;
`--model STEP=SPEC` names the model of one step and wins over the plain one. At most one
plain spec may be given: two plain specs would be an ensemble, which construct does not
have. A STEP is one of `STEPS`; `formal` is the model handed to the formal stages.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from formalbench.core.errors import InputError
from formalbench.core.records import Record

STEPS = ("clean", "naturalize", "conditions", "review", "repair", "formal")
SOURCE_STEPS = STEPS[:-1]
Phase = Literal["extract", "source", "formal"]
PHASES: tuple[Phase, ...] = ("extract", "source", "formal")


def parse_model_options(values: list[str]) -> dict[str, str]:
    """`--model` values -> the spec of each step (see the module doc); {} when none given."""
    default: str | None = None
    overrides: dict[str, str] = {}
    for value in values:
        head, sep, rest = value.partition("=")
        if sep and head.strip() in STEPS and ":" not in head:
            if not rest.strip():
                raise InputError(f"--model {value}: no model after {head}=")
            overrides[head.strip()] = rest.strip()
        elif sep and ":" not in head:
            raise InputError(
                f"--model {value}: unknown step {head!r}; steps are {', '.join(STEPS)}"
            )
        elif default is not None:
            raise InputError(
                f"--model {value}: a second plain model; give one default model and override "
                f"single steps with STEP=SPEC (steps: {', '.join(STEPS)})"
            )
        else:
            default = value.strip()
    if not overrides and default is None:
        return {}
    missing = [s for s in STEPS if s not in overrides]
    if missing and default is None:
        raise InputError(
            f"--model: no model for step(s) {', '.join(missing)}; give a plain --model SPEC "
            "as the default"
        )
    return {step: overrides.get(step, default or "") for step in STEPS}


class ConstructConfig(Record):
    source: str  # textbook folder or archive, or a JSONL of extracted exercises
    models: dict[str, str] = Field(default_factory=dict)  # step -> spec (see parse_model_options)
    backend: str = "coq"
    depth: int = Field(default=3, ge=0)
    pattern: str | None = None
    limit: int | None = Field(default=None, ge=1)
    stop_after: Phase = "formal"
    concurrency: int = Field(default=8, ge=1)  # exercises in flight
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int | None = Field(default=None, ge=1)
    format_retries: int = Field(default=1, ge=0)  # re-asks of a reply that does not validate
    repair_rounds: int = Field(default=8, ge=0)  # R of the formal stages
    review_rounds: int = Field(default=8, ge=0)  # S of the formal stages
    timeout: float = Field(default=120.0, gt=0)  # seconds for one compile (formal stages)

    def extraction_identity(self) -> dict[str, Any]:
        """What the stored extraction depends on: a rerun with other values is refused."""
        return {
            "source": self.source,
            "depth": self.depth,
            "pattern": self.pattern,
            "limit": self.limit,
        }

    def needs_models(self) -> bool:
        return self.stop_after != "extract"
