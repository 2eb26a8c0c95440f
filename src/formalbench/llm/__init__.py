"""Model providers behind one async interface, with cache, limits, retries and budgets."""

from formalbench.llm.base import (
    BudgetExceededError,
    ChatModel,
    Completion,
    Message,
    ModelCallError,
)

__all__ = ["BudgetExceededError", "ChatModel", "Completion", "Message", "ModelCallError"]
