"""The records every layer exchanges.

They are pydantic models so that each one round-trips through JSON unchanged
(`model_dump_json` / `model_validate_json`) and datasets can be plain JSONL.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from formalbench.core.ids import RecordId


class Language(StrEnum):
    """The proof assistant a formal text is written for."""

    lean = "lean"
    coq = "coq"


class Severity(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"


class Reason(StrEnum):
    """Why a candidate failed strict verification. A closed set: reports group by it."""

    compile_error = "compile_error"
    compile_warning = "compile_warning"  # only where the policy forbids warnings (APE tasks)
    forbidden_construct = "forbidden_construct"
    statement_changed = "statement_changed"
    disallowed_axiom = "disallowed_axiom"
    non_constructive = "non_constructive"
    missing_target = "missing_target"
    timeout = "timeout"
    out_of_memory = "out_of_memory"
    backend_crash = "backend_crash"
    environment = "environment"  # a library the file requires cannot be loaded here
    undecided = "undecided"  # the assistant's route cannot decide this task (message: why)


class CheckStatus(StrEnum):
    """How a run of the assistant ended (independent of whether the text compiled)."""

    ok = "ok"  # the assistant ran to the end; diagnostics say whether the text compiled
    timeout = "timeout"
    out_of_memory = "out_of_memory"
    crash = "crash"
    refused = "refused"  # never run: the gate found a file/process command (core/gate.py)


class TaskKind(StrEnum):
    proof = "proof"
    evaluation = "evaluation"  # find a value: `def answer := sorry` + verification theorem
    algorithm = "algorithm"  # fill the step of a recursive definition + a theorem on it
    transformation = "transformation"  # fill a target problem + prove mutual relaxation
    edit = "edit"


class Record(BaseModel):
    """Base of all records: unknown fields are kept out, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)


class Diagnostic(Record):
    """One message of the proof assistant, positions 1-based lines and 0-based columns."""

    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    kind: str | None = None  # the assistant's own tag, e.g. Lean's `hasSorry`


class Hole(Record):
    """An unfinished part the assistant itself reported (Lean `sorry`, Coq `Admitted`)."""

    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    goal: str | None = None
    proof_state: int | None = None


class CheckResult(Record):
    """What one run of a proof assistant over one source text said."""

    backend: str
    status: CheckStatus = CheckStatus.ok
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    holes: list[Hole] = Field(default_factory=list)
    axioms: dict[str, list[str]] = Field(default_factory=dict)  # target -> axioms it uses
    elapsed: float = 0.0
    detail: str | None = None  # e.g. the crash output of a dead process
    # what was changed in the text for the toolchain it ran on (toolchains/prepare.py)
    prepared: list[str] = Field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == Severity.error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == Severity.warning]

    @property
    def compiled(self) -> bool:
        """True when the assistant finished and reported no error."""
        return self.status == CheckStatus.ok and not self.errors


class Finding(Record):
    """A problem found by the text layer of the verifier, before or instead of the assistant."""

    reason: Reason
    message: str
    subject: str | None = None  # the offending token or declaration name
    line: int | None = None
    column: int | None = None


class ToolchainInfo(Record):
    """The proof assistant a verdict was decided on (toolchains/toolchain.py): its name
    (`rocq-9.2`, `host`), version, library packages, and the known soundness bugs of that
    version that no check here catches (filled by `toolchain.known_unsound_for`)."""

    name: str
    version: str
    libraries: dict[str, str] = Field(default_factory=dict)
    known_unsound: list[str] = Field(default_factory=list)


class Verdict(Record):
    """The strict verifier's decision on one candidate."""

    passed: bool
    reasons: list[Reason] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    axioms: dict[str, list[str]] = Field(default_factory=dict)
    elapsed: float = 0.0
    backend: str | None = None
    static_only: bool = False
    toolchain: ToolchainInfo | None = None  # Coq: which Coq decided it
    prepared: list[str] = Field(default_factory=list)  # changes made to the text for it


class Informal(Record):
    statement: str = ""
    solution: str | None = None  # for tasks that ask to find a value


