"""Number formats shared by the terminal tables, the HTML page and the plots, so that
the three never disagree on how a figure is shown."""

from __future__ import annotations

from formalbench.metrics.taxonomy import ErrorCategory

CATEGORY_TITLES = {
    ErrorCategory.hallucinated_identifier: "hallucinated identifier",
    ErrorCategory.type_error: "type / coercion error",
    ErrorCategory.tactic_failure: "tactic failure / unsolved goals",
    ErrorCategory.incomplete_output: "incomplete output",
    ErrorCategory.format_error: "format / syntax error",
    ErrorCategory.timeout: "timeout",
    ErrorCategory.out_of_memory: "out of memory",
    ErrorCategory.statement_changed: "statement changed",
    ErrorCategory.forbidden_construct: "forbidden construct",
    ErrorCategory.disallowed_axiom: "disallowed axiom",
    ErrorCategory.non_constructive: "non-constructive",
    ErrorCategory.backend_crash: "assistant crashed",
    ErrorCategory.environment: "task cannot compile here (environment)",
    ErrorCategory.undecided: "undecided by the verifier",
    ErrorCategory.replay_failed: "refused by the coqchk replay",
    ErrorCategory.model_error: "model / harness error",
    ErrorCategory.other: "other",
}


def pct(value: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage: 0.4375 -> '43.8%'."""
    if value is None:
        return "–"
    return f"{100 * value:.{digits}f}%"


def ratio(part: int, whole: int) -> str:
    """'3/8 (37.5%)', or '0/0' when there is nothing to divide by."""
    if whole == 0:
        return f"{part}/0"
    return f"{part}/{whole} ({pct(part / whole)})"


def tokens(count: float) -> str:
    """Token counts readable at a glance: 950, 12.3k, 4.56M."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.2f}M"
    if count >= 10_000:
        return f"{count / 1_000:.1f}k"
    return f"{count:,.0f}"


def seconds(value: float | None) -> str:
    """A duration: '42.0 s', '12 min 5 s', '3 h 02 min'."""
    if value is None:
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def category_title(name: str) -> str:
    try:
        return CATEGORY_TITLES[ErrorCategory(name)]
    except ValueError:
        return name


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plain(value: object) -> str:
    """A value as a person reads it in a `key: value` line, not as Python writes it: yes / no,
    a float to three decimals (0.376, 1), a list joined by commas ('none' when empty)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(plain(v) for v in value) or "none"
    return str(value)
