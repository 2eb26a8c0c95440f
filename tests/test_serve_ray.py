"""`formalbench serve --ray ADDRESS` on a real multi-node Ray cluster in this process
(`ray.cluster_utils.Cluster`: a head and two workers, one CPU each), the real CLI in a
subprocess, the host's coqc behind it.

What must hold: the service answers Kimina's `/verify` and the strict route through Ray
Serve's proxy with the verdicts of `formalbench check --json`; the key applies; the replicas
sit on different nodes, each with warm sessions of its own, and share the registered tasks;
the autoscaler adds a replica under load (on the third node); SIGTERM undeploys and leaves no
replica, Serve actor or checker process behind; an unreachable address is one line, exit 2.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.serve_helpers import KEY, SRC, check_json
from tests.test_coq_identity_attacks import ATTACKS

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed"),
]
pytest.importorskip("ray.serve")

TASK = "Theorem t : 2 + 3 = 5.\nProof.\nAdmitted.\n"
PROOF = "Theorem t : 2 + 3 = 5.\nProof. reflexivity. Qed.\n"
AUTH = {"Authorization": f"Bearer {KEY}"}
# About a second of reduction for coqc: load that keeps both replicas busy.
SLOW = """Definition f (n : nat) := Nat.iter n (fun x => Nat.iter n negb x) true.
Lemma slow{i} : f 700 = true. Proof. cbv. reflexivity. Qed.
"""
SERVE_PARTS = ("ServeReplica:formalbench-serve", "ServeController", "ProxyActor", "ray::Shared")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(*args: str, key: str | None = KEY) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(SRC), FORMALBENCH_TOOLCHAIN="host")
    env.pop("FORMALBENCH_SERVE_API_KEY", None)
    if key is not None:
        env["FORMALBENCH_SERVE_API_KEY"] = key
    return env


def name(p: psutil.Process) -> str:
    """The process's name, or "" once it has ended (a checker listed a moment ago)."""
    with contextlib.suppress(psutil.Error):
        return str(p.name())
    return ""


def cmdline(p: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(p.cmdline())
    return ""


class RayServe:
    """The cluster and the `serve --ray` process on it."""

    def __init__(self, cluster: Any, proc: subprocess.Popen[str], url: str) -> None:
        self.cluster, self.proc, self.url = cluster, proc, url

    def raylets(self) -> list[psutil.Process]:
        mine = psutil.Process(os.getpid()).children(recursive=True)
        return [p for p in mine if name(p) == "raylet"]

    def ray_processes(self) -> list[psutil.Process]:
        """Every process under this cluster's raylets."""
        out = []
        for raylet in self.raylets():
            with contextlib.suppress(psutil.Error):
                out += raylet.children(recursive=True)
        return out

    def replicas(self) -> dict[int, int]:
        """Replica pid -> the pid of the raylet (node) it runs under."""
        found = {}
        for raylet in self.raylets():
            with contextlib.suppress(psutil.Error):
                for p in raylet.children():
                    if "ServeReplica:formalbench-serve" in cmdline(p):
                        found[p.pid] = raylet.pid
        return found

    def sessions(self, replica: int) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            kids = psutil.Process(replica).children(recursive=True)
            return [p for p in kids if name(p) == "coqtop"]
        return []


@pytest.fixture(scope="module")
def ray_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayServe]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    proc = None
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        port = free_port()
        log = tmp_path_factory.mktemp("serve-ray") / "serve.log"
        with open(log, "w") as err:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "formalbench",
                    "serve",
                    "--ray",
                    cluster.address,
                    "--port",
                    str(port),
                    "--replicas",
                    "2",
                    "--max-replicas",
                    "3",
                ],
                stdout=subprocess.PIPE,
                stderr=err,
                env=cli(),
                text=True,
            )
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+) on the head node", line)
        assert found, (line, log.read_text())
        served = RayServe(cluster, proc, found.group(1))
        yield served
        # SIGTERM: the application is deleted, Serve shut down, every checker killed.
        left = [p for p in served.ray_processes() if any(s in cmdline(p) for s in SERVE_PARTS)]
        for replica in served.replicas():
            with contextlib.suppress(psutil.Error):
                left += psutil.Process(replica).children(recursive=True)
        assert any("ServeController" in cmdline(p) for p in left)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0, log.read_text()
        _, alive = psutil.wait_procs(left, timeout=30)
        assert not alive, f"left after the service stopped: {[cmdline(p) for p in alive]}"
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        cluster.shutdown()


