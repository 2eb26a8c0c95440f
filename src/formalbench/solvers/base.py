"""What every solver shares: its configuration, the attempt it fills in, and the rule that
a solver never raises for a failure of the model, the budget or the proof assistant.

A solver turns one task into one `Attempt`. A long evaluation must go on when one model call
fails or one check crashes, so `Solver.solve` catches those failures and records them on the
attempt (`error`, and a failed `verdict`), then returns. Subclasses write `_solve`, which
updates a `Draft` as it goes: whatever was spent before a failure (tokens, turns, outputs)
is still on the attempt.

`Attempt.error` is an `AttemptError` whose `kind` says what failed: `model` (the model call
failed), `budget` (the token budget of the task, or of the run: `scope`, is spent), `backend`
(the proof assistant could not be run), `format` (the answer held no usable code: no fenced
block, no proof for a target; the verdict then fails with a diagnostic of kind `format` and
`code` is empty), `task` (the task itself is unusable, e.g. it has no hole), `internal` (a
bug, logged with its traceback); `environment` is recorded by the evaluation's preflight.
The error taxonomy of `metrics` and the store's `--retry-errors` read the kind.
"""

from __future__ import annotations

import hashlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar

from formalbench.backends.base import Backend
from formalbench.checking.holes import find_holes, target_names
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import BackendError, InputError, ToolchainMissingError
from formalbench.core.records import (
    Attempt,
    AttemptError,
    Diagnostic,
    ErrorKind,
    Language,
    Severity,
    Task,
    TaskKind,
    TokenUsage,
    Verdict,
)
from formalbench.llm.base import (
    BudgetExceededError,
    ChatModel,
    Completion,
    Message,
    ModelCallError,
)
from formalbench.llm.prompts import PromptTemplate, load_prompt
from formalbench.solvers.config import SolverConfig
from formalbench.solvers.extract import FormatFailure

if TYPE_CHECKING:
    from formalbench.checking.verifier import StrictVerifier

log = logging.getLogger(__name__)


@dataclass
class Draft:
    """The attempt as it is being built; kept by `solve` even when `_solve` fails."""

    outputs: list[str] = field(default_factory=list)
    tokens: TokenUsage = field(default_factory=TokenUsage)
    turns: int = 0
    code: str = ""
    verdict: Verdict | None = None
    finish_reason: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)  # template name -> hash
    labels: list[str] = field(default_factory=list)  # one per output, e.g. "hole 1, turn 2"

    def raw_output(self) -> str:
        """The outputs, each under a `### label` line when there are several."""
        if len(self.outputs) <= 1:
            return "\n".join(self.outputs)
        labels = self.labels + [
            f"output {i + 1}" for i in range(len(self.labels), len(self.outputs))
        ]
        return "\n".join(
            f"### {label}\n{out}" for label, out in zip(labels, self.outputs, strict=True)
        )


def format_verdict(message: str) -> Verdict:
    """A failed verdict for an answer the verifier never saw: no usable code in it."""
    return Verdict(
        passed=False,
        static_only=True,
        diagnostics=[Diagnostic(severity=Severity.error, message=message, kind="format")],
    )


