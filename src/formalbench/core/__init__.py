"""Plain typed records, configuration, errors, and the text layer every run passes through.

`lexer` tokenizes Lean 4 and Coq; `gate` refuses text with a file, process or I/O command
before any proof assistant sees it. Both are pure functions of the text, so the backends
(which run the gate before every check) and the checking layer above them share them from
here. Nothing in this layer does I/O.
"""

from formalbench.core.errors import (
    BackendError,
    FormalbenchError,
    InputError,
    ToolchainMissingError,
)
from formalbench.core.records import (
    Attempt,
    CheckResult,
    CheckStatus,
    Diagnostic,
    Finding,
    Hole,
    Informal,
    Language,
    Reason,
    Severity,
    Task,
    TaskKind,
    TokenUsage,
    Verdict,
)

__all__ = [
    "Attempt",
    "BackendError",
    "CheckResult",
    "CheckStatus",
    "Diagnostic",
    "Finding",
    "FormalbenchError",
    "Hole",
    "Informal",
    "InputError",
    "Language",
    "Reason",
    "Severity",
    "Task",
    "TaskKind",
    "TokenUsage",
    "ToolchainMissingError",
    "Verdict",
]
