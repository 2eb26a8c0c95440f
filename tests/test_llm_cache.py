"""The SQLite response cache and CachedModel (hits, persistence, threads, coalescing)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from formalbench.core.errors import FormalbenchError
from formalbench.llm import CachedModel, Message, ModelCallError, RetryPolicy, make_model
from formalbench.store.response_cache import ResponseCache, canonical_request, request_key

try:
    from standins.openai_server import CHAT, Reply, StandinServer
except ImportError:  # tests/ became a package
    from tests.standins.openai_server import CHAT, Reply, StandinServer

CHAT_MSGS = [Message(role="user", content="prove 1 + 1 = 2")]
NO_RETRY = RetryPolicy(max_retries=0)


def cached_model(srv: StandinServer, cache: ResponseCache) -> CachedModel:
    return make_model(f"openai:standin-model@{srv.base_url}", cache=cache, retry=NO_RETRY)


def generate(model, **params):
    async def main():
        try:
            return await model.generate(CHAT_MSGS, **params)
        finally:
            await model.aclose()

    return asyncio.run(main())


def test_request_key_is_stable_and_sensitive():
    msgs = [{"role": "user", "content": "x"}]
    base = request_key(canonical_request("openai:m", msgs, temperature=1, stop=()))
    assert base == request_key(canonical_request("openai:m", msgs, temperature=1.0, stop=None))
    assert len(base) == 64
    changed = [
        canonical_request("openai:other", msgs),
        canonical_request("openai:m", [{"role": "system", "content": "x"}]),
        canonical_request("openai:m", msgs, n=2),
        canonical_request("openai:m", msgs, temperature=0.5),
        canonical_request("openai:m", msgs, max_tokens=10),
        canonical_request("openai:m", msgs, stop=["\n"]),
        canonical_request("openai:m", msgs, seed=0),
        canonical_request(None, msgs),
    ]
    assert len({base, *(request_key(r) for r in changed)}) == len(changed) + 1


def test_put_get_first_answer_wins(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    req = canonical_request("s", [{"role": "user", "content": "q"}])
    key = request_key(req)
    assert cache.get(key) is None
    assert cache.put(key, req, [{"text": "first"}]) is True
    assert cache.put(key, req, [{"text": "second"}]) is False
    assert cache.get(key) == [{"text": "first"}]
    assert len(cache) == 1 and cache.specs() == {"s": 1}


def test_concurrent_threads_share_one_cache(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(40):
                key = f"k{i % 25}"  # threads collide on the same keys on purpose
                cache.put(key, {"spec": "s"}, [{"text": f"{t}-{i}"}])
                assert cache.get(key) is not None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) == 25


def test_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "cache.sqlite"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(FormalbenchError, match="cache.sqlite"):
        ResponseCache(bad)


def test_hit_avoids_a_second_http_request(tmp_path):
    with StandinServer() as srv, ResponseCache(tmp_path / "c.sqlite") as cache:
        srv.script(Reply(texts=["fresh answer"], usage=(12, 3)))
        first = generate(cached_model(srv, cache), temperature=0.2, seed=1)
        second = generate(cached_model(srv, cache), temperature=0.2, seed=1)
        assert srv.count(CHAT) == 1
        assert [c.text for c in second] == ["fresh answer"]
        assert not first[0].cached and second[0].cached
        assert second[0].usage == first[0].usage  # the cost as recorded
        generate(cached_model(srv, cache), temperature=0.2, seed=2)  # another sample: a miss
        assert srv.count(CHAT) == 2


def test_cache_persists_across_processes(tmp_path):
    db = tmp_path / "c.sqlite"
    with StandinServer() as srv:
        srv.script(Reply(texts=["recorded once"]))
        with ResponseCache(db) as cache:
            generate(cached_model(srv, cache), seed=3)
        child = f"""
import asyncio
from formalbench.llm import Message, make_model
model = make_model("openai:standin-model@{srv.base_url}", cache={str(db)!r})
out = asyncio.run(model.generate([Message(role="user", content="prove 1 + 1 = 2")], seed=3))
print(out[0].cached, out[0].text)
"""
        result = subprocess.run(
            [sys.executable, "-c", child], capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "True recorded once"
        assert srv.count(CHAT) == 1


def test_identical_requests_in_flight_are_coalesced(tmp_path):
    with StandinServer() as srv, ResponseCache(tmp_path / "c.sqlite") as cache:
        srv.script(Reply(delay=0.2, texts=["only once"]))
        model = cached_model(srv, cache)

        async def main():
            return await asyncio.gather(model.generate(CHAT_MSGS), model.generate(CHAT_MSGS))

        a, b = asyncio.run(main())
        assert srv.count(CHAT) == 1
        assert a[0].text == b[0].text == "only once"
        assert sorted([a[0].cached, b[0].cached]) == [False, True]
        assert (model.hits, model.misses) == (1, 1)


def test_failures_are_not_cached(tmp_path):
    with StandinServer() as srv, ResponseCache(tmp_path / "c.sqlite") as cache:
        srv.script(Reply(status=400, message="bad request"), Reply(texts=["second try"]))
        with pytest.raises(ModelCallError, match="HTTP 400"):
            generate(cached_model(srv, cache))
        assert len(cache) == 0
        assert generate(cached_model(srv, cache))[0].text == "second try"
        assert srv.count(CHAT) == 2 and len(cache) == 1


def test_cache_shares_a_store_connection(tmp_path):
    """The table can live in a run's database (store.db), beside the other stores."""
    from formalbench.store.db import connect

    conn = connect(tmp_path / "run.sqlite")
    cache = ResponseCache(conn)
    cache.put("k", {"spec": "s"}, [{"text": "t"}])
    cache.close()  # not ours to close: the connection stays usable
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"response_cache", "schema_version"} <= tables
    assert ResponseCache(conn).get("k") == [{"text": "t"}]
    assert Path(cache.path).name == "run.sqlite"
