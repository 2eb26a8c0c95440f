"""Throughput and latency of `formalbench serve` against cold `coqc`, at the same concurrency.

Candidates: the shipped miniF2F-Coq example tasks (`example-coq`), each task's first proof the
tactic portfolio found (`metadata.portfolio.solved_by`, recorded from a real portfolio run)
and its first failed attempt (a tried tactic that did not solve it): a mix of genuine proofs
and failures, as a training loop sends them. Modes, each over every candidate with
`--concurrency` clients sending one item per request:

- `coqc`: the candidate file compiled by a cold `coqc` (the baseline);
- `compile`: `/verify` without a task (Kimina's compile-only answer);
- `strict`: `/verify` with the task's `task_id` (a fresh cache: every verdict computed);
- `strict-warm`: the same requests with `disable_cache`: every verdict computed again, each
  task's own build and dump already done (a training loop's steady state), `--rounds` passes
  reported as one figure;
- `strict-cached`: the same requests with the cache on (what a repeated sample costs).

With `--ray N`, the service is `serve --ray` on a local Ray cluster of N nodes of one CPU
each (`ray.cluster_utils.Cluster`, started here), N replicas of one worker: the same modes
through Ray Serve's proxy (on one machine this measures the proxy's cost, not a scale-out).

Prints checks per second and p50/p95/p99 latency per mode; with `--compare-check`, also runs
`formalbench check --json` on every candidate and counts the verdicts that differ from the
service's (passed, reasons, finding reasons, axioms). Figures measured on a shared machine
are "under load", not final.

    python bench/bench_serve.py --concurrency 2 [--limit 6] [--rounds 3] [--compare-check]
        [--ray 2] [--toolchain rocq-9.2 [--zygote]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from formalbench.service.client import VerifierClient  # noqa: E402
from tests.serve_helpers import KEY, SRC, Server, running  # noqa: E402

EXAMPLES = ROOT / "src/formalbench/datasets/examples/example-coq.jsonl"


def candidates(limit: int | None) -> list[tuple[str, str, str]]:
    """(name, original, candidate) triples: a solved proof and a failed attempt per task."""
    out = []
    for line in EXAMPLES.read_text().splitlines()[:limit]:
        task = json.loads(line)
        original = task["header"] + task["formal"]
        portfolio = task["metadata"].get("portfolio", {})
        solved = portfolio.get("solved_by", [])
        failed = [t for t in portfolio.get("tried", []) if t not in solved][:1]
        for tactic, tag in [*[(t, "solved") for t in solved[:1]], *[(t, "failed") for t in failed]]:
            at = original.rindex("Admitted.")
            text = original[:at] + f"{tactic}.\nQed." + original[at + len("Admitted.") :]
            out.append((f"{task['id']}:{tag}", original, text))
    return out


def percentiles(latencies: list[float]) -> str:
    if len(latencies) < 2:
        return f"p50 {latencies[0]:.2f} s" if latencies else "-"
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    return f"p50 {q[49]:.2f} s  p95 {q[94]:.2f} s  p99 {q[98]:.2f} s"


def report(mode: str, wall: float, latencies: list[float]) -> float:
    rate = len(latencies) / wall
    print(
        f"{mode:14s} {len(latencies):3d} checks in {wall:6.2f} s: {rate:5.2f}/s  {percentiles(latencies)}"
    )
    return rate


def cold_coqc(items: list[tuple[str, str, str]], concurrency: int) -> tuple[float, list[float]]:
    coqc = shutil.which("coqc") or "coqc"
    chain = None
    if os.environ["FORMALBENCH_TOOLCHAIN"] != "host":
        from formalbench.toolchains.toolchain import resolve

        chain = resolve()

    def one(text: str) -> float:
        with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
            path = Path(folder) / "Candidate.v"
            path.write_text(text)
            t0 = time.monotonic()
            if chain is not None:  # its coqc in its root through bwrap, as the service runs it
                chain.run([chain.program("coqc"), path.name], cwd=folder, timeout=600)
                return time.monotonic() - t0
            # in a session of its own, as formalbench starts every checker process: under
            # Linux's autogroup scheduling a process that shares the bench's session gets a
            # share of the CPU with it, and on a loaded machine ran twice as slow
            subprocess.run(
                [coqc, path.name],
                cwd=folder,
                capture_output=True,
                timeout=600,
                start_new_session=True,
            )
            return time.monotonic() - t0

    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        latencies = list(pool.map(one, [c for _, _, c in items]))
    return time.monotonic() - t0, latencies


async def through_service(
    url: str, items: list[dict[str, Any]], concurrency: int, disable_cache: bool
) -> tuple[float, list[float], list[dict[str, Any]]]:
    gate = asyncio.Semaphore(concurrency)
    async with VerifierClient(url, api_key=KEY, batch_size=1, concurrency=concurrency) as client:

        async def one(item: dict[str, Any]) -> tuple[float, dict[str, Any]]:
            async with gate:
                t0 = time.monotonic()
                answer = (await client.verify([item], disable_cache=disable_cache))[0]
                return time.monotonic() - t0, answer

        t0 = time.monotonic()
        done = await asyncio.gather(*(one(i) for i in items))
        return time.monotonic() - t0, [d[0] for d in done], [d[1] for d in done]


def check_cli(original: str, candidate: str, extra: list[str]) -> dict[str, Any] | None:
    """`formalbench check --json`'s verdict; None when it printed none (it failed)."""
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        Path(folder, "o.v").write_text(original)
        Path(folder, "c.v").write_text(candidate)
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "formalbench",
                "check",
                "c.v",
                "--against",
                "o.v",
                "--json",
                *extra,
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            timeout=900,
        )
    try:
        return dict(json.loads(out.stdout))
    except ValueError:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  `formalbench check` printed no verdict: {last}")
        return None


