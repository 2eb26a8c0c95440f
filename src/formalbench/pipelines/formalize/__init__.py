"""The formalize pipeline (IndiMathBench, FMC): informal problems -> ranked formal statements.

One module per step: `split` (7), `label` (1), `context` and `retrieval` (2), `translate` (3-4,
with `statement` for what a candidate is), `candidates` (the per-sample chain with alignment
and re-translation, 5), the ranked summary comes from `judge.ranking` (6); `runner` puts
them in order and `metrics` rebuilds the run's numbers from its store.
"""

from formalbench.pipelines.formalize.config import DEFAULT_CATEGORIES, FormalizeConfig
from formalbench.pipelines.formalize.metrics import (
    FormalizeFiles,
    FormalizeMetrics,
    ModelMetrics,
    is_formalize_run,
    load_metrics,
)
from formalbench.pipelines.formalize.runner import FormalizeResult, run_formalize

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
