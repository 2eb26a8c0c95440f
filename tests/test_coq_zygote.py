"""The compile zygote (backends/coq_zygote.py): a fork of a coqc with the candidate's
libraries loaded must give what a cold coqc gives (the same `.vo` bytes, messages, exit
code and verdicts, attacks included), no candidate may affect the next one, and no zygote
process may outlive us."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from formalbench.backends import coq_zygote
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_queries import LOCAL_MODULE
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import CheckStatus
from tests.processes import naming
from tests.test_coq_identity_attacks import ATTACKS, GENUINE

pytestmark = pytest.mark.rocq

REALS = "Require Import Reals.\nOpen Scope R_scope.\nFrom Stdlib Require Import Lia Lra.\n"
PROOF = REALS + "Theorem t : forall x : R, 0 < x -> 0 < 2 * x.\nProof. intros; lra. Qed.\n"
FAILED = REALS + "Theorem t : forall x : R, 0 < x -> 0 < 2 * x.\nProof. intros; lia. Qed.\n"


@pytest.fixture(scope="module")
def backends():
    cold, warm = CoqBackend(zygote=False), CoqBackend(zygote=True)
    if not coq_zygote.supported(warm.toolchain):
        pytest.skip("the zygote is written for rocq-9.2")
    yield cold, warm
    # the pool's zygotes are live sandboxed processes: the later tests count none running
    coq_zygote.POOL.close()


def _compiled(backend: CoqBackend, text: str) -> tuple[int | None, str, str, str | None]:
    """(exit code, stdout less -time figures, stderr, sha256 of Candidate.vo or None)."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        out = backend.compile(work, LOCAL_MODULE, text, 60, ["-time"])
        vo = work / "Candidate.vo"
        digest = hashlib.sha256(vo.read_bytes()).hexdigest() if vo.is_file() else None
        stdout = "\n".join(line.split("]")[0] for line in out.stdout.splitlines())
        return out.returncode, stdout, out.stderr, digest


def test_keys() -> None:
    assert coq_zygote.zygote_key(PROOF) == (("", "Reals"), ("Stdlib", "Lia"), ("Stdlib", "Lra"))
    assert coq_zygote.key_args((("", "Reals"), ("Stdlib", "Lia"))) == [
        "-require", "Reals", "-rfrom", "Stdlib", "Lia",
    ]  # fmt: skip
    # cold: no Require; one after a declaration; a header sentence of another kind; a
    # library name that is not a plain identifier
    for text in (
        "Theorem t : True. Proof. exact I. Qed.\n",
        "Require Import Arith.\nDefinition x := 1.\nRequire Import Lia.\n",
        'Add LoadPath "/tmp" as X.\nRequire Import X.\n',
        "Set Universe Polymorphism.\nRequire Import Arith.\n",
        'Require Import "Arith".\n',
        "Require Import -(notations) Arith.\n",
    ):
        assert coq_zygote.zygote_key(text) is None, text


@pytest.mark.parametrize(
    "text",
    [
        PROOF,
        FAILED,
        REALS + "Theorem t : 1 = 1.\nProof.\n",  # pending proof
        REALS + "(* unclosed comment\n",
        REALS + 'Notation "x + y" := (x * y)%R.\nTheorem t : 2 + 3 = 6.\nProof. lra. Qed.\n',
        "Require Import ZArith.\nTime Local Open Scope Z_scope.\n"
        "Theorem t : 0 - 1 < 0.\nProof. exact eq_refl. Qed.\n",
    ],
)
def test_same_library_and_messages_as_cold_coqc(backends, text: str) -> None:
    cold, warm = backends
    assert _compiled(warm, text) == _compiled(cold, text)


def _verdict(verifier: StrictVerifier, original: str, candidate: str) -> tuple:
    v = verifier.verify(original, candidate)
    return (
        v.passed,
        sorted(str(f.reason) for f in v.findings),
        sorted(f.message for f in v.findings),
        sorted(d.message for d in v.diagnostics),
    )