def passed(answers: list[dict[str, Any]]) -> str:
    """How many passed, and the first answer that carries no verdict (an error), if any."""
    errors = [a for a in answers if "verdict" not in a]
    count = sum(bool(a["verdict"]["passed"]) for a in answers if "verdict" in a)
    return f"{count}" + (f"; {len(errors)} errors, first: {errors[0]['error']}" if errors else "")


def same(a: dict[str, Any] | None, answer: dict[str, Any]) -> bool:
    """Whether the service answered as `check` did (both failing to give a verdict counts)."""
    b = answer.get("verdict")
    if a is None or b is None:
        return a is None and b is None
    keys = ("passed", "reasons", "axioms")
    findings = [[f["reason"] for f in v["findings"]] for v in (a, b)]
    return all(a[k] == b[k] for k in keys) and findings[0] == findings[1]


SLOW_TASK = "Lemma slow : True.\nProof.\nAdmitted.\n"
SLOW = "Lemma slow : True.\nProof. do 2000000000 idtac. exact I. Qed.\n"  # minutes: past any item limit


def load_mix(items: list[tuple[str, str, str]]) -> list[tuple[str, dict[str, Any], str]]:
    """(kind, item, expected) for the load test: valid, invalid, hostile, slow and huge."""
    from tests.test_coq_identity_attacks import ATTACKS

    solved = [(o, c) for n, o, c in items if n.endswith(":solved")]
    failed = [(o, c) for n, o, c in items if n.endswith(":failed")]
    mix: list[tuple[str, dict[str, Any], str]] = []
    mix += [("valid", {"proof": c, "original": o}, "pass") for o, c in solved]
    mix += [("invalid", {"proof": c, "original": o}, "fail") for o, c in failed]
    mix += [("hostile", {"proof": c, "original": o}, "fail") for o, c in ATTACKS.values()]
    mix.append(
        ("hostile", {"proof": 'Redirect "/tmp/x" Check nat.', "original": SLOW_TASK}, "fail")
    )
    mix.append(("slow", {"proof": SLOW, "original": SLOW_TASK}, "fail"))
    mix.append(("huge", {"proof": "(*" + "x" * (17 << 20) + "*)"}, "413"))
    return mix


