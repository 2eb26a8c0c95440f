"""The Ray executor gives each check to an idle actor: a slow check does not hold up the
checks behind it (they used to be handed to the actors in turn, so every second one queued
behind the slow check). Real coqc on a local Ray; the test asserts an order, not a time."""

from __future__ import annotations

import shutil
import threading

import pytest

from formalbench.core.records import CheckStatus, Language

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

    def run(name: str, source: str, target: str) -> None:
        result = backend.check(source, targets=[target], timeout=120)
        assert result.status == CheckStatus.ok, (name, result.detail)
        with lock:
            finished.append(name)

    try:
        slow = threading.Thread(target=run, args=("slow", SLOW, "slow"))
        slow.start()
        # The quick checks go one after another from one caller: each needs the idle actor.
        for i in range(4):
            run(f"quick{i}", QUICK.format(i=i), f"quick{i}")
        slow.join(timeout=300)
    finally:
        backend.close()
    assert finished == ["quick0", "quick1", "quick2", "quick3", "slow"]
