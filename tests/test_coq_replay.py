"""The coqchk replay (checking/coq_replay.py): after every other check passes, the library
the verifier compiled from the candidate is checked by coqchk of the same Coq.

What is asserted: genuine proofs still pass, with and without a task postulate before the
target (the kernel route compiles the candidate alone: its `Candidate.vo` is what is kept and
replayed); the replay runs exactly once per pass and never on a failure or when turned off; its interface
(a folder holding a verifier-compiled `Candidate.vo`) refuses a library coqc accepts and
coqchk does not, says why in one line when it cannot run (no coqchk, no library, no time),
and passes coqchk only the trusted load path (no `-I`, no folder of the candidate's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking import coq_replay
from formalbench.checking.coq_replay import replay_findings, trusted_load_path
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Reason
from tests.suite_coq import coqc

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

BUGS = Path(__file__).parent / "kernel_bugs"
PLAIN = "Theorem t : forall n : nat, n + 0 = n.\nAdmitted.\n"
PLAIN_OK = "Theorem t : forall n : nat, n + 0 = n.\nProof. induction n; simpl; auto. Qed.\n"
SHARED = "Inductive color := red | green.\nTheorem c : forall x : color, x = red \\/ x = green.\n"
SHARED_TASK = SHARED + "Admitted.\n"
SHARED_OK = SHARED + "Proof. intros []; auto. Qed.\n"
# a task that postulates before its target (pinned by the kernel comparison)
POSTULATE = "Parameter p : nat.\nTheorem c : p = p.\n"
VM_BUG = (BUGS / "vm_addmuldiv.v").read_text(encoding="utf-8")


# what coqchk catches that coqc 8.16 accepts: only an affected Coq compiles the instance
HOST_VM_BUG = pytest.mark.host("coqc 8.16's VM proves False here (rocq#19402, fixed in 8.20)")


@pytest.fixture(scope="module")
def backend() -> CoqBackend:
    return CoqBackend(timeout=120)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every coqchk command the replay starts (the real one still runs)."""
    seen: list[list[str]] = []
    real = coq_replay.run_limited

    def spy(argv: list[str], **kwargs: Any) -> Any:
        seen.append(list(argv))
        return real(argv, **kwargs)

    monkeypatch.setattr(coq_replay, "run_limited", spy)
    return seen


@pytest.mark.parametrize(
    ("task", "candidate"), [(PLAIN, PLAIN_OK), (SHARED_TASK, SHARED_OK)], ids=["whole", "shared"]
)
def test_genuine_proof_passes_after_one_replay(
    backend: CoqBackend, replays: list[list[str]], task: str, candidate: str
) -> None:
    verdict = StrictVerifier(backend).verify(task, candidate)
    assert verdict.passed, verdict.findings
    assert len(replays) == 1 and Path(replays[0][0]).name == "coqchk"
    assert replays[0][1:4] == ["-silent", "-norec", "Candidate"]


def test_a_task_with_a_postulate_replays_the_candidates_own_library(
    backend: CoqBackend, replays: list[list[str]]
) -> None:
    """A genuine proof over the task's postulate passes after one replay of the library the
    kernel route compiled; a VM exploit after the postulate is refused by the replay."""
    verdict = StrictVerifier(backend).verify(
        POSTULATE + "Admitted.\n", POSTULATE + "Proof. reflexivity. Qed.\n"
    )
    assert verdict.passed, verdict.findings
    assert len(replays) == 1
    task = "Parameter p : nat.\nTheorem oops : False.\nAdmitted.\n"
    exploit = "Parameter p : nat.\n" + VM_BUG
    refused = StrictVerifier(backend).verify(task, exploit)
    if backend.version().startswith("coq 8.16"):
        assert refused.reasons == [Reason.replay_failed], refused.findings
        assert "Type error" in refused.findings[0].message  # the proof, not the load path
    else:
        assert not refused.passed or "rocq#19402" in refused.known_unsound


def test_no_replay_on_a_failure_or_when_off(backend: CoqBackend, replays: list[list[str]]) -> None:
    wrong = "Theorem t : forall n : nat, 0 + n = n.\nProof. intro n. reflexivity. Qed.\n"
    assert not StrictVerifier(backend).verify(PLAIN, wrong).passed
    off = StrictVerifier(backend, VerifierPolicy(replay=False)).verify(PLAIN, PLAIN_OK)
    assert off.passed
    assert replays == []


def _compiled(folder: Path, source: Path) -> Path:
    """`source` compiled by the suite's coqc as `Candidate.vo` in `folder` (the verifier's
    layout)."""
    shutil.copyfile(source, folder / "Candidate.v")
    coqc(["-q", "Candidate.v"], folder)
    return folder