async def load_test(
    url: str, mix: list[tuple[str, dict[str, Any], str]], n: int, clients: int
) -> None:
    """`n` requests from `clients` concurrent clients, one item each, drawn in turn from `mix`:
    every answer's id and outcome checked, 429s (and Ray Serve's proxy's 503 when its queue
    is full) retried after `Retry-After`, the RSS of every process this bench started (the
    service's tree; with --ray also the cluster's) sampled."""
    import psutil

    gate = asyncio.Semaphore(clients)
    seen: dict[str, int] = {}
    wrong: list[str] = []
    busy = 0
    peak = 0

    async def sample() -> None:
        nonlocal peak
        while True:
            procs = psutil.Process().children(recursive=True)
            rss = 0
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    rss += p.memory_info().rss
            peak = max(peak, rss)
            await asyncio.sleep(0.5)

    async def one(http: httpx.AsyncClient, i: int) -> None:
        nonlocal busy
        kind, item, expected = mix[i % len(mix)]
        rid = f"{kind}-{i}"
        body = {"codes": [{"custom_id": rid, **item}], "timeout": 3 if kind == "slow" else 120}
        async with gate:
            while True:
                r = await http.post(url + "/verify", json=body)
                if r.status_code not in (429, 503):
                    break
                busy += 1
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
        if expected == "413":
            seen[rid] = seen.get(rid, 0) + 1
            if r.status_code != 413:
                wrong.append(f"{rid}: {r.status_code}")
            return
        results = r.json()["results"] if r.status_code == 200 else []
        for res in results:
            seen[res["custom_id"]] = seen.get(res["custom_id"], 0) + 1
        if r.status_code != 200 or [x["custom_id"] for x in results] != [rid]:
            wrong.append(f"{rid}: {r.status_code} {r.text[:100]}")
            return
        passed = bool((results[0].get("verdict") or {}).get("passed"))
        if passed != (expected == "pass"):
            wrong.append(f"{rid}: passed={passed} error={results[0].get('error')}")

    import httpx

    sampler = asyncio.ensure_future(sample())
    t0 = time.monotonic()
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=900) as http:
        await asyncio.gather(*(one(http, i) for i in range(n)))
    wall = time.monotonic() - t0
    sampler.cancel()
    lost = n - len(seen)
    dup = sum(1 for c in seen.values() if c > 1)
    internal = [w for w in wrong if "internal_error" in w]
    others = [w for w in wrong if w not in internal]
    print(
        f"load: {n} requests, {clients} clients, {wall:.1f} s; lost {lost}, duplicated {dup}, "
        f"wrong {len(others)} {others[:3]}, internal errors {len(internal)} {internal[:1]}; "
        f"429s retried {busy}; peak RSS {peak / 2**20:.0f} MiB"
    )