class Solver(ABC):
    """A prover: `solve(task, sample)` returns one verified `Attempt` and never raises for
    model, budget or backend failures."""

    name: ClassVar[str]
    uses_model: ClassVar[bool] = True
    deterministic: ClassVar[bool] = False  # True: every sample would repeat sample 0
    default_temperature: ClassVar[float] = 1.0
    default_max_turns: ClassVar[int] = 1

    def __init__(
        self, verifier: StrictVerifier, model: ChatModel | None, config: SolverConfig | None = None
    ) -> None:
        if self.uses_model and model is None:
            raise InputError(f"solver {self.name!r} needs a model (--model); none was given")
        self.verifier = verifier
        self.model = model
        self.config = config or SolverConfig()
        # Whether the run is near its end, where a long check would run alone (the pipeline
        # sets it; alone, a solver is always "at the end"): the portfolio then splits its
        # Coq probes over the assistant's idle slots (`probe_chunks`).
        self.in_tail: Callable[[], bool] = _always

    # ---- settings -----------------------------------------------------------------

    @property
    def temperature(self) -> float:
        t = self.config.temperature
        return self.default_temperature if t is None else t

    @property
    def max_turns(self) -> int:
        return self.config.max_turns or self.default_max_turns

    @property
    def policy(self) -> VerifierPolicy:
        return self.verifier.policy

    @property
    def backend(self) -> Backend:
        backend = self.verifier.backend
        if backend is None:
            raise BackendError("the solver's verifier has no proof assistant to check with")
        return backend

    def base_params(self, sample: int) -> dict[str, Any]:
        params: dict[str, Any] = {"seed": sample}
        if self.config.show_answer:
            params["show_answer"] = True
        if self.uses_model:
            params |= {
                "temperature": self.temperature,
                "max_tokens": self.config.max_tokens,
                "token_budget": self.config.token_budget,
            }
        return params

    # ---- the contract ---------------------------------------------------------------

    async def solve(self, task: Task, sample: int = 0) -> Attempt:
        """Try `task` once; every failure of the model, budget or backend is recorded."""
        draft = Draft(params=self.base_params(sample))
        start = time.monotonic()
        error: AttemptError | None = None
        try:
            if not find_holes(task.source_text, task.language):
                raise InputError(f"task {task.id} has no hole (sorry / Admitted) to fill")
            await self._solve(task, sample, draft)
        except ToolchainMissingError:
            raise  # every task would fail the same way: the user must act
        except FormatFailure as exc:
            error = AttemptError(kind=ErrorKind.format_, message=str(exc))
            draft.verdict = draft.verdict or format_verdict(str(exc))
        except InputError as exc:  # the task itself is unusable (e.g. it has no hole)
            error = AttemptError(kind=ErrorKind.task, message=str(exc))
        except ModelCallError as exc:
            error = AttemptError(kind=ErrorKind.model, message=str(exc))
        except BudgetExceededError as exc:
            error = AttemptError(kind=ErrorKind.budget, message=str(exc), scope=exc.budget)
        except BackendError as exc:
            error = AttemptError(kind=ErrorKind.backend, message=str(exc))
        except Exception as exc:  # a bug must not end a long run; it is logged and recorded
            log.exception("solver %s failed on task %s", self.name, task.id)
            message = f"{type(exc).__name__}: {exc}"
            error = AttemptError(kind=ErrorKind.internal, message=message)
        verdict = draft.verdict
        if verdict is None:
            verdict = Verdict(passed=False, static_only=True)
        params = dict(draft.params)
        if draft.finish_reason is not None:
            params["finish_reason"] = draft.finish_reason
        if draft.prompts:
            params["prompts"] = dict(draft.prompts)
        return Attempt(
            task_id=task.id,
            solver=self.name,
            sample=sample,
            model=self.model.spec if self.model is not None else None,
            params=params,
            prompt_hash=combined_hash(draft.prompts),
            raw_output=draft.raw_output(),
            code=draft.code,
            tokens=draft.tokens,
            wall_time=time.monotonic() - start,
            verdict=verdict,
            error=error,
            turns=draft.turns,
        )

    @abstractmethod
    async def _solve(self, task: Task, sample: int, draft: Draft) -> None:
        """Fill `draft` (code, verdict, outputs...); raise only for the failures above."""

    # ---- helpers for subclasses -------------------------------------------------------

    def prompt(self, draft: Draft, name: str) -> PromptTemplate:
        """The template `name`, its hash recorded on the attempt."""
        template = load_prompt(name)
        draft.prompts[name] = template.hash
        return template

    async def generate(
        self, draft: Draft, messages: list[Message], *, seed: int, label: str | None = None
    ) -> Completion:
        """One model call within the task's token budget, accounted on `draft`.

        The budget covers prompt and completion tokens of every call of the task; a call is
        refused (BudgetExceededError) once the budget is spent, and a call's output cap is
        cut to what is left of it.
        """
        assert self.model is not None
        spent = draft.tokens.total
        budget = self.config.token_budget
        if spent >= budget:
            raise BudgetExceededError(
                f"token budget of {budget} for the task is spent ({spent} used in "
                f"{draft.turns} call(s))",
                budget="task",
            )
        completions = await self.model.generate(
            list(messages),  # a snapshot: the caller goes on appending to its chat
            n=1,
            temperature=self.temperature,
            max_tokens=min(self.config.max_tokens, budget - spent),
            seed=seed,
        )
        if not completions:
            raise ModelCallError(f"{self.model.spec} returned no completion")
        completion = completions[0]
        draft.turns += 1
        draft.tokens = draft.tokens + completion.usage
        draft.outputs.append(completion.text)
        draft.labels.append(label or f"call {draft.turns}")
        draft.finish_reason = completion.finish_reason
        return completion

    def prompt_vars(self, task: Task) -> dict[str, Any]:
        """What every solver prompt is told about a task.

        The informal solution of a task that asks to find a value (evaluation, algorithm)
        is the answer the prover must find, so it is withheld unless `show_answer` is set.
        """
        language = task.language
        source = task.source_text
        return {
            "assistant": ASSISTANTS[language],
            "fence": language.value,
            "source": source,
            "informal": task.informal.statement.strip(),
            "solution": self.shown_solution(task),
            "find_value": task.kind in ANSWER_KINDS,
            "targets": target_names(source, language),
            "hole_word": "sorry" if language == Language.lean else "Admitted",
            "forbidden": self.policy.forbidden_for(language),
        }

    def shown_solution(self, task: Task) -> str:
        """The informal solution the prompts may show ("" when it is the answer sought)."""
        if task.kind in ANSWER_KINDS and not self.config.show_answer:
            return ""
        return (task.informal.solution or "").strip()

    async def verify(self, task: Task, candidate: str) -> Verdict:
        """The strict verifier's decision on a complete candidate file."""
        return await self.verifier.averify(
            task.source_text,
            candidate,
            kind=task.kind,
            timeout=self.config.check_timeout,
            constructions=task.constructions,
            axioms=task.allowed_axioms,
        )


