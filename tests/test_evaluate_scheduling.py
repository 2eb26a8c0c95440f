"""How `eval` feeds the proof assistant: the checks of a model-free solver (the portfolio:
probe, then verification) never leave an assistant slot idle while attempts are pending.

With one attempt in flight per slot, a slot idled each time its attempt was between two
checks (reading the probe, the verifier's text layer, the store commit). The run now keeps
more attempts in flight than there are slots, and the backend's pool still bounds the
checks that run at once."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.core.records import Language, Task
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig
from formalbench.pipelines.run_files import load_summary

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")


class CountingCoq(CoqBackend):
    """The real coqc, counting checks handed to the backend (waiting or running) and running."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        self._counts = threading.Lock()
        self.handed = self.running = 0
        self.max_handed = self.max_running = 0

    def _hand(self, step: int) -> None:
        with self._counts:
            self.handed += step
            self.max_handed = max(self.max_handed, self.handed)

    async def acheck(self, source, *, targets=(), timeout=None, **where):  # noqa: ANN001, ANN201
        self._hand(1)
        try:
            return await super().acheck(source, targets=targets, timeout=timeout, **where)
        finally:
            self._hand(-1)

    async def acheck_abandonable(self, source, abandon, *, timeout=None):  # noqa: ANN001, ANN201
        self._hand(1)  # the portfolio's Coq probes (in chunks) come this way
        try:
            return await super().acheck_abandonable(source, abandon, timeout=timeout)
        finally:
            self._hand(-1)

    def check(self, source, *, targets=(), timeout=None, **where):  # noqa: ANN001, ANN201
        with self._counts:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        try:
            return super().check(source, targets=targets, timeout=timeout, **where)
        finally:
            with self._counts:
                self.running -= 1


def test_a_check_waits_in_line_while_every_slot_is_busy(tmp_path: Path) -> None:
    tasks = [
        Task(
            id=f"t{i}",
            language=Language.coq,
            formal=f"Theorem t{i} : forall n : nat, n + {i} = {i} + n.\nProof.\nAdmitted.\n",
        )
        for i in range(3)
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    backend = CountingCoq(workers=2, timeout=60)
    config = EvalConfig(dataset=str(data), workers=2, timeout=60)
    result = run_evaluation(config, tmp_path / "run", backend=backend)
    assert result.new_attempts == 3
    assert len(load_summary(tmp_path / "run").solved) == 3  # the portfolio closes them all
    assert backend.max_running == 2  # the pool still bounds the coqc processes
    assert backend.max_handed > 2  # and a check already waited for the next free slot
