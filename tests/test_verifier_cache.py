"""The verdict cache in use: an identical candidate is checked by the assistant once (real coqc)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import CheckResult, Language, Reason, Task
from formalbench.llm.replay import ScriptedModel
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig
from formalbench.store.verdict_cache import VerdictCache

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

ORIGINAL = "Theorem two : 1 + 1 = 2.\nProof.\nAdmitted.\n"
GOOD = "Theorem two : 1 + 1 = 2.\nProof.\nreflexivity.\nQed.\n"
BAD = "Theorem two : 1 + 1 = 2.\nProof.\nexact I.\nQed.\n"


class CountingCoq(CoqBackend):
    """The real Coq backend, counting how often coqc is asked."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.calls = 0

    def check(
        self,
        source: str,
        *,
        targets: Sequence[str] = (),
        timeout: float | None = None,
        **where: object,
    ) -> CheckResult:
        self.calls += 1
        return super().check(source, targets=targets, timeout=timeout, **where)  # type: ignore[arg-type]


def test_same_candidate_is_checked_once_and_the_verdict_is_the_same(tmp_path: Path) -> None:
    with CountingCoq(workers=1, timeout=30) as coq, VerdictCache(tmp_path / "v.sqlite") as cache:
        verifier = StrictVerifier(coq, cache=cache)
        first = verifier.verify(ORIGINAL, GOOD)
        again = verifier.verify(ORIGINAL, GOOD)
        wrong = verifier.verify(ORIGINAL, BAD)
        assert first.passed and again == first
        assert not wrong.passed and Reason.compile_error in wrong.reasons
        assert coq.calls == 2
        # another policy is another key: the cached verdict does not answer for it
        strict = StrictVerifier(coq, cache=cache, compile_always=True)
        strict.verify(ORIGINAL, GOOD)
        assert coq.calls == 3


def test_a_timeout_is_not_remembered(tmp_path: Path) -> None:
    looping = (
        "Require Import PArith.\n"
        "Definition x := Eval vm_compute in Pos.iter negb true 1000000000000%positive.\n" + GOOD
    )
    with CountingCoq(workers=1, timeout=30) as coq, VerdictCache(tmp_path / "v.sqlite") as cache:
        verifier = StrictVerifier(coq, cache=cache)
        for _ in range(2):
            verdict = verifier.verify(ORIGINAL, looping, timeout=1.0)
            assert Reason.timeout in verdict.reasons
        assert coq.calls == 2


def test_a_run_checks_a_proof_repeated_by_every_sample_once(tmp_path: Path) -> None:
    task = Task(id="two", language=Language.coq, formal=ORIGINAL)
    data = tmp_path / "d.jsonl"
    data.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    model = ScriptedModel(lambda call: "```coq\nProof. reflexivity. Qed.\n```", spec="scripted")
    with CountingCoq(workers=1, timeout=30) as coq:
        config = EvalConfig(dataset=str(data), solver="whole", samples=4)
        result = run_evaluation(config, tmp_path / "run", backend=coq, model=model)
    assert result.new_attempts == 4
    assert coq.calls == 1
    assert (tmp_path / "run" / "verdicts.sqlite").is_file()
