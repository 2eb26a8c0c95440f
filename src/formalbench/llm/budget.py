"""Token budgets that stop work cleanly, and the meter that reports what a run used.

A `TokenBudget` has an optional total `limit` and an optional `per_call` cap on `max_tokens`.
Budgets nest: a task budget is a `child` of the run budget, and a call must fit in every budget
up the chain. Before a call, `BudgetedModel` reserves what the call may cost (a rough prompt
estimate plus `n * max_tokens` where max_tokens is known) and refuses with BudgetExceededError
if that does not fit; after the call it charges the usage actually reported and frees the
reservation. Reserving matters because many calls of one run are in flight at once.

Cached completions are charged like fresh ones: a resumed run must take the same decisions as
the run it resumes (a solver that stopped at its token budget stops there again). What was
really paid for is told apart by the `UsageMeter`, which counts fresh and cached tokens apart.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from formalbench.core.errors import InputError
from formalbench.core.records import Record, TokenUsage
from formalbench.llm.base import BudgetExceededError, ChatModel, Completion, Message, ModelWrapper

CHARS_PER_TOKEN = 4  # rough and on the low side, so the estimate rarely refuses a call that fits


def estimate_prompt_tokens(messages: Sequence[Message]) -> int:
    """A cheap guess of a chat's prompt tokens, used only to reserve budget before a call."""
    return sum(len(m.content) for m in messages) // CHARS_PER_TOKEN


@dataclass
class Reservation:
    tokens: int
    chain: tuple[TokenBudget, ...]
    open: bool = True


class TokenBudget:
    """A cap on the tokens of a run (or of a task, as a child of the run's budget)."""

    def __init__(
        self,
        limit: int | None = None,
        *,
        per_call: int | None = None,
        name: str = "run",
        parent: TokenBudget | None = None,
    ) -> None:
        if limit is not None and limit < 0:
            raise InputError(f"{name} token budget: limit must be >= 0, got {limit}")
        if per_call is not None and per_call < 1:
            raise InputError(f"{name} token budget: per-call cap must be >= 1, got {per_call}")
        self.limit = limit
        self.per_call = per_call
        self.name = name
        self.parent = parent
        self.used = 0
        self.reserved = 0
        self._lock: threading.Lock = parent._lock if parent else threading.Lock()

    def child(
        self, limit: int | None = None, *, per_call: int | None = None, name: str = "task"
    ) -> TokenBudget:
        """A budget inside this one (e.g. one task of the run)."""
        return TokenBudget(limit, per_call=per_call, name=name, parent=self)

    @property
    def chain(self) -> tuple[TokenBudget, ...]:
        budgets: list[TokenBudget] = []
        node: TokenBudget | None = self
        while node is not None:
            budgets.append(node)
            node = node.parent
        return tuple(budgets)

    @property
    def remaining(self) -> int | None:
        """Tokens still free here (None: no limit), not counting what other calls reserved."""
        return None if self.limit is None else max(0, self.limit - self.used)

    def cap(self, max_tokens: int | None) -> int | None:
        """`max_tokens` clamped to the smallest per-call cap in the chain."""
        caps = [b.per_call for b in self.chain if b.per_call is not None]
        if not caps:
            return max_tokens
        return min(caps) if max_tokens is None else min(max_tokens, *caps)

    def reserve(self, tokens: int) -> Reservation:
        """Set `tokens` aside in every budget of the chain, or raise BudgetExceededError."""
        with self._lock:
            for budget in self.chain:
                if budget.limit is None:
                    continue
                taken = budget.used + budget.reserved
                if taken >= budget.limit or taken + tokens > budget.limit:
                    raise BudgetExceededError(
                        f"{budget.name} token budget spent: {budget.used} of {budget.limit} "
                        f"tokens used, {budget.reserved} reserved by calls in flight; the next "
                        f"call may need up to {tokens}",
                        budget=budget.name,
                    )
            for budget in self.chain:
                budget.reserved += tokens
            return Reservation(tokens, self.chain)

    def settle(self, reservation: Reservation, spent: int) -> None:
        """Free a reservation and charge what the call really used (0 if it failed)."""
        with self._lock:
            if not reservation.open:
                raise ValueError("reservation already settled")
            reservation.open = False
            for budget in reservation.chain:
                budget.reserved -= reservation.tokens
                budget.used += spent

    def charge(self, spent: int) -> None:
        """Charge usage that was not reserved beforehand."""
        self.settle(Reservation(0, self.chain), spent)

    def __repr__(self) -> str:
        return f"TokenBudget({self.name!r}, used={self.used}, limit={self.limit})"


class ModelUsage(Record):
    calls: int = 0
    failures: int = 0
    completions: int = 0
    cached_completions: int = 0
    fresh: TokenUsage = TokenUsage()
    cached: TokenUsage = TokenUsage()


class UsageMeter:
    """Totals of a run: calls, completions, prompt/completion tokens, fresh and cached apart."""

    def __init__(self) -> None:
        self.by_model: dict[str, ModelUsage] = {}
        self._lock = threading.Lock()

    def record(self, spec: str, completions: Sequence[Completion]) -> None:
        with self._lock:
            entry = self.by_model.setdefault(spec, ModelUsage())
            entry.calls += 1
            for c in completions:
                entry.completions += 1
                if c.cached:
                    entry.cached_completions += 1
                    entry.cached = entry.cached + c.usage
                else:
                    entry.fresh = entry.fresh + c.usage

    def record_failure(self, spec: str) -> None:
        with self._lock:
            self.by_model.setdefault(spec, ModelUsage()).failures += 1

    @property
    def fresh(self) -> TokenUsage:
        return sum((m.fresh for m in self.by_model.values()), TokenUsage())

    @property
    def cached(self) -> TokenUsage:
        return sum((m.cached for m in self.by_model.values()), TokenUsage())

    def summary(self) -> dict[str, Any]:
        """JSON-ready totals for a run log or report."""
        fresh, cached = self.fresh, self.cached
        return {
            "fresh": {"prompt": fresh.prompt, "completion": fresh.completion},
            "cached": {"prompt": cached.prompt, "completion": cached.completion},
            "total": (fresh + cached).total,
            "by_model": {k: v.model_dump(mode="json") for k, v in self.by_model.items()},
        }


class BudgetedModel(ModelWrapper):
    """`inner` under a token budget, reporting to a usage meter (either may be None)."""

    def __init__(
        self,
        inner: ChatModel,
        budget: TokenBudget | None = None,
        meter: UsageMeter | None = None,
    ) -> None:
        super().__init__(inner)
        self.budget = budget
        self.meter = meter

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        n: int = 1,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        response_schema: dict[str, Any] | None = None,
    ) -> list[Completion]:
        reservation = None
        if self.budget is not None:
            max_tokens = self.budget.cap(max_tokens)
            need = estimate_prompt_tokens(messages) + n * (max_tokens or 0)
            reservation = self.budget.reserve(need)
        try:
            completions = await self.inner.generate(
                messages,
                n=n,
                temperature=temperature,
                max_tokens=max_tokens,
                stop=stop,
                seed=seed,
                response_schema=response_schema,
            )
        except BaseException as exc:
            if reservation is not None and self.budget is not None:
                self.budget.settle(reservation, 0)
            if self.meter is not None and isinstance(exc, Exception):
                self.meter.record_failure(self.spec)
            raise
        if reservation is not None and self.budget is not None:
            self.budget.settle(reservation, sum(c.usage.total for c in completions))
        if self.meter is not None:
            self.meter.record(self.spec, completions)
        return completions
