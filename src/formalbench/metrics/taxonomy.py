"""Error taxonomy of failed attempts: why did a candidate not verify?

AMBER's error analysis (hallucinated identifiers, formalization competence, incomplete
outputs, formatting) and CAM-Bench's failure attribution (library grounding, type
discipline, proof decomposition) are read off the assistant's own messages. This module
does the same mechanically so that a run's report can say *what kind* of failure
dominates, with real message texts of Lean 4 and Coq as patterns.

Each failed attempt gets one primary category (for counts that add up) and the set of
every category its evidence shows (multi-label, as CAM-Bench counts). The primary one is
chosen by this precedence, first match wins:

1. the attempt recorded an error, read by its kind (`AttemptError`, `solvers.base`):
   `model` is `model_error`; `budget` (the token budget of the task ran out, the
   sequential solver's normal way to stop) is `incomplete_output`, since the proof was
   left unfinished, not wrong; `backend` (the assistant could not be run) is
   `backend_crash`; `environment` (the task's original does not compile here: a library
   is missing) is `environment`; `internal` (a bug of the harness) and `task` (an unusable
   task) are `other`; `format` is `format_error`, or `incomplete_output` when the answer
   held no proof. An untagged error of an old run is read by its text: cut at the token
   limit or no proof is `incomplete_output`, no fenced code block `format_error`, else
   `model_error`.
   The verdict's evidence still adds its labels (the last try of a budget-stopped
   attempt keeps its verdict);
2. the model stopped at its token limit (`finish_reason` "length" in `Attempt.params`):
   `incomplete_output`, since whatever failed later is a consequence;
3. no code was extracted: `format_error` when the raw output holds declarations outside a
   code block (AMBER's "not wrapped in a markdown block"), else `incomplete_output`;
4. the task could not be judged here or the assistant did not finish: `environment` (a
   library the file requires cannot be loaded), `undecided` (the verifier's kernel route
   cannot decide the task's shape, e.g. a target inside a functor), `timeout`,
   `out_of_memory`, `backend_crash` (verdict reasons); its diagnostics are partial, so they
   are not trusted to say more;
5. integrity violations found by the verifier: `statement_changed`, `non_constructive`,
   `disallowed_axiom`, `forbidden_construct` (holes such as `sorry`/`Admitted` and the
   axiom `sorryAx` are not violations but `incomplete_output`, ranked at 7);
6. error diagnostics, by message; when messages disagree the most upstream cause wins:
   environment (a library not installed: Coq's "Cannot find a physical path bound to
   logical path", Lean's unknown package / module) > timeout > format_error > hallucinated_identifier > type_error > tactic_failure >
   incomplete_output (a parse error or an unknown name usually causes the rest);
7. a hole left (`missing_target`, `sorry`, `Admitted`, given-up goals): `incomplete_output`;
8. anything else: `other`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, Field

from formalbench.core.records import Attempt, AttemptError, ErrorKind, Reason, Severity, Verdict
from formalbench.metrics.messages import MESSAGE_RANK, ErrorCategory, classify_message

__all__ = ["Classification", "ErrorCategory", "classify", "classify_message", "is_pass"]

C = ErrorCategory

_HOLE_TOKENS = {"sorry", "sorryax", "admit", "admitted", "give_up"}
# What a recorded `Attempt.error` says: the output was cut, it was not in the required
# format, or it held no proof (the texts of `solvers.extract.FormatFailure` included);
# anything else is a failure of the model call or the harness.
_ERROR_PATTERNS = [
    (
        C.incomplete_output,
        re.compile(r"finish_reason\W*length|max_tokens|truncat|token limit", re.I),
    ),
    (
        C.format_error,
        re.compile(
            r"no fenced code block|not inside a code block|\bformat(ting)? (error|failure)", re.I
        ),
    ),
    (
        C.incomplete_output,
        re.compile(r"has no proof for|proof\b.* is empty|no code|empty (answer|output)", re.I),
    ),
]
# The kinds of `Attempt.error` (see `solvers.base`) that decide the category by themselves.
_KIND_CATEGORY = {
    ErrorKind.model: C.model_error,
    ErrorKind.budget: C.incomplete_output,
    ErrorKind.backend: C.backend_crash,
    ErrorKind.environment: C.environment,
    ErrorKind.internal: C.other,
    ErrorKind.task: C.other,
}
_DECLARATION = re.compile(
    r"^\s*(theorem|lemma|example|def|Theorem|Lemma|Definition|Proof\.|Fixpoint)\b", re.M
)

_REASON_CATEGORY = {
    Reason.timeout: C.timeout,
    Reason.out_of_memory: C.out_of_memory,
    Reason.backend_crash: C.backend_crash,
    Reason.environment: C.environment,
    Reason.undecided: C.undecided,
    Reason.statement_changed: C.statement_changed,
    Reason.non_constructive: C.non_constructive,
    Reason.disallowed_axiom: C.disallowed_axiom,
    Reason.forbidden_construct: C.forbidden_construct,
    Reason.replay_failed: C.replay_failed,
}


class Classification(BaseModel):
    """The category of one failed attempt, every category seen, and the message decisive
    for the primary one (shown as an example in reports)."""

    primary: ErrorCategory
    labels: list[ErrorCategory] = Field(default_factory=list)
    evidence: str = ""


def classify(attempt: Attempt) -> Classification:
    """Classify a failed attempt (a passing one is a caller error) by the precedence above."""
    verdict = attempt.verdict
    if verdict is not None and verdict.passed and attempt.error is None:
        raise ValueError(f"attempt {attempt.task_id}#{attempt.sample} passed; nothing to classify")
    found: list[tuple[ErrorCategory, str]] = []  # (category, evidence) in precedence order

    if attempt.error is not None:
        found.append((_error_category(attempt.error), str(attempt.error)))
    if _finished_by_length(attempt.params):
        found.append((C.incomplete_output, "model output stopped at the token limit"))
    if not attempt.code.strip() and attempt.error is None:
        if _DECLARATION.search(attempt.raw_output) and "```" not in attempt.raw_output:
            found.append((C.format_error, "code not inside a code block"))
        else:
            found.append((C.incomplete_output, "no code extracted from the model output"))

    if verdict is not None:
        for reason in (
            Reason.environment,
            Reason.undecided,
            Reason.timeout,
            Reason.out_of_memory,
            Reason.backend_crash,
        ):
            if reason in verdict.reasons:
                found.append((_REASON_CATEGORY[reason], _finding_text(verdict, reason)))
        hole_texts: list[str] = []
        for reason in (
            Reason.statement_changed,
            Reason.non_constructive,
            Reason.disallowed_axiom,
            Reason.forbidden_construct,
            Reason.replay_failed,
        ):
            if reason not in verdict.reasons:
                continue
            holes, others = _split_holes(verdict, reason)
            hole_texts += holes
            if others or not holes:
                found.append((_REASON_CATEGORY[reason], others[0] if others else reason.value))
        errors = [d.message for d in verdict.diagnostics if d.severity == Severity.error]
        errors += [
            f.message
            for f in verdict.findings
            if f.reason in (Reason.compile_error, Reason.compile_warning)
        ]
        ranked = sorted(
            ((cat, msg) for msg in errors if (cat := classify_message(msg)) is not None),
            key=lambda item: MESSAGE_RANK.index(item[0]),
        )
        found.extend(ranked)
        if errors and not ranked:
            found.append((C.other, errors[0]))
        hole_texts += [
            d.message
            for d in verdict.diagnostics
            if d.severity != Severity.error and classify_message(d.message) == C.incomplete_output
        ]
        if Reason.missing_target in verdict.reasons:
            found.append((C.incomplete_output, _finding_text(verdict, Reason.missing_target)))
        if hole_texts:
            found.append((C.incomplete_output, hole_texts[0]))

    if not found:
        found.append((C.other, "no verdict recorded" if verdict is None else ""))
    labels = sorted({cat for cat, _ in found}, key=list(ErrorCategory).index)
    primary, evidence = found[0]
    return Classification(primary=primary, labels=labels, evidence=evidence)


def taxonomy_counts(attempts: Iterable[Attempt]) -> dict[str, int]:
    """Primary-category counts over the failed attempts, in the enum's order."""
    counts = Counter(classify(a).primary for a in attempts if not is_pass(a))
    return {cat.value: counts[cat] for cat in ErrorCategory if counts[cat]}