@contextlib.contextmanager
def running_on_ray(tmp: Path, nodes: int, *args: str) -> Iterator[Server]:
    """`serve --ray` on a local cluster of `nodes` one-CPU nodes, `nodes` replicas; stopped
    with SIGTERM (it undeploys), then the cluster is shut down."""
    import re
    import signal
    import socket

    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    proc = None
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = dict(os.environ, PYTHONPATH=str(SRC), FORMALBENCH_SERVE_API_KEY=KEY)
        log = tmp / "serve-ray.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "formalbench", "serve", "--ray", cluster.address]
                + ["--port", str(port), "--replicas", str(nodes), "--workers", "1", *args],
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                text=True,
            )
        assert proc.stdout is not None
        found = re.search(r"at (http://127\.0\.0\.1:\d+)", proc.stdout.readline())
        assert found, log.read_text()
        yield Server(proc, found.group(1), log)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="tasks (two candidates each)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes of the strict-warm mode (one figure)"
    )
    parser.add_argument("--compare-check", action="store_true")
    parser.add_argument("--no-replay", action="store_true", help="serve and check without coqchk")
    parser.add_argument("--load", type=int, default=0, help="then a load test of N requests")
    parser.add_argument(
        "--clients", type=int, default=64, help="concurrent clients of the load test"
    )
    parser.add_argument(
        "--ray", type=int, default=0, help="serve --ray on a local cluster of N one-CPU nodes"
    )
    parser.add_argument(
        "--toolchain", default="host", help="the Coq of the service and of the baseline"
    )
    parser.add_argument(
        "--zygote", action="store_true", help="the service compiles through zygotes (rocq-9.2)"
    )
    args = parser.parse_args()
    os.environ["FORMALBENCH_TOOLCHAIN"] = args.toolchain  # the same coqc as the baseline
    env = {"FORMALBENCH_TOOLCHAIN": args.toolchain}
    if args.zygote:
        env["FORMALBENCH_COQ_ZYGOTE"] = "1"
        os.environ["FORMALBENCH_COQ_ZYGOTE"] = "1"  # --ray's driver passes its environment on
    items = candidates(args.limit)
    print(f"{len(items)} candidates, concurrency {args.concurrency}, load {os.getloadavg()[0]:.1f}")
    wall, lat = cold_coqc(items, args.concurrency)
    base = report("coqc", wall, lat)
    extra = ["--no-replay"] if args.no_replay else []  # serve's and check's
    zygote = "--zygote" if args.zygote else "--no-zygote"  # serve's only; its default is on
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-serve-")))
        if args.ray:
            print(f"serve --ray: a local cluster of {args.ray} one-CPU nodes, one replica each")
            service = running_on_ray(tmp, args.ray, "--queue", "32", zygote, *extra)
        else:
            service = running(
                tmp,
                "--workers",
                str(args.concurrency),
                "--queue",
                "32",
                zygote,
                *extra,
                extra_env=env,
            )
        server = stack.enter_context(service)

        async def register() -> dict[str, str]:
            async with VerifierClient(server.url, api_key=KEY) as client:
                originals = sorted({o for _, o, _ in items})
                return {o: await client.register(o) for o in originals}

        ids = asyncio.run(register())
        plain = [{"custom_id": n, "proof": c} for n, _, c in items]
        strict = [{"custom_id": n, "proof": c, "task_id": ids[o]} for n, o, c in items]
        wall, lat, _ = asyncio.run(through_service(server.url, plain, args.concurrency, True))
        rate = report("compile", wall, lat)
        print(f"{'':14s} {rate / base:.2f}x cold coqc")
        if args.zygote:  # the first pass built and started the zygotes: now warm
            wall, lat, _ = asyncio.run(through_service(server.url, plain, args.concurrency, True))
            rate = report("compile-warm", wall, lat)
            print(f"{'':14s} {rate / base:.2f}x cold coqc")
        # cache on, but empty (a fresh in-memory store): every verdict computed, then kept
        wall, lat, answers = asyncio.run(
            through_service(server.url, strict, args.concurrency, False)
        )
        rate = report("strict", wall, lat)
        print(f"{'':14s} {rate / base:.2f}x cold coqc; passed {passed(answers)}")
        # again without the cache: every verdict computed, each task already built (the
        # steady state of a training loop, whose samples differ but whose tasks repeat);
        # --rounds passes, reported together (one pass of 18 checks lasts about a second)
        wall, lat = 0.0, []
        for _ in range(args.rounds):
            took, more, _ = asyncio.run(through_service(server.url, strict, args.concurrency, True))
            wall, lat = wall + took, lat + more
        rate = report("strict-warm", wall, lat)
        print(f"{'':14s} {rate / base:.2f}x cold coqc ({args.rounds} passes)")
        wall, lat, _ = asyncio.run(through_service(server.url, strict, args.concurrency, False))
        rate = report("strict-cached", wall, lat)
        print(f"{'':14s} {rate / base:.2f}x cold coqc")
        if args.load:
            mix = load_mix(items)
            asyncio.run(load_test(server.url, mix, args.load, args.clients))
    wall, lat = cold_coqc(items, args.concurrency)  # again: the load drifts on a shared machine
    report("coqc (again)", wall, lat)
    if args.compare_check:
        differ = [
            name
            for (name, original, candidate), answer in zip(items, answers, strict=True)
            if not same(check_cli(original, candidate, extra), answer)
        ]
        print(
            f"verdicts differing from `formalbench check --json`: {len(differ)}/{len(items)} {differ}"
        )


if __name__ == "__main__":
    main()
