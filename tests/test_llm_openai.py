"""The OpenAI-compatible provider over real HTTP (real `openai` SDK, stand-in server)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import httpx
import openai
import pytest

from formalbench.llm import Message, ModelCallError, RetryPolicy, make_model
from formalbench.llm.limits import endpoint_semaphore
from formalbench.llm.openai_model import OpenAIChatModel, split_usage
from formalbench.llm.retry import call_with_retries, classify_sdk_error, parse_retry_after

try:
    from standins.openai_server import CHAT, MODELS, Reply, StandinServer
except ImportError:  # tests/ became a package
    from tests.standins.openai_server import CHAT, MODELS, Reply, StandinServer

KEY = "sk-standin-0123456789abcdef"
FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01)
HELLO = [Message(role="system", content="be brief"), Message(role="user", content="say hi")]


@pytest.fixture
def server():
    with StandinServer(api_key=KEY) as srv:
        yield srv


def model_for(srv: StandinServer, **options) -> OpenAIChatModel:
    options.setdefault("api_key", KEY)
    options.setdefault("retry", FAST)
    return make_model(f"openai:standin-model@{srv.base_url}", **options)


def run(model, *calls):
    """Run generate() calls (kwargs dicts) concurrently in a fresh loop, then close the model."""

    async def main():
        try:
            return await asyncio.gather(*(model.generate(HELLO, **c) for c in calls or [{}]))
        finally:
            await model.aclose()

    return asyncio.run(main())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_n_samples_in_one_request_with_exact_usage(server):
    server.script(Reply(texts=["a b", "c", "d e f"], usage=(11, 7)))
    [out] = run(model_for(server), dict(n=3, temperature=0.7, max_tokens=50, stop=["\n\n"], seed=4))
    assert [c.text for c in out] == ["a b", "c", "d e f"]
    assert server.count(CHAT) == 1
    body = server.requests[-1].body
    assert (body["n"], body["temperature"], body["max_tokens"], body["seed"]) == (3, 0.7, 50, 4)
    assert body["stop"] == ["\n\n"] and body["messages"][0]["role"] == "system"
    assert sum(c.usage.prompt for c in out) == 11
    assert sum(c.usage.completion for c in out) == 7
    assert out[2].usage.completion > out[1].usage.completion  # longer text, larger share
    assert all(c.model == "standin-model" and not c.cached for c in out)


def test_split_usage_sums_are_exact():
    for prompt, completion, texts in [
        (10, 0, ["", ""]),
        (7, 13, ["x" * 5, "y", "z" * 40]),
        (0, 1, ["a"]),
    ]:
        parts = split_usage(prompt, completion, texts)
        assert sum(p.prompt for p in parts) == prompt
        assert sum(p.completion for p in parts) == completion


def test_server_that_ignores_n_is_asked_again_with_fresh_seeds():
    with StandinServer(max_choices=1) as srv:
        [out] = run(model_for(srv), dict(n=3, seed=9))
        assert len(out) == 3 and srv.count(CHAT) == 3
        seeds = [r.body["seed"] for r in srv.requests]
        assert seeds[0] == 9 and len(set(seeds)) == 3
        assert [r.body["n"] for r in srv.requests] == [3, 2, 1]


def test_tool_messages_are_sent_as_user(server):
    model = model_for(server)

    async def main():
        await model.generate([Message(role="tool", content="goal: 1 = 1")])
        await model.aclose()

    asyncio.run(main())
    assert server.requests[-1].body["messages"] == [{"role": "user", "content": "goal: 1 = 1"}]


def test_retries_on_429_and_500_then_succeeds(server):
    server.script(Reply(status=429), Reply(status=500), Reply(status=503), Reply(texts=["ok"]))
    [out] = run(model_for(server))
    assert out[0].text == "ok"
    assert server.count(CHAT) == 4  # exactly ours: the SDK's own retries are off


def test_retries_spent_is_one_clear_error(server):
    server.script(*[Reply(status=500, message="backend down")] * 4)
    with pytest.raises(
        ModelCallError, match=r"gave up after 4 attempt\(s\).*HTTP 500.*backend down"
    ):
        run(model_for(server))
    assert server.count(CHAT) == 4


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(server, status):
    if status == 401:
        model = model_for(server, api_key="sk-wrong-key-for-this-server")
    else:
        server.script(Reply(status=status, message="no such model"))
        model = model_for(server)
    with pytest.raises(ModelCallError, match=rf"HTTP {status}.*not retried"):
        run(model)
    assert server.count(CHAT) == 1


@pytest.mark.parametrize("raw", ["<html>proxy error page</html>", '{"choices": "none"}'])
def test_malformed_reply_is_a_model_call_error(server, raw):
    server.script(Reply(raw=raw))
    with pytest.raises(ModelCallError, match="the reply is not a chat completion"):
        run(model_for(server))
    assert server.count(CHAT) == 1


def test_retry_after_is_honoured(server):
    server.script(Reply(status=429, headers={"Retry-After": "0.3"}), Reply(texts=["late"]))
    model = model_for(server, retry=RetryPolicy(max_retries=2, base_delay=0.0))
    start = time.monotonic()
    [out] = run(model)
    assert out[0].text == "late" and time.monotonic() - start >= 0.3


def test_retry_loop_waits_what_the_server_asks():
    """Unit level: the delays asked of `sleep`, with no real waiting."""
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    errors = [
        openai.RateLimitError(
            "slow down",
            response=httpx.Response(429, headers={"retry-after": "7"}, request=request),
            body=None,
        ),
        openai.InternalServerError(
            "oops", response=httpx.Response(502, request=request), body=None
        ),
    ]
    slept: list[float] = []

    async def flaky():
        if errors:
            raise errors.pop(0)
        return "done"

    async def fake_sleep(seconds):
        slept.append(seconds)

    async def main():
        return await call_with_retries(
            flaky,
            label="m",
            classify=lambda e: classify_sdk_error(e, openai),
            policy=RetryPolicy(max_retries=3, base_delay=2.0, max_delay=2.0),
            semaphore=endpoint_semaphore("unit|x", 1),
            timeout=5.0,
            sleep=fake_sleep,
        )

    assert asyncio.run(main()) == "done"
    assert slept[0] == 7.0 and 0.0 <= slept[1] <= 4.0  # Retry-After, then jittered backoff


def test_parse_retry_after_forms():
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_timeout_is_retried_then_reported(server):
    server.script(Reply(delay=1.5), Reply(delay=1.5))
    model = model_for(server, timeout=0.2, retry=RetryPolicy(max_retries=1, base_delay=0.0))
    start = time.monotonic()
    with pytest.raises(ModelCallError, match=r"gave up after 2.*no reply within 0.2s"):
        run(model)
    assert time.monotonic() - start < 1.4  # did not wait for the slow replies
    assert server.count(CHAT) == 2


def test_concurrency_limit_is_shared_per_endpoint(server):
    server.script(*[Reply(delay=0.15) for _ in range(8)])
    first = model_for(server, concurrency=2)
    second = model_for(server, concurrency=2)  # another model object, same endpoint

    async def main():
        calls = [m.generate(HELLO) for m in (first, second) for _ in range(4)]
        await asyncio.gather(*calls)

    asyncio.run(main())
    assert server.count(CHAT) == 8
    assert server.max_concurrent == 2


def test_preflight_ok_and_model_not_served(server):
    async def check(model):
        try:
            await model.preflight(timeout=5)
        finally:
            await model.aclose()

    asyncio.run(check(model_for(server)))
    assert server.count(MODELS) == 1
    wrong = make_model(f"openai:no-such-model@{server.base_url}", api_key=KEY)
    with pytest.raises(
        ModelCallError, match=r"does not serve model 'no-such-model'.*standin-model"
    ):
        asyncio.run(check(wrong))


def test_preflight_falls_back_to_a_one_token_request_without_models_route():
    with StandinServer(models=None) as srv:
        model = model_for(srv)
        asyncio.run(model.preflight(timeout=5))
        assert srv.count(CHAT) == 1 and srv.requests[-1].body["max_tokens"] == 1


def test_preflight_missing_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = make_model("openai:gpt-4o-mini")
    with pytest.raises(
        ModelCallError, match="no API key; set the environment variable OPENAI_API_KEY"
    ):
        asyncio.run(model.preflight())
    named = make_model("openai:m@http://127.0.0.1:9/v1", api_key_env="MY_VLLM_KEY")
    with pytest.raises(ModelCallError, match="MY_VLLM_KEY"):
        asyncio.run(named.generate(HELLO))


def test_key_from_named_environment_variable(server, monkeypatch):
    monkeypatch.setenv("STANDIN_KEY", KEY)
    model = make_model(f"openai:standin-model@{server.base_url}", api_key_env="STANDIN_KEY")
    asyncio.run(model.preflight(timeout=5))
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_preflight_unreachable_endpoint():
    model = make_model(f"openai:m@http://127.0.0.1:{free_port()}/v1", api_key=KEY)
    start = time.monotonic()
    with pytest.raises(ModelCallError, match=r"preflight failed: connection failed"):
        asyncio.run(model.preflight(timeout=3))
    assert time.monotonic() - start < 3


def test_preflight_refused_key_names_the_variable(server):
    model = model_for(server, api_key="sk-this-is-not-the-right-key")
    with pytest.raises(ModelCallError, match=r"HTTP 401.*check OPENAI_API_KEY") as err:
        asyncio.run(model.preflight(timeout=5))
    assert "sk-this-is-not" not in str(err.value)


def test_key_never_in_repr_logs_or_errors(server, caplog):
    """The stand-in echoes the key it was sent in its error bodies; none of it may leak."""
    server.script(Reply(status=500, message=f"upstream said {KEY}"), Reply(status=500, message=KEY))
    model = model_for(server, retry=RetryPolicy(max_retries=1, base_delay=0.0))
    caplog.set_level(logging.DEBUG, logger="formalbench")
    with pytest.raises(ModelCallError) as err:
        run(model)
    assert server.count(CHAT) == 2 and "retry 1/1" in caplog.text
    for text in (str(err.value), caplog.text, repr(model), repr(vars(model)), str(vars(model))):
        assert KEY not in text and KEY[:12] not in text
    bad = model_for(server, api_key="sk-wrong-but-secret-000000")
    with pytest.raises(ModelCallError) as err:
        run(bad)
    assert "sk-wrong-but" not in str(err.value) and "HTTP 401" in str(err.value)


def test_a_model_serves_several_event_loops(server):
    model = model_for(server)
    for _ in range(2):  # e.g. preflight in one asyncio.run, the run in another
        [out] = asyncio.run(asyncio.wait_for(model.generate(HELLO), 10))
        assert out.text.startswith("answer 0")
    assert server.count(CHAT) == 2
