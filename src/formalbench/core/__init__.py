"""Plain typed records, configuration and errors. Nothing in this layer does I/O."""

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
