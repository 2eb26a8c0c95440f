"""Ask a model for a reply of a known shape: a JSON Schema out, a validated pydantic value in.

Steps whose answer is data (a review, a decomposition, a ranking) name the answer's shape as
a pydantic model. Its JSON Schema goes to the provider with the request (`response_schema`:
OpenAI `response_format` of type `json_schema`, Anthropic a forced tool whose input schema
it is), so a provider that enforces schemas cannot answer in another shape; a model that
cannot enforce one (`takes_schema` False) is shown the schema in the prompt instead. The
response cache and the replay files key the request with its schema.

The reply is read leniently (the first JSON object in it, fenced or not) and validated with
pydantic. A reply that does not validate is asked again, with the validator's message, once
by default (`retries`); if it still does not validate, the outcome is a *format failure*: a
value the caller records (`error` and the raw reply), never an exception. Only a failed call
(`ModelCallError`, `BudgetExceededError`) propagates: that is the endpoint's fault, not the
reply's.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from formalbench.core.records import TokenUsage
from formalbench.llm.base import ChatModel, Completion, Message
from formalbench.llm.prompts import PromptTemplate, load_prompt
from formalbench.llm.schema import json_schema_of, schema_text

M = TypeVar("M", bound=BaseModel)
FIX_PROMPT = "structured_fix"
SCHEMA_PROMPT = "structured_schema"
_FENCED = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class ReplyFormatError(ValueError):
    """The reply holds no JSON object of the expected shape; the message says what is wrong."""


@dataclass
class StructuredOutcome(Generic[M]):
    """What a structured call gave: the value, or the format failure and the last reply."""

    value: M | None
    raw: str  # the last reply, as the model sent it
    attempts: int
    error: str | None = None  # set exactly when `value` is None: a format failure
    tokens: TokenUsage = field(default_factory=TokenUsage)
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    model: str = ""  # the model that answered, as the provider names it

    @property
    def format_failure(self) -> bool:
        return self.value is None


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
    raise ReplyFormatError("the reply holds no JSON object")


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


def describe_validation_error(exc: ValidationError, limit: int = 5) -> str:
    """A pydantic error in one line: `field.path: message; ...` (the first `limit`)."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "the object"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def read_reply(text: str, schema: type[M], check: Callable[[M], None] | None = None) -> M:
    """`text` as a `schema` value; ReplyFormatError says why it is not one."""
    data = find_json_object(text)
    try:
        value = schema.model_validate(data)
    except ValidationError as exc:
        raise ReplyFormatError(describe_validation_error(exc)) from None
    if check is not None:
        try:
            check(value)
        except ValueError as exc:
            raise ReplyFormatError(str(exc)) from None
    return value


@functools.cache
def _template(name: str) -> PromptTemplate:
    """This module's own two templates, read once per process (every structured call uses
    them; a run must not mix versions of them anyway)."""
    return load_prompt(name)


def with_schema_stated(messages: Sequence[Message], schema: dict[str, Any]) -> list[Message]:
    """`messages` with the schema stated at the end of the last user turn (or a new one)."""
    note = _template(SCHEMA_PROMPT).render(schema=schema_text(schema))[0].content
    chat = list(messages)
    if chat and chat[-1].role == "user":
        chat[-1] = Message(role="user", content=f"{chat[-1].content}\n\n{note}")
    else:
        chat.append(Message(role="user", content=note))
    return chat


async def ask_structured(
    model: ChatModel,
    messages: Sequence[Message],
    schema: type[M],
    *,
    check: Callable[[M], None] | None = None,
    retries: int = 1,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    seed: int | None = 0,
) -> StructuredOutcome[M]:
    """Ask `model` for a `schema` value, re-asking up to `retries` times (see module doc).

    `check` adds a rule the schema cannot say (e.g. "names one of the candidates"); it
    raises ValueError with the reason, which is shown to the model like a validation error.
    """
    json_schema = json_schema_of(schema)
    fix = _template(FIX_PROMPT)
    hashes = {"fix_json": fix.hash}
    chat = list(messages)
    if not model.takes_schema:
        chat = with_schema_stated(chat, json_schema)
        hashes["schema"] = _template(SCHEMA_PROMPT).hash

    # Only a model that enforces schemas is handed one: for the others it is in the prompt
    # (which then keys the cache), and a ChatModel written before the keyword still works.
    async def call(chat: list[Message]) -> Completion:
        if model.takes_schema:
            return (
                await model.generate(
                    chat,
                    n=1,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    response_schema=json_schema,
                )
            )[0]
        return (
            await model.generate(
                chat, n=1, temperature=temperature, max_tokens=max_tokens, seed=seed
            )
        )[0]

    tokens = TokenUsage()
    raw, error, answered_by = "", "", ""
    for attempt in range(1, retries + 2):
        completion = await call(chat)
        tokens = tokens + completion.usage
        raw, answered_by = completion.text, completion.model or model.spec
        try:
            value = read_reply(raw, schema, check)
        except ReplyFormatError as exc:
            error = str(exc)
        else:
            return StructuredOutcome(value, raw, attempt, None, tokens, hashes, answered_by)
        chat = [*chat, Message(role="assistant", content=raw), *fix.render(problem=error)]
    return StructuredOutcome(
        None,
        raw,
        retries + 1,
        f"unreadable reply after {retries + 1} attempt(s): {error}",
        tokens,
        hashes,
        answered_by,
    )
