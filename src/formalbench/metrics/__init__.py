"""metrics: scores computed from records, with no I/O: the unbiased pass@k, the error
taxonomy of failed attempts, the informal-vs-formal gap and a run's summary."""

from formalbench.metrics.gap import InformalFormalGap, informal_formal_gap
from formalbench.metrics.passk import ks_for, mean_pass_at_k, pass_at_k
from formalbench.metrics.summary import RunSummary, summarize
from formalbench.metrics.taxonomy import (
    Classification,
    ErrorCategory,
    classify,
    classify_message,
    is_pass,
    taxonomy_counts,
)

__all__ = [
    "Classification",
    "ErrorCategory",
    "InformalFormalGap",
    "RunSummary",
    "classify",
    "classify_message",
    "informal_formal_gap",
    "is_pass",
    "ks_for",
    "mean_pass_at_k",
    "pass_at_k",
    "summarize",
    "taxonomy_counts",
]