def _always() -> bool:
    return True


ASSISTANTS = {Language.lean: "Lean 4 with Mathlib", Language.coq: "Coq"}
# Kinds whose informal solution is the value the prover has to find.
ANSWER_KINDS = frozenset({TaskKind.evaluation, TaskKind.algorithm, TaskKind.transformation})


def combined_hash(prompts: dict[str, str]) -> str | None:
    """One hash for the templates an attempt used (the template's own when only one)."""
    if not prompts:
        return None
    if len(prompts) == 1:
        return next(iter(prompts.values()))
    joined = "\n".join(f"{name}={digest}" for name, digest in sorted(prompts.items()))
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


SOLVERS: dict[str, str] = {
    "portfolio": "formalbench.solvers.portfolio:PortfolioSolver",
    "whole": "formalbench.solvers.whole:WholeProofSolver",
    "sequential": "formalbench.solvers.sequential:SequentialSolver",
    "agent": "formalbench.solvers.agent:AgentSolver",
}


def solver_class(name: str) -> type[Solver]:
    """The class registered as `name`; InputError listing the known names otherwise."""
    target = SOLVERS.get(name)
    if target is None:
        raise InputError(f"unknown solver {name!r}; known solvers: {', '.join(SOLVERS)}")
    module, _, cls = target.partition(":")
    return getattr(import_module(module), cls)


def make_solver(
    name: str,
    verifier: StrictVerifier,
    model: ChatModel | None = None,
    config: SolverConfig | None = None,
) -> Solver:
    """Build the solver called `name` (portfolio, whole, sequential, agent)."""
    return solver_class(name)(verifier, model, config)