def post(served: RayServe, path: str, body: Any, headers: dict[str, str] = AUTH) -> Any:
    answer = httpx.post(served.url + path, json=body, headers=headers, timeout=300)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_replicas_on_two_nodes_answer_like_check(ray_serve: RayServe, tmp_path: Path) -> None:
    replicas = ray_serve.replicas()
    assert len(replicas) == 2 and len(set(replicas.values())) == 2, replicas  # two nodes
    # Kimina's /verify through Ray Serve's proxy: compile-only items, Kimina's shape
    plain = post(
        ray_serve,
        "/verify",
        {
            "codes": [
                {"custom_id": "ok", "proof": PROOF},
                {"custom_id": 7, "code": "Theorem t : 2 + 3 = 6.\nProof. Admitted.\n"},
            ],
            "timeout": 60,
        },
    )["results"]
    assert [r["custom_id"] for r in plain] == ["ok", "7"]
    assert plain[0]["error"] is None and not plain[0]["response"].get("sorries")
    assert plain[1]["response"]["sorries"] and "verdict" not in plain[1]
    # the key applies behind the proxy; /health stays open
    no_key = httpx.post(ray_serve.url + "/verify", json={"codes": []}, timeout=60)
    assert no_key.status_code == 401 and no_key.headers["x-request-id"]
    assert httpx.get(ray_serve.url + "/health", timeout=60).json()["status"] == "ok"
    # the strict route: the verdicts of `formalbench check --json`
    cases = {
        "genuine": (TASK, PROOF),
        "axiom": (TASK, "Axiom h : False.\n" + PROOF),
        "Time Notation": ATTACKS["Time Notation"],
    }
    codes = [
        {"custom_id": name, "proof": candidate, "original": original}
        for name, (original, candidate) in cases.items()
    ]
    results = post(ray_serve, "/verify", {"codes": codes, "disable_cache": True})["results"]
    for result in results:
        original, candidate = cases[result["custom_id"]]
        want, got = check_json(tmp_path, original, candidate), result["verdict"]
        for key in ("passed", "reasons", "targets", "kind", "axioms"):
            assert got[key] == want[key], (result["custom_id"], key, got[key], want[key])
        assert [(f["reason"], f["subject"]) for f in got["findings"]] == [
            (f["reason"], f["subject"]) for f in want["findings"]
        ]
        assert bool(result["error"]) == (not want["passed"])
    assert [r["verdict"]["passed"] for r in results] == [True, False, False]