def test_verdicts_equal_cold_on_attacks_and_genuine_proofs(backends) -> None:
    cold, warm = backends
    strict_cold, strict_warm = StrictVerifier(cold), StrictVerifier(warm)
    head = "Require Import Arith.\n"  # every candidate goes through the zygote
    cases = {**ATTACKS, **GENUINE}
    for name, (original, candidate) in sorted(cases.items()):
        if "Require" in candidate and not candidate.startswith("Require"):
            continue
        original, candidate = head + original, head + candidate
        assert coq_zygote.zygote_key(candidate) is not None, name
        expected = _verdict(strict_cold, original, candidate)
        assert _verdict(strict_warm, original, candidate) == expected, name
        assert expected[0] == (name in GENUINE), (name, expected)


def test_a_candidate_cannot_affect_the_next(backends) -> None:
    cold, warm = backends
    probe = REALS + textwrap.dedent("""\
        Check leak.
        Theorem t : 2 + 3 = 6.
        Proof. lra. Qed.
        Print Options.
        """)
    expected = _compiled(cold, probe)
    assert expected[0] != 0 and expected[3] is None  # `leak` is unknown, 2 + 3 = 6 false
    hostile = [
        REALS + 'Global Set Printing All.\nDefinition leak := 1.\nNotation "x + y" := (x * y)%R.\n'
        "Global Unset Guard Checking.\nGlobal Set Universe Polymorphism.\n",
        REALS + "Global Open Scope nat_scope.\nAxiom leak : False.\nTheorem t : False.\n",
        REALS + "Ltac loop := idtac; loop.\nGoal True. loop. Qed.\n",  # runs past its limit
        REALS + "Reset Initial.\nBack 3.\nDefinition leak := 2.\n",
    ]
    _compiled(warm, probe)  # its zygote started
    zygotes = dict(coq_zygote.POOL._zygotes)
    for text in hostile:
        with tempfile.TemporaryDirectory() as folder:
            outcome = warm.compile(Path(folder), LOCAL_MODULE, text, 5, ["-time"])
        if "loop" in text:
            assert outcome.status == CheckStatus.timeout
        served = sum(z.served for z in zygotes.values())
        assert _compiled(warm, probe) == expected
        # the same zygotes served them all, the probe through one of them
        assert coq_zygote.POOL._zygotes == zygotes
        assert sum(z.served for z in zygotes.values()) == served + 1


def _processes(marker: str) -> list[int]:
    """pids whose command line names `marker`."""
    return list(naming(marker))


def test_no_zygote_outlives_a_killed_verifier(backends) -> None:
    script = textwrap.dedent(f"""\
        import sys, time
        from pathlib import Path
        from formalbench.backends.coq import CoqBackend
        from formalbench.backends.coq_queries import LOCAL_MODULE
        b = CoqBackend(zygote=True)
        import tempfile
        with tempfile.TemporaryDirectory() as f:
            b.compile(Path(f), LOCAL_MODULE, {PROOF!r}, 60)
        print("compiled", flush=True)
        with tempfile.TemporaryDirectory() as f:  # a child still running when we die
            b.compile(Path(f), LOCAL_MODULE, {PROOF + "Ltac f := idtac; f. Goal True. f. Qed."!r}, 600)
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "compiled"
    marker = f"formalbench-zygote-{proc.pid}-"
    time.sleep(1.0)
    assert _processes(marker), "the zygote should be running"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while _processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes(marker)


def _replay_served() -> int:
    return sum(
        z.served
        for z in coq_zygote.POOL._zygotes.values()
        if "fb_chk_zygote" in " ".join(map(str, z.proc.args))
    )


def test_replay_zygote_accepts_what_coqchk_accepts_and_defers_the_rest(backends) -> None:
    from formalbench.checking.coq_replay import replay_findings

    cold, warm = backends
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        assert warm.compile(work, LOCAL_MODULE, PROOF, 60).returncode == 0
        before = _replay_served()
        assert replay_findings(warm, work, 60, source=PROOF) == []
        assert replay_findings(cold, work, 60, source=PROOF) == []
        assert _replay_served() == before + 1  # the zygote accepted it
        # a damaged library: the zygote's child refuses it, the cold coqchk's verdict and
        # message stand
        vo = work / "Candidate.vo"
        data = vo.read_bytes()
        vo.write_bytes(data[: len(data) * 2 // 3])
        expected = replay_findings(cold, work, 60, source=PROOF)
        assert [f.reason for f in expected] == ["replay_failed"]
        assert replay_findings(warm, work, 60, source=PROOF) == expected
        assert _replay_served() == before + 2
