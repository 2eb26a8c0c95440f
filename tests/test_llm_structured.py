"""Structured replies: the schema really goes out with the request (OpenAI response_format,
Anthropic forced tool, over real HTTP to the stand-in server), keys the cache and the replay
files, is stated in the prompt for models that cannot take it; a reply that does not
validate is re-asked once with the validator's message, then is a recorded format failure."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from formalbench.llm import (
    CachedModel,
    Message,
    RecordingModel,
    ReplayModel,
    RetryPolicy,
    ScriptedModel,
    make_model,
)
from formalbench.llm.base import ModelCallError
from formalbench.llm.schema import json_schema_of, schema_name
from formalbench.llm.structured import ask_structured
from formalbench.store.response_cache import ResponseCache
from tests.standins.openai_server import MESSAGES, Reply, StandinServer

CHAT = [Message(role="system", content="You grade."), Message(role="user", content="Grade 2+2=4")]


class Grade(BaseModel):
    verdict: str = Field(pattern="^(right|wrong)$")
    score: int = Field(ge=0, le=10)


def _openai(srv: StandinServer):
    retry = RetryPolicy(max_retries=0, base_delay=0.001)
    return make_model(f"openai:standin-model@{srv.base_url}", api_key="k", retry=retry)


def _ask(model, **kw):
    async def main():
        try:
            return await ask_structured(model, CHAT, Grade, **kw)
        finally:
            await model.aclose()

    return asyncio.run(main())


def test_openai_request_carries_the_schema_and_the_reply_is_validated() -> None:
    with StandinServer() as srv:
        srv.script(Reply(texts=['{"verdict": "right", "score": 9}']))
        out = _ask(_openai(srv))
        body = srv.requests[-1].body
    assert out.value == Grade(verdict="right", score=9) and out.attempts == 1
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Grade", "schema": json_schema_of(Grade)},
    }
    assert "JSON Schema" not in json.dumps(body["messages"])  # enforced, not stated


def test_invalid_reply_is_reasked_once_with_the_error_then_a_format_failure() -> None:
    with StandinServer() as srv:
        srv.script(
            Reply(texts=['{"verdict": "maybe", "score": 3}']),
            Reply(texts=['{"verdict": "right", "score": 11}']),
        )
        out = _ask(_openai(srv))
        second = srv.requests[-1].body
        assert srv.count() == 2  # one re-ask, no more
    assert out.value is None and out.format_failure and out.attempts == 2
    assert out.error is not None and "score" in out.error and "2 attempt" in out.error
    assert out.raw == '{"verdict": "right", "score": 11}' and out.tokens.total > 0
    assert second["messages"][-2] == {
        "role": "assistant",
        "content": '{"verdict": "maybe", "score": 3}',
    }
    assert "verdict" in second["messages"][-1]["content"]  # the validator's message is shown
    assert second["response_format"]["json_schema"]["schema"] == json_schema_of(Grade)


def test_reask_that_validates_is_a_value() -> None:
    with StandinServer() as srv:
        srv.script(Reply(texts=["no idea"]), Reply(texts=['{"verdict": "wrong", "score": 0}']))
        out = _ask(_openai(srv))
    assert out.value == Grade(verdict="wrong", score=0) and out.attempts == 2


@pytest.mark.skipif(
    importlib.util.find_spec("anthropic") is None, reason="the anthropic extra is not installed"
)
def test_anthropic_gets_the_schema_as_a_forced_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-standin")
    with StandinServer() as srv:
        srv.script(Reply(texts=['{"verdict": "right", "score": 7}']))
        model = make_model(
            f"anthropic:standin-model@{srv.root_url}", retry=RetryPolicy(max_retries=0)
        )
        out = _ask(model)
        body = srv.requests[-1].body
        assert srv.count(MESSAGES) == 1
    assert out.value == Grade(verdict="right", score=7)
    assert body["tools"][0]["input_schema"] == json_schema_of(Grade)
    assert body["tool_choice"] == {"type": "tool", "name": "Grade"}


def test_models_without_schema_support_are_shown_the_schema() -> None:
    model = ScriptedModel(['{"verdict": "right", "score": 1}'])
    out = _ask(model)
    call = model.calls[0]
    assert out.value is not None and call.response_schema is None  # stated, not passed
    last = call.messages[-1].content
    assert last.startswith("Grade 2+2=4") and '"score"' in last and "JSON Schema" in last


def test_the_schema_is_part_of_the_cache_and_replay_keys(tmp_path: Path) -> None:
    class Other(BaseModel):
        verdict: str
        score: int

    answers = iter(['{"verdict": "right", "score": 1}', '{"verdict": "right", "score": 2}'])
    scripted = ScriptedModel(lambda call: next(answers), takes_schema=True)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    recorded = RecordingModel(CachedModel(scripted, cache), tmp_path / "rec.jsonl")

    async def both(model):
        a = await ask_structured(model, CHAT, Grade)
        b = await ask_structured(model, CHAT, Other)
        c = await ask_structured(model, CHAT, Grade)
        return a, b, c

    a, b, c = asyncio.run(both(recorded))
    assert (a.value.score, b.value.score, c.value.score) == (1, 2, 1)  # c from the cache
    assert len(scripted.calls) == 2 and len(cache) == 2
    replay = ReplayModel(tmp_path / "rec.jsonl")
    assert replay.takes_schema
    assert scripted.calls[0].messages == CHAT  # enforced by the model: not stated
    assert scripted.calls[1].response_schema == json_schema_of(Other)
    got = asyncio.run(ask_structured(replay, CHAT, Grade))
    assert got.value is not None and got.value.score == 1
    with pytest.raises(ModelCallError):  # the same chat without the schema was never recorded
        asyncio.run(replay.generate(CHAT, temperature=0.0, seed=0))


def test_schema_names_are_what_providers_accept() -> None:
    assert schema_name({"title": "Source review (v2)"}) == "Source_review_v2"
    assert schema_name({}) == "reply" and len(schema_name({"title": "x" * 100})) == 64