def is_pass(attempt: Attempt) -> bool:
    """An attempt counts as solved only with a passing verdict and no recorded error."""
    return attempt.error is None and attempt.verdict is not None and attempt.verdict.passed


def _error_category(error: AttemptError) -> ErrorCategory:
    if error.kind in _KIND_CATEGORY:
        return _KIND_CATEGORY[error.kind]
    fallback = C.format_error if error.kind == ErrorKind.format_ else None
    for category, pattern in _ERROR_PATTERNS:
        if pattern.search(error.message):
            return category
    return fallback or C.model_error


def _finished_by_length(params: dict[str, object]) -> bool:
    return params.get("finish_reason") == "length"  # what Solver.solve records


def _finding_text(verdict: Verdict, reason: Reason) -> str:
    for finding in verdict.findings:
        if finding.reason == reason:
            return finding.message
    return reason.value


def _split_holes(verdict: Verdict, reason: Reason) -> tuple[list[str], list[str]]:
    """Messages of the findings behind `reason`, split into holes (sorry, Admitted,
    sorryAx, a `def` left unfilled: a proof left unfinished, which AMBER counts as
    incomplete output, not as cheating) and the rest."""
    holes: list[str] = []
    others: list[str] = []
    ignore = _FORBIDDEN_WORDS if reason == Reason.forbidden_construct else set()
    hole_reasons = (Reason.forbidden_construct, Reason.disallowed_axiom)
    for f in verdict.findings:
        if f.reason == reason:
            is_hole = reason in hole_reasons and _is_hole(f.subject or "", f.message, ignore)
            (holes if is_hole else others).append(f.message)
    return holes, others


def _is_hole(subject: str, message: str, forbidden: set[str]) -> bool:
    """The finding names a hole and none of `forbidden` (constructs that are not holes)."""
    if _UNFILLED.search(message):
        return True
    words = set(re.findall(r"[a-z_]+", (subject or message).lower()))
    return bool(words & _HOLE_TOKENS) and not words & forbidden


_UNFILLED = re.compile(r"not filled in|unfinished proof", re.I)
_FORBIDDEN_WORDS = {"native_decide", "axiom", "skipkerneltc", "implemented_by", "extern"}
