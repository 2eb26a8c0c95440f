"""Token budgets (per call, per task, per run) and the run's usage meter."""

from __future__ import annotations

import asyncio

import pytest

from formalbench.core.errors import InputError
from formalbench.core.records import TokenUsage
from formalbench.llm import (
    BudgetedModel,
    BudgetExceededError,
    Completion,
    Message,
    ModelCallError,
    RetryPolicy,
    ScriptedModel,
    TokenBudget,
    UsageMeter,
    make_model,
)
from formalbench.store.response_cache import ResponseCache

try:
    from standins.openai_server import CHAT, Reply, StandinServer
except ImportError:  # tests/ became a package
    from tests.standins.openai_server import CHAT, Reply, StandinServer

MSGS = [Message(role="user", content="hi")]  # estimated at 0 prompt tokens (2 chars // 4)


def http_model(srv: StandinServer, **options):
    return make_model(
        f"openai:standin-model@{srv.base_url}", retry=RetryPolicy(max_retries=0), **options
    )


def test_task_budget_stops_before_the_call_that_would_overrun_it():
    run_budget = TokenBudget(10_000)
    task = run_budget.child(90, name="task t1")
    with StandinServer() as srv:
        srv.script(*[Reply(usage=(30, 10)) for _ in range(3)])
        model = BudgetedModel(http_model(srv), task)

        async def main():
            await model.generate(MSGS, max_tokens=20)
            await model.generate(MSGS, max_tokens=20)
            await model.generate(MSGS, max_tokens=20)  # 80 used + 20 reserved > 90

        with pytest.raises(BudgetExceededError, match=r"task t1 token budget spent: 80 of 90"):
            asyncio.run(main())
        assert srv.count(CHAT) == 2  # refused before any HTTP request
    assert (task.used, task.reserved) == (80, 0)
    assert (run_budget.used, run_budget.reserved) == (80, 0)  # charged up the chain


def test_run_budget_binds_every_task():
    run_budget = TokenBudget(50, name="run")
    first, second = run_budget.child(name="a"), run_budget.child(name="b")
    script = [Completion(text="x", usage=TokenUsage(prompt=20, completion=10))] * 3
    model = ScriptedModel(script)

    async def main():
        await BudgetedModel(model, first).generate(MSGS)
        await BudgetedModel(model, second).generate(MSGS)  # 60 > 50, but only known after
        await BudgetedModel(model, first).generate(MSGS)

    with pytest.raises(BudgetExceededError, match=r"^run token budget spent: 60 of 50"):
        asyncio.run(main())
    assert (first.used, second.used, run_budget.used) == (30, 30, 60)


def test_reservations_count_calls_in_flight():
    """Three concurrent calls, room for two reservations: the third is refused at once."""
    budget = TokenBudget(50)
    with StandinServer() as srv:
        srv.script(*[Reply(delay=0.2, usage=(1, 1)) for _ in range(3)])
        model = BudgetedModel(http_model(srv), budget)

        async def main():
            calls = [model.generate(MSGS, max_tokens=20) for _ in range(3)]
            return await asyncio.gather(*calls, return_exceptions=True)

        results = asyncio.run(main())
        assert sum(isinstance(r, BudgetExceededError) for r in results) == 1
        assert srv.count(CHAT) == 2
    assert (budget.used, budget.reserved) == (4, 0)


def test_per_call_cap_clamps_max_tokens():
    with StandinServer() as srv:
        budget = TokenBudget(per_call=16).child(per_call=64)
        model = BudgetedModel(http_model(srv), budget)
        asyncio.run(model.generate(MSGS, max_tokens=100))
        asyncio.run(model.generate(MSGS))
        assert [r.body["max_tokens"] for r in srv.requests] == [16, 16]
        assert budget.cap(8) == 8


def test_failed_call_frees_its_reservation():
    budget = TokenBudget(100)
    with StandinServer() as srv:
        srv.script(Reply(status=500))
        model = BudgetedModel(http_model(srv), budget, UsageMeter())
        with pytest.raises(ModelCallError):
            asyncio.run(model.generate(MSGS, max_tokens=60))
        assert (budget.used, budget.reserved) == (0, 0)
        assert model.meter.by_model[model.spec].failures == 1


def test_meter_counts_cached_tokens_apart(tmp_path):
    meter = UsageMeter()
    budget = TokenBudget(1_000)
    with StandinServer() as srv, ResponseCache(tmp_path / "c.sqlite") as cache:
        srv.script(Reply(texts=["p1", "p2"], usage=(8, 6)))
        model = BudgetedModel(http_model(srv, cache=cache), budget, meter)
        asyncio.run(model.generate(MSGS, n=2))
        asyncio.run(model.generate(MSGS, n=2))  # served by the cache
        assert srv.count(CHAT) == 1
    assert meter.fresh == TokenUsage(prompt=8, completion=6)
    assert meter.cached == TokenUsage(prompt=8, completion=6)
    summary = meter.summary()
    assert summary["total"] == 28
    [entry] = summary["by_model"].values()
    assert (entry["calls"], entry["completions"], entry["cached_completions"]) == (2, 4, 2)
    assert budget.used == 28  # a resumed run takes the same budget decisions


def test_bad_budget_values_are_input_errors():
    with pytest.raises(InputError, match="limit must be >= 0"):
        TokenBudget(-1)
    with pytest.raises(InputError, match="per-call cap"):
        TokenBudget(per_call=0)