class Task(Record):
    """One benchmark item. `header` (imports, opens) is kept apart from `formal` so that a
    checker can elaborate it once and reuse the environment; `header + formal` is the file."""

    id: RecordId
    language: Language
    formal: str
    header: str = ""
    source: str = ""  # book, contest or repository it came from
    informal: Informal = Field(default_factory=Informal)
    kind: TaskKind = TaskKind.proof
    # The definitions that are the answer (AMBER constructions: `answer`, a step, a target
    # problem); empty: every value definition the task leaves open (checking/construction.py)
    constructions: list[str] = Field(default_factory=list)
    split: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)  # domain, difficulty, category, ...
    toolchain: str | None = None  # e.g. leanprover/lean4:v4.24.0 or coq 8.16
    library_revision: str | None = None  # e.g. the Mathlib commit the task was made for
    # A Coq project (folder of a `_CoqProject`) whose compiled libraries the task requires;
    # relative to the dataset file's folder. `--coq-project` on the command line overrides it.
    coq_project: str | None = None
    # What the task itself postulates (Coq: the short names of its top-level `Variable`s,
    # `Parameter`s, `Hypothesis`es, `Context` binders, `Axiom`s, outside any section): the
    # verifier allows exactly these of the task's own assumptions, pinned to its text.
    postulates: list[str] = Field(default_factory=list)
    trail: dict[str, Any] = Field(default_factory=dict)  # construction trail, review logs
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _written_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`coq_project` and `postulates` are written only when a task has them: the
        datasets written before the fields existed (the shipped examples included) stay
        byte for byte the same."""
        data: dict[str, Any] = handler(self)
        if data.get("coq_project", "") is None:
            del data["coq_project"]
        if data.get("postulates") == []:
            del data["postulates"]
        return data

    @property
    def source_text(self) -> str:
        """The whole file a prover starts from: header then formal text."""
        if not self.header:
            return self.formal
        sep = "" if self.header.endswith("\n") else "\n"
        return f"{self.header}{sep}{self.formal}"


class TokenUsage(Record):
    prompt: int = 0
    completion: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt=self.prompt + other.prompt, completion=self.completion + other.completion
        )


class ErrorKind(StrEnum):
    """Why an attempt stopped without a verdict of its own (see `solvers.base`)."""

    model = "model"  # the model call failed
    budget = "budget"  # a token budget (of the task, or of the run) is spent
    backend = "backend"  # the proof assistant could not be run
    format_ = "format"  # the answer held no usable code (`format` would shadow str.format)
    task = "task"  # the task itself is unusable (e.g. it has no hole)
    environment = "environment"  # the task's original does not compile here (a library missing)
    internal = "internal"  # a bug of the harness
    unknown = "unknown"  # an untagged text recorded by an old formalbench


class AttemptError(Record):
    """A failure recorded on an attempt instead of raised. `scope` says which budget ran
    out (`run` or `task`) for `budget` errors, so no caller reads it off the message."""

    kind: ErrorKind
    message: str
    scope: str | None = None

    def __str__(self) -> str:
        return self.message if self.kind == ErrorKind.unknown else f"{self.kind}: {self.message}"

    @classmethod
    def parse(cls, text: str) -> AttemptError:
        """The `tag: message` strings older runs stored (`budget: run token budget...`)."""
        tag, colon, rest = text.partition(":")
        tag = tag.strip().lower()
        if not colon or tag not in {kind.value for kind in ErrorKind} or tag == "unknown":
            return cls(kind=ErrorKind.unknown, message=text)
        message = rest.strip()
        scope = None
        if tag == ErrorKind.budget:
            first = message.split(" ", 1)[0]
            scope = first if message.startswith(f"{first} token budget") else None
        return cls(kind=ErrorKind(tag), message=message, scope=scope)


class Attempt(Record):
    """One try of one solver at one task, with everything needed to audit or reproduce it."""

    task_id: str
    solver: str
    sample: int = 0  # index among the n samples of this task
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)  # temperature, max_tokens, seed...
    prompt_hash: str | None = None
    raw_output: str = ""
    code: str = ""  # the complete candidate file that was verified
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    wall_time: float = 0.0
    verdict: Verdict | None = None
    error: AttemptError | None = None  # a model or harness failure recorded instead of raising
    turns: int = 0  # model calls spent on this attempt (sequential / agent solvers)

    @field_validator("error", mode="before")
    @classmethod
    def _read_old_error(cls, value: Any) -> Any:
        """Runs stored before `AttemptError` hold `tag: message` strings: read them."""
        return AttemptError.parse(value) if isinstance(value, str) else value