def test_a_task_registered_once_is_known_to_every_replica(ray_serve: RayServe) -> None:
    task_id = post(ray_serve, "/tasks", {"original": TASK})["task_id"]
    replicas = list(ray_serve.replicas())
    answers: list[dict[str, Any]] = []

    def one(i: int) -> None:
        proof = f"{PROOF}(* {i} *)\n"  # a text of its own: a check, not a cache hit
        code = {"custom_id": i, "proof": proof, "task_id": task_id}
        answers.extend(post(ray_serve, "/verify", {"codes": [code]})["results"])

    # four requests at once: a replica takes only what it can run (one check), so the
    # proxy gives the others to the other replica, which must know the task too (each
    # replica then holds a warm coqtop session of its own for the dumps)
    threads = [threading.Thread(target=one, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(ray_serve.sessions(r) for r in replicas), "a replica got no strict check"
    assert len(answers) == 4 and all(a["error"] is None and a["verdict"]["passed"] for a in answers)
    own = [{p.pid for p in ray_serve.sessions(r)} for r in replicas]
    assert not own[0] & own[1]


def test_the_autoscaler_adds_a_replica_for_a_queue_of_items(ray_serve: RayServe) -> None:
    """One request of eight slow items: one ongoing request, which Serve's own policy (on
    requests) would not scale for, but eight items queued on one worker: a third replica
    starts, on the third node."""
    # each item a few seconds: the batch must outlast the upscale delay on a fast machine
    slower = SLOW.replace("f 700", "f 1400")
    codes = [{"custom_id": i, "proof": slower.format(i=f"batch{i}")} for i in range(8)]
    answers: list[Any] = []
    batch = threading.Thread(
        target=lambda: answers.append(post(ray_serve, "/verify", {"codes": codes}))
    )
    batch.start()
    try:
        # the decision may come just after the batch ends (the replicas' reports lag a
        # few seconds); a replica is given back only after two idle minutes
        deadline = time.monotonic() + 60
        while len(ray_serve.replicas()) < 3:
            assert time.monotonic() < deadline, "no replica was added for the queued items"
            time.sleep(0.5)
    finally:
        batch.join()
    assert len(set(ray_serve.replicas().values())) == 3  # one replica on each node
    results = answers[0]["results"]
    assert [r["custom_id"] for r in results] == [str(i) for i in range(8)]
    assert all(r["error"] is None for r in results)


def test_a_second_service_on_the_cluster_is_refused(ray_serve: RayServe) -> None:
    """Never replace (and at its stop delete) a service another driver runs."""
    done = subprocess.run(
        [sys.executable, "-m", "formalbench", "serve", "--ray", ray_serve.cluster.address]
        + ["--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=180,
        env=cli(),
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "a formalbench service is already deployed" in last, done.stderr
    assert "Traceback" not in done.stderr
    assert len(ray_serve.replicas()) >= 2
    assert httpx.get(ray_serve.url + "/health", timeout=60).json()["status"] == "ok"


def test_a_replica_killed_mid_check_costs_its_request_only(ray_serve: RayServe) -> None:
    """SIGKILL of a replica while it checks: that request gets Ray's 500, the one on the
    other replica its answer, later requests are answered, and Serve starts a new replica."""
    before = ray_serve.replicas()
    slow = SLOW.replace("f 700", "f 1400")
    out: dict[int, httpx.Response] = {}

    def one(i: int) -> None:
        code = {"custom_id": i, "proof": slow.format(i=f"killed{i}")}
        out[i] = httpx.post(
            ray_serve.url + "/verify", json={"codes": [code]}, headers=AUTH, timeout=300
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(before))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    victim = None
    while victim is None:  # a replica with a coqc running (Rocq 9 calls it rocqworker)
        assert time.monotonic() < deadline, "no replica started a check"
        for pid in before:
            with contextlib.suppress(psutil.Error):
                kids = psutil.Process(pid).children(recursive=True)
                if any(name(k) in ("coqc", "rocqworker") for k in kids):
                    victim = pid
                    break
        time.sleep(0.1)
    os.kill(victim, signal.SIGKILL)
    for t in threads:
        t.join()
    codes = sorted(r.status_code for r in out.values())
    assert codes == [200] * (len(before) - 1) + [500], [
        (r.status_code, r.text[:100]) for r in out.values()
    ]
    after = post(ray_serve, "/verify", {"codes": [{"custom_id": "after", "proof": PROOF}]})
    assert after["results"][0]["error"] is None
    deadline = time.monotonic() + 90
    while len(ray_serve.replicas()) < 2 or victim in ray_serve.replicas():  # --replicas 2
        assert time.monotonic() < deadline, "Serve did not replace the killed replica"
        time.sleep(1)


def test_an_unreachable_address_is_one_line_and_exit_2() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    done = subprocess.run(
        [sys.executable, "-m", "formalbench", "serve", "--ray", address, "--port", "8123"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli(),
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"formalbench: error: --ray {address}: cannot connect")


@pytest.mark.parametrize(
    ("args", "key", "says"),
    [
        (("--ray", "127.0.0.1:1", "--host", "0.0.0.0"), None, "--api-key"),
        (("--ray", "127.0.0.1:1", "--port", "0"), KEY, "--port 0"),
        (("--replicas", "2"), KEY, "only with --ray"),
        (("--ray", "ray://127.0.0.1:10001"), KEY, "Ray Client"),
        (("--ray", "127.0.0.1:1", "--backend", "kimina"), KEY, "--backend 'kimina'"),
        (("--ray", "127.0.0.1:1", "--replicas", "3", "--max-replicas", "2"), KEY, "at least"),
        (("--ray", "127.0.0.1:1", "--store", "/proc/no/such/x.sqlite"), KEY, "x.sqlite"),
    ],
)
def test_bad_options_are_one_line_before_any_connection(
    args: tuple[str, ...], key: str | None, says: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "formalbench", "serve", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli(key=key),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
