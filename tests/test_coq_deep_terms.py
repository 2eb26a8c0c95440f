"""A statement with a large `nat` numeral: its kernel term is a chain of `S` thousands deep.

The task's dump is cached as a file (`coq_kernel.TaskCheck`); `json.dumps` of such a dump
exceeded Python's recursion limit and `formalbench check` of the shipped example
`amc12a_2013_p4` (`2^2014` in `R`) ended in a traceback. Written and read again deep
(`coq_kernel_dump_format.dumps_dump`/`loads_dump`), it passes."""

from __future__ import annotations

import shutil

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_kernel_dump_format import dumps_dump, loads_dump
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason

DEEP = 5000


def _chain(depth: int) -> list:
    term: list = ["Construct", "Coq.Init.Datatypes.nat", 0, 1, []]
    for _ in range(depth):
        term = ["App", ["Construct", "Coq.Init.Datatypes.nat", 0, 2, []], [term]]
    return term


def test_a_dump_deeper_than_the_recursion_limit_is_written_and_read_back() -> None:
    data = {"targets": {"t": {"type": _chain(DEEP)}}}
    text = dumps_dump(data)
    assert text.count("App") == DEEP
    back = loads_dump(text)
    assert dumps_dump(back) == text  # (`==` on the objects would recurse as deep)
    term = back["targets"]["t"]["type"]
    for _ in range(DEEP):
        term = term[2][0]
    assert term[0] == "Construct" and term[3] == 1


@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
def test_a_task_with_a_large_numeral_is_checked_and_its_cached_dump_read_again() -> None:
    task = "Theorem big : 2014 + 0 = 2014.\nProof.\nAdmitted.\n"
    first = task.replace("Proof.\nAdmitted.", "Proof. reflexivity. Qed.")
    second = task.replace("Proof.\nAdmitted.", "Proof. simpl. reflexivity. Qed.")
    changed = "Theorem big : 2013 + 0 = 2013.\nProof. reflexivity. Qed.\n"
    with CoqBackend(workers=1, timeout=120) as backend:
        verdict = StrictVerifier(backend, VerifierPolicy()).verify(task, first)
        assert verdict.passed, verdict.findings
        # a new verifier: the task's dump comes from the cached file this time
        again = StrictVerifier(backend, VerifierPolicy())
        verdict = again.verify(task, second)
        assert verdict.passed, verdict.findings
        refused = again.verify(task, changed)
        assert not refused.passed
        assert Reason.statement_changed in refused.reasons, refused.findings
