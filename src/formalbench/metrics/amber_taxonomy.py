"""AMBER's four error classes, read off our own taxonomy (`metrics.taxonomy`).

AMBER (§5, Appendix F) sorts failed attempts into hallucination (a name that does not
exist), formalization competence (the model misuses the system: wrong types, failing
tactics, escape hatches such as `sorry`, axioms, a changed statement), incomplete output
(cut off, unfinished) and format (not in the required shape). Our primary categories are
finer; each maps to one AMBER class, except failures that are not the model's (the
assistant or the harness could not run, a library is missing), which AMBER's counts leave
out and we report apart as `not_attributed`.

Decisions where the paper is silent: a time-out or memory exhaustion of the assistant is
competence (the proof asked too much of a tactic, as `simp` made no progress does); a
non-constructive answer, a changed statement, a forbidden construct and a disallowed axiom
are competence (AMBER files `sorry`/axiom escapes there); a hole left open is
`incomplete_output` in our taxonomy and stays incomplete here.
"""

from __future__ import annotations

from collections.abc import Mapping

from formalbench.metrics.messages import ErrorCategory

C = ErrorCategory
AMBER_CLASSES = ("hallucination", "competence", "incomplete", "format")
NOT_ATTRIBUTED = "not_attributed"
AMBER_OF: dict[ErrorCategory, str] = {
    C.hallucinated_identifier: "hallucination",
    C.type_error: "competence",
    C.tactic_failure: "competence",
    C.timeout: "competence",
    C.out_of_memory: "competence",
    C.statement_changed: "competence",
    C.forbidden_construct: "competence",
    C.disallowed_axiom: "competence",
    C.non_constructive: "competence",
    C.replay_failed: "competence",  # a kernel bug exploited: no proof, like an axiom
    C.incomplete_output: "incomplete",
    C.format_error: "format",
    C.backend_crash: NOT_ATTRIBUTED,
    C.environment: NOT_ATTRIBUTED,
    C.undecided: NOT_ATTRIBUTED,  # the verifier could not judge: not the prover's error
    C.model_error: NOT_ATTRIBUTED,
    C.other: NOT_ATTRIBUTED,
}


def amber_taxonomy(taxonomy: Mapping[str, int]) -> dict[str, int]:
    """Failed attempts per AMBER class, from primary-category counts (`RunSummary.taxonomy`).
    Every AMBER class is listed (zeros included), then `not_attributed` when non-zero."""
    out = dict.fromkeys(AMBER_CLASSES, 0)
    for name, count in taxonomy.items():
        cls = AMBER_OF.get(ErrorCategory(name), NOT_ATTRIBUTED)
        out[cls] = out.get(cls, 0) + count
    if not out.get(NOT_ATTRIBUTED):
        out.pop(NOT_ATTRIBUTED, None)
    return out