@HOST_VM_BUG
def test_interface_refuses_what_coqc_accepted(tmp_path: Path) -> None:
    """The entry point the lead re-hooks: a folder with a verifier-compiled `Candidate.vo`
    that coqc of 8.16 accepted (a VM bug) is refused, with coqchk's reason."""
    backend = CoqBackend(timeout=120)  # the host's (the marker)
    folder = _compiled(tmp_path, BUGS / "vm_addmuldiv.v")
    found = replay_findings(backend, folder, 120)
    if not backend.version().startswith("coq 8.16"):
        pytest.skip("the instance proves False only on an affected Coq")
    assert [f.reason for f in found] == [Reason.replay_failed]
    assert "coqchk refuses" in found[0].message and "Error" in found[0].message


def test_interface_accepts_a_sound_library(backend: CoqBackend, tmp_path: Path) -> None:
    (tmp_path / "ok.v").write_text(PLAIN_OK, encoding="utf-8")
    assert replay_findings(backend, _compiled(tmp_path, tmp_path / "ok.v"), 120) == []


def test_cannot_run_is_a_finding(backend: CoqBackend, tmp_path: Path) -> None:
    """No library kept, no time left, no coqchk beside the coqc: never a silent pass."""
    missing = replay_findings(backend, tmp_path, 120)
    assert [f.reason for f in missing] == [Reason.replay_failed]
    assert "no compiled library" in missing[0].message
    (tmp_path / "ok.v").write_text(PLAIN_OK, encoding="utf-8")
    folder = _compiled(tmp_path, tmp_path / "ok.v")
    late = replay_findings(backend, folder, 0.001)
    assert [f.reason for f in late] == [Reason.timeout] and "coqchk" in late[0].message
    alone = tmp_path / "bin"
    alone.mkdir()
    (alone / "coqc").symlink_to(backend.coqc)
    lonely = CoqBackend(coqc=str(alone / "coqc"))
    nothing = replay_findings(lonely, folder, 120)
    assert [f.reason for f in nothing] == [Reason.replay_failed]
    assert "no coqchk" in nothing[0].message


def test_trusted_load_path_only(tmp_path: Path) -> None:
    """coqchk gets the shipped library and the project's -R/-Q folders, never `-I` (coqchk
    loads no plugin) nor any other coqc argument."""
    lib = tmp_path / "lib"
    lib.mkdir()
    args = ["-R", str(lib), "Lib", "-I", str(tmp_path), "-w", "-all", "-impredicative-set"]
    flags = trusted_load_path(CoqBackend(args=args))
    assert flags[-4:] == ["-R", str(lib), "Lib", "-impredicative-set"]
    assert "-I" not in flags and "-w" not in flags and "-all" not in flags


def test_impredicative_set_library_replays(backend: CoqBackend, tmp_path: Path) -> None:
    """A library compiled under `-impredicative-set` (a project's `-arg`) is checked by
    coqchk under it too: a proof that needs it passes, rather than a spurious refusal."""
    source = "Definition id_set : Set := forall A : Set, A -> A.\nTheorem t : True.\nProof. exact I. Qed.\n"
    (tmp_path / "Candidate.v").write_text(source, encoding="utf-8")
    coqc(["-q", "-impredicative-set", "Candidate.v"], tmp_path)
    impredicative = CoqBackend(args=["-impredicative-set"])
    assert replay_findings(impredicative, tmp_path, 120) == []
    refused = replay_findings(backend, tmp_path, 120)  # without the flag: coqchk's refusal
    assert [f.reason for f in refused] == [Reason.replay_failed]


@HOST_VM_BUG
def test_cli_check_replay_flag_and_known_bugs(tmp_path: Path) -> None:
    """`formalbench check`: a VM exploit fails by default (`replay_failed`), passes with
    `--no-replay` (coqc's kernel alone, as before the replay), and the output names the
    known kernel bugs of the Coq that judged it."""
    from typer.testing import CliRunner

    from formalbench.cli.main import app

    task = tmp_path / "task.v"
    task.write_text("Theorem oops : False.\nAdmitted.\n", encoding="utf-8")
    exploit = BUGS / "vm_addmuldiv.v"
    runner = CliRunner()
    default = runner.invoke(app, ["check", str(exploit), "--against", str(task), "--json"])
    alone = runner.invoke(app, ["check", str(exploit), "--against", str(task), "--no-replay"])
    if not CoqBackend().version().startswith("coq 8.16"):
        pytest.skip("the instance proves False only on an affected Coq")
    assert default.exit_code == 1, default.output
    payload = json.loads(default.stdout)
    assert payload["reasons"] == ["replay_failed"]
    assert "rocq#19402" in payload["toolchain"]["known_unsound"]
    assert alone.exit_code == 0, alone.output
    assert "known kernel bugs of this Coq (not fixed): " in alone.stdout
