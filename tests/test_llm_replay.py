"""Recording a live model, replaying it offline, and scripted models for solver tests."""

from __future__ import annotations

import asyncio
import json

import pytest

from formalbench.core.errors import InputError
from formalbench.core.records import TokenUsage
from formalbench.llm import (
    Completion,
    Message,
    ModelCallError,
    RecordingModel,
    ReplayModel,
    ScriptedModel,
    make_model,
)

try:
    from standins.openai_server import CHAT, Reply, StandinServer
except ImportError:  # tests/ became a package
    from tests.standins.openai_server import CHAT, Reply, StandinServer

Q1 = [Message(role="user", content="state Fermat's little theorem")]
Q2 = [Message(role="user", content="prove it")]


def test_record_then_replay_round_trip(tmp_path):
    path = tmp_path / "rec" / "session.jsonl"
    with StandinServer() as srv:
        srv.script(Reply(texts=["a1", "a2"], usage=(9, 4)), Reply(texts=["b"], usage=(3, 1)))
        live = make_model(f"openai:standin-model@{srv.base_url}", record=path)

        async def record():
            one = await live.generate(Q1, n=2, temperature=0.8, seed=5)
            two = await live.generate(Q2, max_tokens=30, stop=["QED"])
            await live.aclose()
            return one, two

        one, two = asyncio.run(record())
        assert srv.count(CHAT) == 2
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["spec"] for r in rows] == [live.spec] * 2
    replay = make_model(f"replay:{path}")
    assert isinstance(replay, ReplayModel) and len(replay) == 2

    async def again():
        return (
            await replay.generate(Q1, n=2, temperature=0.8, seed=5),
            await replay.generate(Q2, max_tokens=30, stop=["QED"]),
        )

    r1, r2 = asyncio.run(again())
    assert [c.text for c in r1] == ["a1", "a2"] and r2[0].text == "b"
    assert [c.usage for c in r1] == [c.usage for c in one] and r2[0].usage == two[0].usage


def test_missing_request_names_the_file(tmp_path):
    path = tmp_path / "rec.jsonl"
    recorder = RecordingModel(ScriptedModel(["x"]), path)
    asyncio.run(recorder.generate(Q1, seed=0))
    replay = ReplayModel(path)
    with pytest.raises(
        ModelCallError, match=rf"replay file {path} has no recorded response.*seed=1"
    ):
        asyncio.run(replay.generate(Q1, seed=1))  # another sample than the one recorded


def test_bad_replay_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        ReplayModel(tmp_path / "absent.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"request": {"messages": []}, "completions": []}\n{not json\n')
    with pytest.raises(InputError, match=r"broken.jsonl, line 2"):
        ReplayModel(broken)


def test_same_request_from_two_models_needs_a_choice(tmp_path):
    path = tmp_path / "two.jsonl"
    asyncio.run(RecordingModel(ScriptedModel(["from a"], spec="a"), path).generate(Q1))
    asyncio.run(RecordingModel(ScriptedModel(["from b"], spec="b"), path).generate(Q1))
    with pytest.raises(InputError, match="recorded for 'a' and 'b'"):
        ReplayModel(path)
    only_b = ReplayModel(path, source_spec="b")
    assert asyncio.run(only_b.generate(Q1))[0].text == "from b"


def test_scripted_list_is_consumed_in_order():
    model = ReplayModel.scripted(["first", "second\nQED rest", "third"])

    async def main():
        a = await model.generate(Q1)
        b = await model.generate(Q2, n=2, stop=["QED"])
        return a, b

    a, b = asyncio.run(main())
    assert a[0].text == "first" and [c.text for c in b] == ["second\n", "third"]
    assert b[0].usage == TokenUsage(prompt=2, completion=1)  # approximate, in words
    assert [c.messages for c in model.calls] == [Q1, Q2]
    with pytest.raises(ModelCallError, match=r"script of 3 response\(s\) is used up"):
        asyncio.run(model.generate(Q1))


def test_scripted_rule_sees_each_sample():
    def rule(call):
        if "prove" in call.messages[-1].content:
            return Completion(text=f"proof {call.sample}", usage=TokenUsage(completion=7))
        return f"t={call.temperature} seed={call.seed}"

    model = ScriptedModel(rule)
    out = asyncio.run(model.generate(Q2, n=3))
    assert [c.text for c in out] == ["proof 0", "proof 1", "proof 2"]
    assert out[0].usage.completion == 7
    assert asyncio.run(model.generate(Q1, temperature=0.4, seed=2))[0].text == "t=0.4 seed=2"


def test_replay_file_hash_spec_picks_one_models_lines(tmp_path):
    """`replay:FILE#SPEC`: the lines of the model SPEC, named as recorded or without its
    endpoint; a SPEC the file does not hold is one line naming those it does."""
    from formalbench.llm.registry import make_model

    path = tmp_path / "two.jsonl"
    asyncio.run(
        RecordingModel(ScriptedModel(["a"], spec="openai:m@http://h:1/v1"), path).generate(Q1)
    )
    asyncio.run(
        RecordingModel(ScriptedModel(["b"], spec="openai:n@http://h:2/v1"), path).generate(Q1)
    )
    for spec in ("openai:n", "openai:n@http://h:2/v1"):
        model = make_model(f"replay:{path}#{spec}")
        assert asyncio.run(model.generate(Q1))[0].text == "b"
    with pytest.raises(InputError, match=r"nothing recorded for 'openai:z'; it holds 'openai:m@"):
        make_model(f"replay:{path}#openai:z")
