"""Model providers behind one async interface, with cache, limits, retries and budgets.

Typical use (a pipeline or solver):

    model = make_model("openai:gpt-4o-mini", cache="runs/cache.sqlite")
    await preflight(model)                       # one clear error before the run starts
    meter, run_budget = UsageMeter(), TokenBudget(2_000_000)
    task_model = BudgetedModel(model, run_budget.child(50_000, name=f"task {task.id}"), meter)
    messages = load_prompt("example").render(statement=..., language="lean", examples=[])
    completions = await task_model.generate(messages, n=1, temperature=0.4, seed=0)

The provider SDKs are imported only when a model of theirs is made.
"""

from formalbench.llm.base import (
    BudgetExceededError,
    ChatModel,
    Completion,
    Message,
    ModelCallError,
    ModelWrapper,
)
from formalbench.llm.budget import BudgetedModel, TokenBudget, UsageMeter
from formalbench.llm.cached import CachedModel
from formalbench.llm.prompts import PromptTemplate, list_prompts, load_prompt
from formalbench.llm.registry import PROVIDERS, make_model, parse_spec, preflight, preflight_sync
from formalbench.llm.replay import RecordingModel, ReplayModel, ScriptedCall, ScriptedModel
from formalbench.llm.retry import RetryPolicy

__all__ = [
    "PROVIDERS",
    "BudgetExceededError",
    "BudgetedModel",
    "CachedModel",
    "ChatModel",
    "Completion",
    "Message",
    "ModelCallError",
    "ModelWrapper",
    "PromptTemplate",
    "RecordingModel",
    "ReplayModel",
    "RetryPolicy",
    "ScriptedCall",
    "ScriptedModel",
    "TokenBudget",
    "UsageMeter",
    "list_prompts",
    "load_prompt",
    "make_model",
    "parse_spec",
    "preflight",
    "preflight_sync",
]
