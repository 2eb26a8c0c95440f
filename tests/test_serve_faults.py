"""`formalbench serve` under pressure, for real: one worker, a queue of two, slow candidates.

A full queue answers 429 with `Retry-After` and our client retries through it; an item over
its timeout is a `timeout` verdict; a request over `--request-timeout` is answered while its
check keeps its queue slot until it really ends; a coqc killed with SIGKILL mid-check gives
that item a clear error, and warm coqtop sessions killed with SIGKILL are replaced: the
service carries on and the next verdicts are right.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import threading
import time
from typing import Any

import httpx
import pytest

from tests.serve_helpers import KEY, Server, running

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

AUTH = {"Authorization": f"Bearer {KEY}"}
SLOW_TASK = "Lemma slow : True.\nProof.\nAdmitted.\n"
SLOW = "Lemma slow : True.\nProof. do 100000000 idtac. exact I. Qed.\n"  # ~20 s of coqc, idle
TASK = "Theorem t : 2 + 3 = 5.\nProof.\nAdmitted.\n"
PROOF = "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n"
REQUEST_TIMEOUT = 6


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    args = ["--workers", "1", "--queue", "2", "--request-timeout", str(REQUEST_TIMEOUT)]
    with running(tmp_path_factory.mktemp("serve"), *args, "--no-replay") as s:
        yield s


def metric(server: Server, name: str) -> float:
    values = httpx.get(server.url + "/metrics?format=json", headers=AUTH).json()
    return float(values[name])


def idle(server: Server, patience: float = 120) -> None:
    end = time.monotonic() + patience
    while metric(server, "queue_length") and time.monotonic() < end:
        time.sleep(0.2)
    assert metric(server, "queue_length") == 0


def in_background(server: Server, body: dict[str, Any]) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []

    def go() -> None:
        box.append(httpx.post(server.url + "/verify", json=body, headers=AUTH, timeout=300))

    thread = threading.Thread(target=go)
    thread.start()
    return thread, box


def test_full_queue_429_then_the_client_retries_through(server: Server) -> None:
    from formalbench.service.client import VerifierClient

    idle(server)
    slow = [{"custom_id": f"slow{i}", "proof": SLOW, "original": SLOW_TASK} for i in range(2)]
    thread, box = in_background(server, {"codes": slow, "timeout": 2, "disable_cache": True})
    end = time.monotonic() + 30
    while metric(server, "queue_length") < 2 and time.monotonic() < end:
        time.sleep(0.05)
    busy = httpx.post(
        server.url + "/verify",
        json={"codes": [{"custom_id": "x", "proof": PROOF, "original": TASK}]},
        headers=AUTH,
    )
    assert busy.status_code == 429, busy.text
    assert busy.headers["retry-after"].isdigit() and int(busy.headers["retry-after"]) >= 1

    async def retry() -> tuple[list[dict[str, Any]], int]:
        async with VerifierClient(server.url, api_key=KEY, retries=30, max_wait=2) as client:
            out = await client.verify([{"custom_id": "x", "proof": PROOF, "original": TASK}])
            return out, client.retried

    results, retried = asyncio.run(retry())
    assert retried >= 1 and results[0]["verdict"]["passed"] is True
    thread.join()
    answers = box[0].json()["results"]
    assert [a["custom_id"] for a in answers] == ["slow0", "slow1"]
    for answer in answers:  # each coqc stopped at the item's 2 s
        assert answer["verdict"]["reasons"] == ["timeout"], answer
        assert answer["error"].startswith("strict verdict: timeout")
    assert metric(server, "rejected_busy") >= 1


def test_request_timeout_answers_and_the_check_keeps_its_slot(server: Server) -> None:
    idle(server)
    t0 = time.monotonic()
    answer = httpx.post(
        server.url + "/verify",
        # the item's own limit (12 s) outlasts the request's (6 s) and bounds the test's cost
        json={"codes": [{"custom_id": "s", "proof": SLOW, "original": SLOW_TASK}], "timeout": 12},
        headers=AUTH,
        timeout=300,
    ).json()["results"][0]
    assert time.monotonic() - t0 < REQUEST_TIMEOUT + 5
    assert answer["error"] == f"timeout: no answer within {REQUEST_TIMEOUT} s"
    assert metric(server, "queue_length") == 1  # the coqc is still running: its slot is held
    idle(server)


def test_sigkill_of_coqc_mid_check_is_one_clear_error(server: Server) -> None:
    idle(server)
    body = {"codes": [{"custom_id": "k", "proof": SLOW, "original": SLOW_TASK}], "timeout": 60}
    thread, box = in_background(server, {**body, "disable_cache": True})
    end = time.monotonic() + 30
    while not (found := server.children("coqc")) and time.monotonic() < end:
        time.sleep(0.05)
    assert found, "no coqc started"
    time.sleep(0.5)
    for proc in found:
        proc.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
    thread.join()
    answer = box[0].json()["results"][0]
    assert answer["verdict"]["passed"] is False
    assert answer["verdict"]["reasons"] == ["backend_crash"], answer
    assert answer["error"].startswith("strict verdict: backend_crash")
    ok = httpx.post(
        server.url + "/verify",
        json={"codes": [{"custom_id": "after", "proof": PROOF, "original": TASK}]},
        headers=AUTH,
        timeout=300,
    ).json()["results"][0]
    assert ok["verdict"]["passed"] is True


def test_warm_sessions_killed_with_sigkill_are_replaced(server: Server) -> None:
    idle(server)

    def verdict(proof: str) -> dict[str, Any]:
        body = {"codes": [{"custom_id": "w", "proof": proof, "original": TASK}]}
        body["disable_cache"] = True  # type: ignore[assignment]
        response = httpx.post(server.url + "/verify", json=body, headers=AUTH, timeout=300)
        return dict(response.json()["results"][0]["verdict"])

    assert verdict(PROOF)["passed"] is True
    sessions = server.children("coqtop")
    assert sessions, "the kernel route keeps a warm coqtop"
    for proc in sessions:
        proc.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
    changed = verdict(PROOF.replace("2 + 3 = 5", "5 = 5"))  # compiles: the dumps decide
    assert changed["passed"] is False and changed["reasons"] == ["statement_changed"], changed
    assert verdict(PROOF)["passed"] is True
    killed = {p.pid for p in sessions}  # type: ignore[attr-defined]
    fresh = {p.pid for p in server.children("coqtop")}  # type: ignore[attr-defined]
    assert fresh and not fresh & killed  # replaced, not reused
    assert httpx.get(server.url + "/health").json()["status"] == "ok"
