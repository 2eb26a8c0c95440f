"""A test per known kernel bug (issue 33): each instance in tests/kernel_bugs/ proves `False`
with no axiom on an affected Coq, as a candidate for the task `Theorem oops : False.`.

On every toolchain (the host's coqc 8.16.1, and where installed the provisioned coq-8.20 and
Rocq 9.2, the latter's tests marked `rocq`): the verifier either refuses the candidate (the kernel of a fixed
version, the kernel comparison and its allow-list, or the coqchk replay), or the verdict names the bug in
`known_unsound` (a version that fixes nothing here marks it). On the versions the instances
were run on, the exact outcome of each is pinned (`ALONE`): which pass `check` without the
replay (what coqc's kernel alone accepts), and from there which the replay catches (the
table's `replay` column) and which nothing here catches (marked). The table the docs show is
`backends/coq_known_bugs.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_known_bugs import KNOWN_BUGS, KernelBug, known_unsound
from formalbench.backends.coq_known_bugs import parse_version as version_of
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason, Verdict
from formalbench.toolchains import provision
from tests.conftest import ROCQ

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

FOLDER = Path(__file__).parent / "kernel_bugs"
TASK = "Theorem oops : False.\nAdmitted.\n"
CASES = [(bug, name) for bug in KNOWN_BUGS for name in bug.tests]
PASS = "pass"
# With the replay off, by Coq version: "pass" (a proof of False accepted by coqc's kernel
# alone, as `check` did before the replay), else the reason it is refused.
ALONE: dict[tuple[int, int, int], dict[str, str]] = {
    (8, 16, 1): {
        "guard_nonstructural": PASS,
        "guard_match_on_match": PASS,
        "guard_ltac_fix": PASS,
        "vm_addmuldiv": PASS,
        "vm_addmuldiv_64": PASS,
        "vm_section_let_cache": PASS,
        "vm_section_let_cache_nat": PASS,
        "module_primitive_field": PASS,
        "module_functor_strengthening": PASS,
        "module_letin_constructor": PASS,
        # 8.16's kernel lists `sUnit` (an SProp inductive) among the assumptions as
        # relying on definitional UIP: the allow-list refuses that bypass by name
        "conversion_sprop_letin": Reason.disallowed_axiom.value,
    },
    (8, 20, 1): {  # Debian's coq 8.20.1 (the coq-8.20 toolchain): the VM and primitive bugs fixed
        "guard_nonstructural": PASS,
        "guard_match_on_match": PASS,
        "guard_ltac_fix": PASS,
        "vm_addmuldiv": Reason.compile_error.value,
        "vm_addmuldiv_64": Reason.compile_error.value,
        "vm_section_let_cache": Reason.compile_error.value,
        "vm_section_let_cache_nat": Reason.compile_error.value,
        "module_primitive_field": Reason.compile_error.value,
        "module_functor_strengthening": PASS,
        "module_letin_constructor": PASS,
        "conversion_sprop_letin": PASS,
    },
    (9, 2, 0): {  # Debian's coq 9.2.0 (the rocq-9.2 toolchain): the kernel fixed the rest
        "guard_nonstructural": Reason.compile_error.value,
        "guard_match_on_match": Reason.compile_error.value,
        "guard_ltac_fix": PASS,
        "vm_addmuldiv": Reason.compile_error.value,
        "vm_addmuldiv_64": Reason.compile_error.value,
        "vm_section_let_cache": Reason.compile_error.value,
        "vm_section_let_cache_nat": Reason.compile_error.value,
        "module_primitive_field": Reason.compile_error.value,
        "module_functor_strengthening": Reason.compile_error.value,
        "module_letin_constructor": PASS,
        "conversion_sprop_letin": PASS,
    },
}


COQ_8_20 = "coq-8.20"  # the other provisioned toolchain, where installed (never required)
_NO_8_20 = pytest.mark.skipif(provision.record_of(COQ_8_20) is None, reason=f"{COQ_8_20} absent")


@pytest.fixture(
    scope="module",
    params=[
        "host",
        pytest.param(COQ_8_20, marks=_NO_8_20),
        pytest.param(ROCQ, marks=pytest.mark.rocq),
    ],
)
def backend(request: pytest.FixtureRequest) -> CoqBackend:
    return CoqBackend(timeout=120, toolchain=request.param)


def _verdict(backend: CoqBackend, name: str, replay: bool = True) -> Verdict:
    candidate = (FOLDER / f"{name}.v").read_text(encoding="utf-8")
    verifier = StrictVerifier(backend, VerifierPolicy(replay=replay))
    return verifier.verify(TASK, candidate)


def test_every_listed_bug_has_an_instance() -> None:
    assert {name for _, name in CASES} == {p.stem for p in FOLDER.glob("*.v")}
    for version, outcomes in ALONE.items():
        assert set(outcomes) == {name for _, name in CASES}
        # the table's "our instance proves False on" is what coqc did here (a compile)
        for bug in KNOWN_BUGS:
            compiled = outcomes[bug.test] != Reason.compile_error.value
            assert compiled == (".".join(map(str, version)) in bug.reproduced), bug.id


@pytest.mark.parametrize(("bug", "name"), CASES, ids=[name for _, name in CASES])
def test_refused_or_marked(backend: CoqBackend, bug: KernelBug, name: str) -> None:
    """Any Coq: never a silent pass. A pass names the bug, and only on a version the
    table says is affected; a bug the table says coqchk catches never passes."""
    verdict = _verdict(backend, name)
    version = backend.toolchain.version()
    assert verdict.known_unsound == known_unsound(version)
    if verdict.passed:
        assert bug.id in verdict.known_unsound, (version, verdict.findings)
        assert bug.replay != "caught", "the replay should have refused it"


@pytest.mark.parametrize(("bug", "name"), CASES, ids=[name for _, name in CASES])
def test_pinned_outcome(backend: CoqBackend, bug: KernelBug, name: str) -> None:
    """8.16.1, 8.20.1, 9.2.0: what passes without the replay, and what the replay then does."""
    outcomes = ALONE.get(version_of(backend.toolchain.version()) or (0, 0, 0))
    if outcomes is None:
        pytest.skip(f"outcomes pinned on {sorted(ALONE)} only")
    alone = _verdict(backend, name, replay=False)
    if outcomes[name] == PASS:
        assert alone.passed, alone.findings
    else:
        assert not alone.passed and alone.reasons == [Reason(outcomes[name])], alone.findings
    verdict = _verdict(backend, name)
    if bug.replay in ("caught", "partial") and alone.passed:
        assert not verdict.passed
        assert verdict.reasons == [Reason.replay_failed], verdict.findings
        assert "coqchk" in verdict.findings[0].message
    elif alone.passed:  # nothing here catches it: the pass carries the bug's id
        assert verdict.passed and bug.id in verdict.known_unsound
    else:
        assert verdict.reasons == alone.reasons
