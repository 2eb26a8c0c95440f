"""Ask a model for a JSON object and read it, asking again when the reply cannot be read.

Judges answer in JSON so that their verdicts can be stored and counted, but models wrap it
in prose, fence it, or drop a field. A reply is read leniently (the first balanced `{...}`
anywhere in it, fenced or not); when it still cannot be read, the model is shown its own
reply and the reason and asked once more, up to `retries` times. What could not be read in
the end is returned as an outcome with its error and raw text, never raised: an unreadable
judgement is a result the pipeline records. Only a failed call (`ModelCallError`,
`BudgetExceededError`) propagates, because that is the endpoint's fault, not the judge's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from formalbench.core.records import TokenUsage
from formalbench.llm.base import ChatModel, Message
from formalbench.llm.prompts import load_prompt

T = TypeVar("T")
_FENCED = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class Unreadable(ValueError):
    """The reply holds no JSON object of the expected shape; the message says what is wrong."""


@dataclass
class JsonOutcome(Generic[T]):
    value: T | None
    raw: str  # the last reply
    attempts: int
    error: str | None = None
    tokens: TokenUsage = field(default_factory=TokenUsage)
    prompt_hashes: dict[str, str] = field(default_factory=dict)


def find_json_object(text: str) -> dict[str, Any]:
    """The JSON object in `text`: a fenced block first, else the first balanced `{...}`."""
    chunks = [m.group(1) for m in _FENCED.finditer(text)] + [text]
    for chunk in chunks:
        for start in (i for i, ch in enumerate(chunk) if ch == "{"):
            end = _balanced_end(chunk, start)
            if end is None:
                continue
            try:
                value = json.loads(chunk[start:end])
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise Unreadable("the reply holds no JSON object")


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the `}` closing the `{` at `start`, skipping braces inside strings."""
    depth, i, in_string = 0, start, False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


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
