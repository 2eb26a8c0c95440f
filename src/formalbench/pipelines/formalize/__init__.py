"""The formalize pipeline (IndiMathBench, FMC): informal problems -> ranked formal statements.

One module per step: `split` (7), `label` (1), `context` and `retrieval` (2), `translate` (3-4,
with `statement` for what a candidate is), `candidates` (the per-sample chain with alignment
and re-translation, 5), the ranked summary comes from `judge.ranking` (6); `runner` puts
them in order and `metrics` rebuilds the run's numbers from its store.

`runner` (and through it the model SDKs and numpy) is imported on first use of
`run_formalize`/`FormalizeResult`, so `formalbench report` can read a run's metrics without it.
"""

from typing import TYPE_CHECKING, Any

from formalbench.pipelines.formalize.config import DEFAULT_CATEGORIES, FormalizeConfig
from formalbench.pipelines.formalize.metrics import (
    FormalizeFiles,
    FormalizeMetrics,
    ModelMetrics,
    is_formalize_run,
    load_metrics,
)

if TYPE_CHECKING:
    from formalbench.pipelines.formalize.runner import FormalizeResult, run_formalize


def __getattr__(name: str) -> Any:
    if name in ("FormalizeResult", "run_formalize"):
        from formalbench.pipelines.formalize import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_CATEGORIES",
    "FormalizeConfig",
    "FormalizeFiles",
    "FormalizeMetrics",
    "FormalizeResult",
    "ModelMetrics",
    "is_formalize_run",
    "load_metrics",
    "run_formalize",
]
