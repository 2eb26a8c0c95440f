"""The judge layer over real HTTP (stand-in OpenAI-compatible server, real SDK): JSON read
leniently, re-asked when unreadable, decomposition, alignment and the ranked summary."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from formalbench.core.formalization import (
    Alignment,
    Candidate,
    CompileRound,
    Decomposition,
    Problem,
)
from formalbench.core.records import Language
from formalbench.judge.alignment import judge_alignment
from formalbench.judge.decompose import decompose
from formalbench.judge.ranking import NO_CODE, NOT_RANKED, group_candidates, rank_candidates
from formalbench.judge.reply import Unreadable, ask_json, find_json_object
from formalbench.llm import Message, ModelCallError, RetryPolicy, make_model
from tests.standins.openai_server import Reply, StandinServer


@pytest.fixture
def server():
    with StandinServer() as srv:
        yield srv


def model_for(srv: StandinServer):
    retry = RetryPolicy(max_retries=0, base_delay=0.001, max_delay=0.01)
    return make_model(f"openai:standin-model@{srv.base_url}", api_key="k", retry=retry)


def run(coro_fn):
    """Run `coro_fn(model)` in a fresh loop with a model that is closed afterwards."""

    async def main(model):
        try:
            return await coro_fn(model)
        finally:
            await model.aclose()

    return main


def test_json_is_found_fenced_in_prose_or_after_a_false_start() -> None:
    assert find_json_object('Sure:\n```json\n{"a": 1}\n```') == {"a": 1}
    assert find_json_object('I think {"a": "}{", "b": [1, {"c": 2}]} fits.') == {
        "a": "}{",
        "b": [1, {"c": 2}],
    }
    assert find_json_object('{not json} then {"ok": true}') == {"ok": True}
    for bad in ("[1, 2]", "no json here", '{"open": 1'):
        with pytest.raises(Unreadable):
            find_json_object(bad)


def test_unreadable_reply_is_asked_again_with_the_reason(server: StandinServer) -> None:
    server.script(Reply(texts=["the answer is yes"]), Reply(texts=['{"verdict": "ok"}']))
    messages = [Message(role="user", content="judge this")]

    def read(data: dict[str, Any]) -> str:
        if "verdict" not in data:
            raise Unreadable("no `verdict`")
        return data["verdict"]

    outcome = asyncio.run(run(lambda m: ask_json(m, messages, read, retries=2))(model_for(server)))
    assert (outcome.value, outcome.attempts, outcome.error) == ("ok", 2, None)
    assert outcome.tokens.total > 0
    second = server.requests[-1].body["messages"]
    assert second[1] == {"role": "assistant", "content": "the answer is yes"}
    assert "no JSON object" in second[2]["content"]


def test_reply_still_unreadable_after_retries_is_an_outcome_not_an_exception(server) -> None:
    server.responder = lambda body: ['{"other": 1}']
    messages = [Message(role="user", content="judge this")]

    def read(data: dict[str, Any]) -> str:
        raise Unreadable("no `verdict`")

    outcome = asyncio.run(run(lambda m: ask_json(m, messages, read, retries=1))(model_for(server)))
    assert outcome.value is None and outcome.attempts == 2 and server.count() == 2
    assert outcome.error == "unreadable reply after 2 attempt(s): no `verdict`"
    assert outcome.raw == '{"other": 1}'


def test_a_failed_call_propagates(server: StandinServer) -> None:
    server.script(Reply(status=400, message="bad request"))
    with pytest.raises(ModelCallError):
        asyncio.run(run(lambda m: decompose(m, "Show 1 = 1."))(model_for(server)))


def test_decomposition_and_alignment(server: StandinServer) -> None:
    decomposition = {"data_type": ["x: real"], "conditions": "x > 0", "proof_goal": "x^2 > 0"}
    server.script(
        Reply(texts=[json.dumps(decomposition)]),
        Reply(texts=['{"aligned": "no", "problems": ["x > 0 is missing"], "explanation": "weak"}']),
    )

    async def both(model):
        d = await decompose(model, "For positive x show x^2 > 0.", None)
        a, hashes = await judge_alignment(
            model,
            informal="For positive x show x^2 > 0.",
            solution=None,
            decomposition=d.value,
            code="Theorem t : forall x : R, x ^ 2 > 0.",
            assistant="Coq",
            fence="coq",
        )
        return d, a, hashes

    d, a, hashes = asyncio.run(run(both)(model_for(server)))
    assert d.value == Decomposition(data_type="x: real", conditions=["x > 0"], proof_goal="x^2 > 0")
    assert not a.aligned and a.error is None and "x > 0 is missing" in a.explanation
    assert set(hashes) >= {"align", "fix_json"}
    judged = server.requests[-1].body["messages"][-1]["content"]
    assert "- conditions: x > 0" in judged and "Theorem t" in judged


def _cand(i: int, code: str, compiled: bool, aligned: bool | None = None) -> Candidate:
    return Candidate(
        id=f"p/m/{i}",
        problem_id="p",
        model="openai:m@http://h/v1",
        sample=i,
        language=Language.coq,
        rounds=[CompileRound(round=1, code=code, compiled=compiled)],
        alignment=None if aligned is None else Alignment(aligned=aligned),
    )


CANDS = [
    _cand(0, "Theorem a : 1 = 1.", True, False),
    _cand(1, "Theorem  a :\n 1 = 1.", True, False),  # the same statement, spaced differently
    _cand(2, "Theorem b : 2 = 2.", True, True),
    _cand(3, "", False),
    _cand(4, "Theorem c : 3 = .", False),
]
PROBLEM = Problem(id="p", informal="Show something.")


def test_identical_statements_are_judged_once() -> None:
    groups, empty = group_candidates(CANDS)
    assert [[c.sample for c in g.members] for g in groups] == [[0, 1], [2], [4]]
    assert [g.key for g in groups] == ["C1", "C2", "C3"] and [c.sample for c in empty] == [3]


def test_ranking_follows_the_judge_and_spreads_over_duplicates(server: StandinServer) -> None:
    reply = {
        "ranking": [
            {"candidate": "C2", "rank": 1, "verdict": "faithful"},
            {"candidate": "C9", "rank": 2, "verdict": "no such candidate"},
            {"candidate": "C1", "rank": "2", "verdict": "C2 has the right goal"},
        ],
        "summary": "start from C2",
    }
    server.script(Reply(texts=[json.dumps(reply)]))
    summary = asyncio.run(
        run(
            lambda m: rank_candidates(
                m, PROBLEM, CANDS, decomposition=None, assistant="Coq", fence="coq"
            )
        )(model_for(server))
    )
    ranks = {r.candidate_id: (r.rank, r.verdict) for r in summary.ranking}
    assert ranks == {
        "p/m/2": (1, "faithful"),
        "p/m/0": (2, "C2 has the right goal"),
        "p/m/1": (2, "C2 has the right goal"),
        "p/m/4": (3, NOT_RANKED),
        "p/m/3": (4, NO_CODE),
    }
    assert summary.keys == {"C2": ["p/m/2"], "C1": ["p/m/0", "p/m/1"], "C3": ["p/m/4"]}
    assert summary.text == "start from C2" and summary.error is None
    shown = server.requests[-1].body["messages"][-1]["content"]
    assert "Candidate C3 (from openai:m sample 4; does not compile)" in shown
    assert "http://h" not in shown


def test_unreadable_ranking_falls_back_to_what_is_known(server: StandinServer) -> None:
    server.responder = lambda body: ["I like the second one best."]
    summary = asyncio.run(
        run(
            lambda m: rank_candidates(
                m, PROBLEM, CANDS, decomposition=None, assistant="Coq", fence="coq", retries=1
            )
        )(model_for(server))
    )
    assert summary.error and "unreadable" in summary.error and server.count() == 2
    order = [(r.candidate_id, r.rank) for r in summary.ranking]
    assert order == [("p/m/2", 1), ("p/m/0", 2), ("p/m/1", 2), ("p/m/4", 3), ("p/m/3", 4)]


def test_nothing_to_rank_costs_no_call(server: StandinServer) -> None:
    summary = asyncio.run(
        run(
            lambda m: rank_candidates(
                m, PROBLEM, [CANDS[3]], decomposition=None, assistant="Coq", fence="coq"
            )
        )(model_for(server))
    )
    assert server.count() == 0 and summary.ranking[0].verdict == NO_CODE


def test_the_judge_tells_two_endpoints_of_one_model_name_apart(server: StandinServer) -> None:
    one, two = (
        c.model_copy(update={"id": f"p/{url}/0", "model": f"openai:m@{url}", "sample": 0})
        for c, url in ((CANDS[0], "http://a:1/v1"), (CANDS[2], "http://b:1/v1"))
    )
    server.script(Reply(texts=['{"ranking": [{"candidate": "C1", "rank": 1}]}']))
    asyncio.run(
        run(
            lambda m: rank_candidates(
                m, PROBLEM, [one, two], decomposition=None, assistant="Coq", fence="coq"
            )
        )(model_for(server))
    )
    shown = server.requests[-1].body["messages"][-1]["content"]
    assert "(from openai:m@http://a:1/v1 sample 0;" in shown
    assert "(from openai:m@http://b:1/v1 sample 0;" in shown
