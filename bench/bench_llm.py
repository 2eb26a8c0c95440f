"""Figures for the model layer: what the cache, the SDK path and the concurrency limit cost.

Run: python bench/bench_llm.py [--calls 200]
Talks to the tests' stand-in OpenAI-compatible server on 127.0.0.1 (real HTTP, real SDK), so
the figures are this machine's overhead, not a provider's latency. Prints one line a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from formalbench.llm import CachedModel, Message, RetryPolicy, make_model  # noqa: E402
from formalbench.store.response_cache import (  # noqa: E402
    ResponseCache,
    canonical_request,
    request_key,
)
from standins.openai_server import Reply, StandinServer  # noqa: E402


def bench_store(tmp: Path, count: int) -> None:
    cache = ResponseCache(tmp / "store.sqlite")
    rows = [{"text": "x" * 400, "usage": {"prompt": 300, "completion": 100}}]
    keys = [
        request_key(canonical_request("s", [{"role": "user", "content": str(i)}]))
        for i in range(count)
    ]
    start = time.perf_counter()
    for k in keys:
        cache.put(k, {"spec": "s"}, rows)
    put = time.perf_counter() - start
    start = time.perf_counter()
    for k in keys:
        cache.get(k)
    get = time.perf_counter() - start
    print(
        f"response cache put: {count / put:8.0f} /s  ({put / count * 1e3:.2f} ms each, one transaction)"
    )
    print(f"response cache get: {count / get:8.0f} /s  ({get / count * 1e6:.0f} us each)")
    cache.close()


async def timed_calls(model, count: int, distinct: bool) -> float:
    start = time.perf_counter()
    await asyncio.gather(
        *(
            model.generate(
                [Message(role="user", content=f"q{i if distinct else 0}")],
                seed=i if distinct else 0,
            )
            for i in range(count)
        )
    )
    return time.perf_counter() - start


def bench_http(tmp: Path, count: int) -> None:
    with StandinServer() as srv:
        url = f"openai:standin-model@{srv.base_url}"
        for limit in (1, 8):
            model = make_model(url, concurrency=limit, retry=RetryPolicy(max_retries=0))
            elapsed = asyncio.run(timed_calls(model, count, distinct=True))
            print(
                f"HTTP, no delay, concurrency {limit}: {count / elapsed:7.0f} calls/s  (max in flight at server {srv.max_concurrent})"
            )
        srv.max_concurrent = 0
        srv.script(*[Reply(delay=0.05) for _ in range(40)])
        model = make_model(url, concurrency=8, retry=RetryPolicy(max_retries=0))
        elapsed = asyncio.run(timed_calls(model, 40, distinct=True))
        print(
            f"HTTP, 50 ms replies, concurrency 8: 40 calls in {elapsed:.2f} s (ideal 0.25 s; max in flight {srv.max_concurrent})"
        )
        cached = CachedModel(make_model(url), ResponseCache(tmp / "hits.sqlite"))
        asyncio.run(timed_calls(cached, 1, distinct=False))  # fill
        before = srv.count()
        elapsed = asyncio.run(timed_calls(cached, count, distinct=False))
        print(
            f"cache hits through CachedModel: {count / elapsed:7.0f} calls/s  (HTTP requests made: {srv.count() - before})"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_store(Path(tmp), args.calls * 5)
        bench_http(Path(tmp), args.calls)


if __name__ == "__main__":
    main()
