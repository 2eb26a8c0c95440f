"""Model specs, options, the Anthropic extra, and Anthropic over real HTTP when installed."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from formalbench.core.errors import InputError
from formalbench.llm import (
    CachedModel,
    Message,
    ModelCallError,
    RecordingModel,
    RetryPolicy,
    make_model,
    parse_spec,
)
from formalbench.llm.anthropic_model import to_anthropic
from formalbench.llm.openai_model import OpenAIChatModel

try:
    from standins.openai_server import MESSAGES, Reply, StandinServer
except ImportError:  # tests/ became a package
    from tests.standins.openai_server import MESSAGES, Reply, StandinServer

HAS_ANTHROPIC = importlib.util.find_spec("anthropic") is not None


def test_parse_spec_forms():
    assert parse_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini", None)
    assert parse_spec("openai:qwen2.5-math@http://127.0.0.1:8000/v1") == (
        "openai",
        "qwen2.5-math",
        "http://127.0.0.1:8000/v1",
    )
    assert parse_spec("openai:org/model@v2") == ("openai", "org/model@v2", None)
    assert parse_spec(" OpenAI:m ") == ("openai", "m", None)
    assert parse_spec("replay:runs/a:b.jsonl") == ("replay", "runs/a:b.jsonl", None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", "expected PROVIDER:MODEL"),
        ("openai:", "expected PROVIDER:MODEL"),
        ("mistral:large", "unknown provider 'mistral'; known providers: anthropic, openai, replay"),
        ("openai:@http://h/v1", "model name is empty"),
    ],
)
def test_bad_specs_are_input_errors(spec, message):
    with pytest.raises(InputError, match=message):
        make_model(spec)


def test_options_reach_the_provider_and_unknown_ones_are_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = make_model(
        "openai:m@http://user:pw@127.0.0.1:8000/v1/", timeout=5, concurrency=3, max_retries=1
    )
    assert isinstance(model, OpenAIChatModel)
    assert model.spec == "openai:m@http://127.0.0.1:8000/v1"  # no credentials in names
    assert (model.timeout, model.concurrency, model.retry.max_retries) == (5, 3, 1)
    assert "pw" not in repr(model)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.1:9000/v1")
    assert make_model("openai:m").base_url == "http://10.0.0.1:9000/v1"
    with pytest.raises(
        InputError, match=r"unknown option\(s\) temprature; openai takes: .*timeout"
    ):
        make_model("openai:m", temprature=0.3)
    wrapped = make_model(
        "openai:m@http://127.0.0.1:1/v1", cache=tmp_path / "c.sqlite", record=tmp_path / "r.jsonl"
    )
    assert isinstance(wrapped, RecordingModel) and isinstance(wrapped.inner, CachedModel)
    assert wrapped.spec == "openai:m@http://127.0.0.1:1/v1"


def test_anthropic_without_the_extra_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if not installed
    with pytest.raises(InputError, match=r"pip install 'formalbench\[anthropic\]'"):
        make_model("anthropic:claude-x")


def test_messages_map_to_the_anthropic_shape():
    system, turns = to_anthropic(
        [
            Message(role="system", content="S"),
            Message(role="user", content="u1"),
            Message(role="tool", content="t"),
            Message(role="assistant", content="a"),
        ]
    )
    assert system == "S"
    assert turns == [{"role": "user", "content": "u1\n\nt"}, {"role": "assistant", "content": "a"}]


@pytest.mark.skipif(not HAS_ANTHROPIC, reason="the optional anthropic extra is not installed")
def test_anthropic_over_http_samples_retries_and_preflight(monkeypatch, caplog):
    key = "sk-ant-standin-000000000000"
    with StandinServer(api_key=key) as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        model = make_model(
            f"anthropic:standin-model@{srv.root_url}",
            retry=RetryPolicy(max_retries=2, base_delay=0.001),
        )
        srv.script(Reply(status=529, message="overloaded"), Reply(texts=["x"], usage=(5, 2)))
        msgs = [Message(role="system", content="be exact"), Message(role="user", content="1+1?")]

        async def main():
            await model.preflight(timeout=5)
            out = await model.generate(msgs, n=2, temperature=0.5, max_tokens=64, stop=["END"])
            await model.aclose()
            return out

        out = asyncio.run(main())
        assert len(out) == 2 and srv.count(MESSAGES) == 3  # one 529 retried, two samples
        body = srv.requests[-1].body
        assert body["system"] == "be exact" and body["stop_sequences"] == ["END"]
        assert body["max_tokens"] == 64
        assert sum(c.usage.total for c in out) > 0
        if model._takes_temperature:  # SDK 0.x / 1.x
            assert body["temperature"] == 0.5
            with pytest.raises(InputError, match="temperature must be within 0..1"):
                asyncio.run(model.generate(msgs, temperature=1.5))
        else:  # SDK 2.x has no temperature parameter: not sent, and said so
            assert "temperature" not in body
            assert "takes no temperature" in caplog.text
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-000000000000")
        wrong = make_model(f"anthropic:standin-model@{srv.root_url}")
        with pytest.raises(ModelCallError, match="HTTP 401") as err:
            asyncio.run(wrong.preflight(timeout=5))
        assert "sk-ant-wrong" not in str(err.value)
