"""Ask a model for a JSON object and read it with a function (the older way; structured
replies validated by pydantic are `llm.structured`, which the judges use now).

Field helpers (`text_field`, `list_field`, `lenient_text`, `lenient_list`) are shared by both:
the pydantic reply models of the judges use the lenient ones as `before` validators.

Judges answer in JSON so that their verdicts can be stored and counted, but models wrap it
in prose, fence it, or drop a field. A reply is read leniently (the first balanced `{...}`
anywhere in it, fenced or not); when it still cannot be read, the model is shown its own
reply and the reason and asked once more, up to `retries` times. What could not be read in
the end is returned as an outcome with its error and raw text, never raised: an unreadable
judgement is a result the pipeline records. Only a failed call (`ModelCallError`,
`BudgetExceededError`) propagates, because that is the endpoint's fault, not the judge's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from formalbench.core.records import TokenUsage
from formalbench.llm.base import ChatModel, Message
from formalbench.llm.prompts import load_prompt
from formalbench.llm.structured import ReplyFormatError, find_json_object

T = TypeVar("T")


# The reply holds no JSON object of the expected shape (the message says what is wrong);
# one class with the structured layer's, so readers written for either work with both.
Unreadable = ReplyFormatError


@dataclass
class JsonOutcome(Generic[T]):
    value: T | None
    raw: str  # the last reply
    attempts: int
    error: str | None = None
    tokens: TokenUsage = field(default_factory=TokenUsage)
    prompt_hashes: dict[str, str] = field(default_factory=dict)


def text_field(data: dict[str, Any], key: str, *, required: bool = True) -> str:
    """A string field; a list of strings is joined (models often split one answer)."""
    value = data.get(key)
    if value is None or value == "":
        if required:
            raise Unreadable(f"the JSON object has no `{key}`")
        return ""
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return "; ".join(str(v) for v in value)
    if isinstance(value, str | int | float):
        return str(value)
    raise Unreadable(f"`{key}` must be text, got {type(value).__name__}")


def list_field(data: dict[str, Any], key: str) -> list[str]:
    """A list of strings; a single string counts as a list of one, absent as empty."""
    value = data.get(key, [])
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return [str(v) for v in value]
    raise Unreadable(f"`{key}` must be a list of strings")


def bool_field(data: dict[str, Any], key: str) -> bool:
    value = data.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise Unreadable(f"`{key}` must be true or false")


async def ask_json(
    model: ChatModel,
    messages: Sequence[Message],
    read: Callable[[dict[str, Any]], T],
    *,
    retries: int = 2,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    seed: int | None = 0,
) -> JsonOutcome[T]:
    """Call `model` and `read` the JSON object of its reply, asking again up to `retries`."""
    fix = load_prompt("judge_fix_json")
    chat = list(messages)
    tokens = TokenUsage()
    raw, error = "", None
    for attempt in range(1, retries + 2):
        completion = (
            await model.generate(
                chat, n=1, temperature=temperature, max_tokens=max_tokens, seed=seed
            )
        )[0]
        tokens = tokens + completion.usage
        raw = completion.text
        try:
            value = read(find_json_object(raw))
        except Unreadable as exc:
            error = str(exc)
        else:
            return JsonOutcome(value, raw, attempt, None, tokens, {"fix_json": fix.hash})
        chat = [*chat, Message(role="assistant", content=raw), *fix.render(problem=error)]
    return JsonOutcome(
        None,
        raw,
        retries + 1,
        f"unreadable reply after {retries + 1} attempt(s): {error}",
        tokens,
        {"fix_json": fix.hash},
    )


def lenient_text(value: Any) -> Any:
    """For a pydantic `before` validator: a list of strings joined, a number as text."""
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return "; ".join(str(v) for v in value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def lenient_list(value: Any) -> Any:
    """For a pydantic `before` validator: one string is a list of one; null or "" is empty."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v) if isinstance(v, int | float) else v for v in value]
    return value
