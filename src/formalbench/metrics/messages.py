"""Failure categories, and which one an assistant's message points to.

The patterns are the texts Lean 4 (and Mathlib's tactics) and Coq 8.16 really print:
Lean ones from the recorded REPL output in shared/fixtures and Lean/Mathlib sources, Coq
ones from coqc runs on small broken files (see tests/test_metrics_taxonomy.py). They are
matched case-insensitively (Lean 4.33 writes "Unknown identifier", older ones "unknown
identifier") with whitespace collapsed (Coq wraps long messages over lines).
"""

from __future__ import annotations

import re
from enum import StrEnum


class ErrorCategory(StrEnum):
    """The closed set of failure categories, in the order reports list them."""

    hallucinated_identifier = "hallucinated_identifier"
    type_error = "type_error"
    tactic_failure = "tactic_failure"
    incomplete_output = "incomplete_output"
    format_error = "format_error"
    timeout = "timeout"
    out_of_memory = "out_of_memory"
    statement_changed = "statement_changed"
    forbidden_construct = "forbidden_construct"
    disallowed_axiom = "disallowed_axiom"
    non_constructive = "non_constructive"
    backend_crash = "backend_crash"
    environment = "environment"  # a library the task needs is not installed here
    undecided = "undecided"  # the verifier's route cannot decide this task's shape
    replay_failed = "replay_failed"  # coqchk refused what coqc's kernel accepted
    model_error = "model_error"
    other = "other"


C = ErrorCategory


# In rank order: upstream causes first (a parse error or unknown name causes the rest).
_PATTERNS: list[tuple[ErrorCategory, re.Pattern[str]]] = [
    (
        # A library that is not installed: Coq's `Require` of an unbound logical path, Lean's
        # import of a module or package the project does not have. The task's environment,
        # not the prover, failed; nothing after it in the file means anything.
        C.environment,
        re.compile(
            r"cannot find a physical path bound to logical path|cannot find library .* in loadpath"
            r"|unknown (package|module prefix)|unknown module\b"
            r"|object file .* of module .* does not exist",
            re.I,
        ),
    ),
    (
        C.timeout,
        re.compile(r"\(deterministic\) timeout|maximum number of heartbeats|^timeout!?$", re.I),
    ),
    (
        C.format_error,
        re.compile(
            r"unexpected token|unexpected identifier|unexpected end of input|^expected\b"
            r"|unterminated comment|unknown tactic|syntax error|lexer: undefined token",
            re.I,
        ),
    ),
    (
        C.hallucinated_identifier,
        re.compile(
            r"unknown (identifier|constant|namespace|declaration)"
            r"|invalid field .* the environment does not contain"
            r"|was not found in the current environment|unable to locate"
            r"|cannot find module",  # Coq's `Import M` of a module that is not loaded
            re.I,
        ),
    ),
    (
        C.type_error,
        re.compile(
            r"type mismatch|failed to synthesize|coerc|typeclass instance problem is stuck"
            r"|function expected|type expected|has type .* but is expected to have type"
            r"|has type .* while it is expected to have type|unable to unify"
            r"|illegal application|cannot infer",
            re.I,
        ),
    ),
    (
        C.tactic_failure,
        re.compile(
            r"^unsolved goals|linarith failed|omega could not|made no progress"
            r"|tactic ['`][^'`]+['`] failed|could not close the goal|aesop: failed"
            r"|\b(decide|norm_num|positivity|ring|ring_nf|field_simp|nlinarith|polyrith|rfl)"
            r" failed|failed to prove|the rfl tactic|no goals to be proved"
            r"|did not find instance of the pattern|motive is not type correct"
            r"|no applicable tactic|tactic failure|attempt to save an incomplete proof"
            r"|cannot find witness|\b(lia|nia|lra|nra|psatz) failed|no such goal"
            r"|not an inductive product|no matching clauses for match"
            r"|found no subterm matching|unable to find an instance for",
            re.I,
        ),
    ),
    (
        C.incomplete_output,
        re.compile(
            r"declaration uses ['`]sorry['`]|attempt to save a proof with given up goals"
            r"|there are pending proofs",
            re.I,
        ),
    ),
]

MESSAGE_RANK = [cat for cat, _ in _PATTERNS]


def classify_message(message: str) -> ErrorCategory | None:
    """The category a single assistant message points to, or None if it is not known.

    The headline (first line) decides when it can; otherwise the whole message is read
    without its goal-state lines (hypotheses `h : T`, `⊢ goal`, `case x`), whose names
    and terms are the user's and must not look like an error text."""
    lines = _strip_prefix(message.strip()).splitlines()
    headline = " ".join(lines[0].split()) if lines else ""
    body = " ".join(" ".join(ln for ln in lines if not _GOAL_LINE.match(ln)).split())
    for text in (headline, body):
        for category, pattern in _PATTERNS:
            if pattern.search(text):
                return category
    return None


def _strip_prefix(text: str) -> str:
    """Strip location and `error:` prefixes (`Lean error:`, `f.lean:3:2: error:`, Coq's
    `File "f.v", line 2, characters 7-10:`)."""
    while True:
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            return text
        text = stripped


_PREFIX = re.compile(
    r"^(?:lean error:|error:|[^\s:]*:\d+:\d+:|file \"[^\"]*\", line \d+, characters \d+-\d+:)\s*",
    re.I,
)
_GOAL_LINE = re.compile(r"^\s*(⊢|case\b|[^\s:\"]+(,\s*[^\s:\"]+)*\s+:\s)")
