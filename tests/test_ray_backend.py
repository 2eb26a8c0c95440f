"""The Ray executor gives each check to an idle actor: a slow check does not hold up the
checks behind it (they used to be handed to the actors in turn, so every second one queued
behind the slow check). Real coqc on a local Ray; the test asserts an order, not a time."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from formalbench.backends.base import CheckRequest
from formalbench.core.records import CheckResult, CheckStatus, Language
from tests.suite_coq import COMPILE_PROCESSES

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc"),
]

# A few seconds of reduction for coqc (a quadratic loop under cbv), against checks that only
# start coqc: the order below holds with a wide margin on a loaded machine.
SLOW = """Definition f (n : nat) := Nat.iter n (fun x => Nat.iter n negb x) true.
Lemma slow : f 900 = true. Proof. cbv. reflexivity. Qed.
"""
QUICK = "Lemma quick{i} : {i} + 1 = S {i}. Proof. reflexivity. Qed.\n"


def test_a_slow_check_does_not_block_the_checks_behind_it() -> None:
    pytest.importorskip("ray")
    from formalbench.backends.ray_backend import RayBackend

    backend = RayBackend("coq", language=Language.coq, workers=2, timeout=120)
    finished: list[str] = []
    lock = threading.Lock()

    def run(name: str, source: str) -> None:
        result = backend.check(source, timeout=120)
        assert result.status == CheckStatus.ok, (name, result.detail)
        with lock:
            finished.append(name)

    try:
        slow = threading.Thread(target=run, args=("slow", SLOW))
        slow.start()
        # The quick checks go one after another from one caller: each needs the idle actor.
        for i in range(4):
            run(f"quick{i}", QUICK.format(i=i))
        slow.join(timeout=300)
    finally:
        backend.close()
    assert finished == ["quick0", "quick1", "quick2", "quick3", "slow"]


def _coqc_compiling(marker: str) -> list[psutil.Process]:
    """Live compiling Coq processes (`coqc`, Rocq 9's `rocqworker`) whose working folder
    holds a .v file containing `marker`."""
    found = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] in COMPILE_PROCESSES and any(
                marker in p.read_text(errors="replace") for p in Path(proc.cwd()).glob("*.v")
            ):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def test_close_stops_the_checks_in_flight() -> None:
    """What a run does on SIGINT/SIGTERM: close the backend. It used to wait for the pool's
    threads before killing the actors, i.e. for the check in flight to end (here: never)."""
    pytest.importorskip("ray")
    from formalbench.backends.ray_backend import RayBackend

    marker = f"never_ends_{uuid.uuid4().hex}"
    source = f"Lemma {marker} : True.\nProof. do 1000000000 idtac. exact I. Qed.\n"
    backend = RayBackend("coq", language=Language.coq, workers=1, timeout=600)
    results: list[CheckResult] = []
    request = CheckRequest(source=source, timeout=600)
    worker = threading.Thread(target=lambda: results.extend(backend.check_many([request])))
    worker.start()
    deadline = time.monotonic() + 300
    while not _coqc_compiling(marker):  # the check runs on the actor
        assert worker.is_alive() and time.monotonic() < deadline
        time.sleep(0.2)
    closing = threading.Thread(target=backend.close)
    closing.start()
    closing.join(timeout=120)  # a guard: the check itself would run for many minutes
    assert not closing.is_alive(), "close() waited for the check in flight"
    worker.join(timeout=60)
    assert [r.status for r in results] == [CheckStatus.crash]
    deadline = time.monotonic() + 60
    while _coqc_compiling(marker):  # its coqc went with the actor
        assert time.monotonic() < deadline, "coqc outlived the closed backend"
        time.sleep(0.2)
