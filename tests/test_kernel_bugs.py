"""A test per known kernel bug (issue 33): each instance in tests/kernel_bugs/ proves `False`
with no axiom on an affected Coq, as a candidate for the task `Theorem oops : False.`.

On any Coq (the host's 8.16.1, a provisioned Rocq 9.2): the verifier either refuses the
candidate (the kernel of a fixed version, the identity file, or the coqchk replay), or the
verdict names the bug in `known_unsound` (a version that fixes nothing here marks it). On
8.16.1, where the instances were written, the exact outcome of each is pinned: which pass
`check` without the replay (what coqc's kernel alone accepts), which the replay catches,
and which nothing here catches (marked). The table the docs show is
`backends/coq_known_bugs.py`; its `replay` column must agree with what coqchk does here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_known_bugs import KNOWN_BUGS, KernelBug, known_unsound
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason, Verdict

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

FOLDER = Path(__file__).parent / "kernel_bugs"
TASK = "Theorem oops : False.\nAdmitted.\n"
# 8.16.1, with the replay off: what coqc's kernel alone makes of each instance
# ("pass": a proof of False accepted today; otherwise the reason it is refused)
ALONE_8_16 = {
    "guard_nonstructural": "pass",
    "guard_match_on_match": "pass",
    "guard_ltac_fix": "pass",
    "vm_addmuldiv": "pass",
    "vm_addmuldiv_64": "pass",
    "vm_section_let_cache": "pass",
    "vm_section_let_cache_nat": "pass",
    "module_primitive_field": "pass",
    "module_functor_strengthening": "pass",
    "module_letin_constructor": "pass",
    # `Print Assumptions` names an SProp inductive "relies on definitional UIP": the
    # identity file's strict grammar does not read it, so the verdict is undecided
    "conversion_sprop_letin": Reason.undecided.value,
}


def _coq_version() -> str:
    done = subprocess.run(["coqc", "--print-version"], capture_output=True, text=True)
    return done.stdout.split()[0] if done.stdout.split() else "unknown"


@pytest.fixture(scope="module")
def backend() -> CoqBackend:
    return CoqBackend(timeout=120)


CASES = [(bug, name) for bug in KNOWN_BUGS for name in bug.tests]


def _verdict(backend: CoqBackend, name: str, replay: bool = True) -> Verdict:
    candidate = (FOLDER / f"{name}.v").read_text(encoding="utf-8")
    verifier = StrictVerifier(backend, VerifierPolicy(replay=replay))
    return verifier.verify(TASK, candidate)


def test_every_listed_bug_has_an_instance() -> None:
    assert {name for _, name in CASES} == {p.stem for p in FOLDER.glob("*.v")}
    assert set(ALONE_8_16) == {name for _, name in CASES}


@pytest.mark.parametrize(("bug", "name"), CASES, ids=[name for _, name in CASES])
def test_refused_or_marked(backend: CoqBackend, bug: KernelBug, name: str) -> None:
    """Any Coq: never a silent pass. A pass names the bug, and only on a version the
    table says is affected."""
    verdict = _verdict(backend, name)
    version = backend.version()
    assert verdict.known_unsound == known_unsound(version)
    if verdict.passed:
        assert bug.id in verdict.known_unsound, (version, verdict.findings)
        assert bug.replay != "caught", "the replay should have refused it"


@pytest.mark.skipif(_coq_version() != "8.16.1", reason="outcomes pinned on Coq 8.16.1")
@pytest.mark.parametrize(("bug", "name"), CASES, ids=[name for _, name in CASES])
def test_outcome_on_8_16(backend: CoqBackend, bug: KernelBug, name: str) -> None:
    """8.16.1: what passes without the replay, and what the replay then does."""
    alone = _verdict(backend, name, replay=False)
    if ALONE_8_16[name] == "pass":
        assert alone.passed, alone.findings
    else:
        assert not alone.passed and alone.reasons == [Reason(ALONE_8_16[name])]
    verdict = _verdict(backend, name)
    if bug.replay in ("caught", "partial") and alone.passed:
        assert not verdict.passed
        assert verdict.reasons == [Reason.replay_failed], verdict.findings
        assert "coqchk" in verdict.findings[0].message
    elif alone.passed:  # nothing here catches it: the pass carries the bug's id
        assert verdict.passed and bug.id in verdict.known_unsound
