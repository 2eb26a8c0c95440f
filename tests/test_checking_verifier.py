"""The assistant layer of the strict verifier: real coqc end to end, and for Lean (no toolchain
here) a test-only backend that hands back CheckResults shaped like the Lean backend's."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from formalbench.backends.base import Backend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import (
    CheckResult,
    CheckStatus,
    Diagnostic,
    Hole,
    Language,
    Reason,
    Severity,
    TaskKind,
)
from tests.suite_coq import std

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "formalbench" / "datasets" / "examples"


class RecordedBackend(Backend):
    """Answers every check with a given result and records what it was asked (test only)."""

    name = "recorded"

    def __init__(self, result: CheckResult, language: Language = Language.lean) -> None:
        super().__init__(workers=1)
        self.result = result
        self.language = language
        self.calls: list[tuple[str, list[str], float | None]] = []

    def check(
        self, source: str, *, targets: Sequence[str] = (), timeout: float | None = None
    ) -> CheckResult:
        self.calls.append((source, list(targets), timeout))
        return self.result

    def version(self) -> str:
        return "recorded"


LEAN_ORIGINAL = "import Mathlib\n\ntheorem t (n : ℕ) : n + 0 = n := by\n  sorry\n"
LEAN_SOLVED = "import Mathlib\n\ntheorem t (n : ℕ) : n + 0 = n := by\n  simp\n"


def lean_verdict(result: CheckResult, candidate: str = LEAN_SOLVED, **policy: object):
    backend = RecordedBackend(result)
    verifier = StrictVerifier(backend, VerifierPolicy(**policy))
    return verifier.verify(LEAN_ORIGINAL, candidate, timeout=7.0), backend


def test_lean_pass_with_standard_axioms() -> None:
    ok = CheckResult(backend="lean", axioms={"t": ["propext", "Classical.choice", "Quot.sound"]})
    verdict, backend = lean_verdict(ok)
    assert verdict.passed and verdict.reasons == [] and not verdict.static_only
    assert backend.calls == [(LEAN_SOLVED, ["t"], 7.0)]
    assert verdict.axioms == ok.axioms and verdict.backend == "recorded"


def test_lean_sorry_axiom_and_native_decide_axiom_are_disallowed() -> None:
    result = CheckResult(backend="lean", axioms={"t": ["propext", "sorryAx", "Lean.ofReduceBool"]})
    verdict, _ = lean_verdict(result)
    assert verdict.reasons == [Reason.disallowed_axiom]
    assert [f.subject for f in verdict.findings] == ["sorryAx", "Lean.ofReduceBool"]
    widened, _ = lean_verdict(result, allowed_axioms=["propext", "sorryAx", "Lean.ofReduceBool"])
    assert widened.passed


def test_lean_unreported_axioms_fail() -> None:
    verdict, _ = lean_verdict(CheckResult(backend="lean"))
    assert (
        verdict.reasons == [Reason.disallowed_axiom]
        and "did not report" in verdict.findings[0].message
    )


def test_compile_errors_and_warnings() -> None:
    err = Diagnostic(severity=Severity.error, message="unknown identifier 'foo'", line=4, column=2)
    warn = Diagnostic(severity=Severity.warning, message="unused variable", line=3, column=10)
    result = CheckResult(backend="lean", diagnostics=[err, warn], axioms={"t": []})
    verdict, _ = lean_verdict(result)
    assert verdict.reasons == [Reason.compile_error] and verdict.findings[0].line == 4
    assert len(verdict.diagnostics) == 2
    ok_with_warning = CheckResult(backend="lean", diagnostics=[warn], axioms={"t": []})
    assert lean_verdict(ok_with_warning)[0].passed
    strict, _ = lean_verdict(ok_with_warning, forbid_warnings=True)
    assert strict.reasons == [Reason.compile_warning]


def test_holes_reported_by_the_assistant_fail() -> None:
    result = CheckResult(backend="lean", holes=[Hole(line=4, column=2)], axioms={"t": []})
    verdict, _ = lean_verdict(result)
    assert verdict.reasons == [Reason.forbidden_construct] and verdict.findings[0].line == 4


@pytest.mark.parametrize(
    "status, reason",
    [
        (CheckStatus.timeout, Reason.timeout),
        (CheckStatus.out_of_memory, Reason.out_of_memory),
        (CheckStatus.crash, Reason.backend_crash),
    ],
)
def test_assistant_status_becomes_a_reason(status: CheckStatus, reason: Reason) -> None:
    verdict, _ = lean_verdict(CheckResult(backend="lean", status=status, detail="killed"))
    assert verdict.reasons == [reason] and not verdict.passed


def test_static_failure_skips_the_assistant_unless_asked() -> None:
    ok = CheckResult(backend="lean", axioms={"t": []})
    bad = LEAN_SOLVED.replace("simp", "sorry").replace("n + 0 = n", "n = n")
    verdict, backend = lean_verdict(ok, candidate=bad)
    assert backend.calls == [] and set(verdict.reasons) == {
        Reason.statement_changed,
        Reason.forbidden_construct,
    }
    failing = CheckResult(backend="lean", diagnostics=[
        Diagnostic(severity=Severity.error, message="type mismatch")])  # fmt: skip
    backend = RecordedBackend(failing)
    both = StrictVerifier(backend, compile_always=True).verify(LEAN_ORIGINAL, bad)
    assert len(backend.calls) == 1
    assert both.reasons == [
        Reason.statement_changed,
        Reason.forbidden_construct,
        Reason.compile_error,
    ]


def test_averify_uses_the_async_path() -> None:
    backend = RecordedBackend(CheckResult(backend="lean", axioms={"t": []}))
    verifier = StrictVerifier(backend)
    verdicts = asyncio.run(_many(verifier, 5))
    assert all(v.passed for v in verdicts) and len(backend.calls) == 5
    backend.close()


async def _many(verifier: StrictVerifier, n: int):
    return await asyncio.gather(*(verifier.averify(LEAN_ORIGINAL, LEAN_SOLVED) for _ in range(n)))


def test_static_only_and_language_required() -> None:
    verdict = StrictVerifier(None, language=Language.lean).verify(LEAN_ORIGINAL, LEAN_SOLVED)
    assert verdict.passed and verdict.static_only and verdict.backend is None
    with pytest.raises(InputError, match="needs a language"):
        StrictVerifier(None)
    with pytest.raises(InputError, match="no named declaration with a hole"):
        StrictVerifier(None, language=Language.lean).verify(LEAN_SOLVED, LEAN_SOLVED)


COQ_ORIGINAL = (
    "Parameter f : nat -> nat.\nAxiom f_spec : forall n, f n = n.\n"
    "Theorem t : forall n, f n + 0 = n.\nProof.\nAdmitted.\n"
)


def test_a_coq_backend_without_coqc_cannot_accept() -> None:
    """A Coq verdict is decided by the kernel route or not at all: a backend that is not a
    coqc backend (here one that answers every check "compiled, no axioms", the shape an
    appended `Print Assumptions` redirected by a notation gives) gets `undecided`, in both
    entry points, and is never asked to check the candidate in its own scope."""
    clean = CheckResult(backend="coq", axioms={"t": []})
    backend = RecordedBackend(clean, Language.coq)
    verifier = StrictVerifier(backend)
    candidate = COQ_ORIGINAL.replace("Admitted.", "intros n. rewrite f_spec. auto. Qed.")
    for verdict in (
        verifier.verify(COQ_ORIGINAL, candidate),
        asyncio.run(verifier.averify(COQ_ORIGINAL, candidate)),
    ):
        assert not verdict.passed and verdict.reasons == [Reason.undecided]
        assert "cannot run Coq's kernel route" in verdict.findings[0].message
    assert backend.calls == []


class LostWorker(RecordedBackend):
    """A backend whose worker dies under every call made on the assistant's side."""

    def on_assistant(self, work, *args):  # noqa: ANN001, ANN002, ANN201
        from formalbench.backends.base import WorkerLost

        raise WorkerLost("the worker died")


def test_a_worker_lost_under_a_coq_check_is_a_backend_crash() -> None:
    backend = LostWorker(CheckResult(backend="coq"), Language.coq)
    candidate = COQ_ORIGINAL.replace("Admitted.", "intros n. rewrite f_spec. auto. Qed.")
    verdict = StrictVerifier(backend).verify(COQ_ORIGINAL, candidate)
    assert verdict.reasons == [Reason.backend_crash] and "the worker died" in str(verdict)


coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc (Debian package coq)")


@coq
def test_coq_axiom_rules_with_real_coqc() -> None:
    from formalbench.backends.coq import CoqBackend

    stated = COQ_ORIGINAL.replace("Admitted.", "intros n. rewrite f_spec. auto. Qed.")
    classic = "Require Coq.Logic.Classical_Prop.\n" + COQ_ORIGINAL.replace(
        "Admitted.",
        "intros n. destruct (Coq.Logic.Classical_Prop.classic (n = n)); rewrite f_spec; auto. Qed.",
    )
    library = ["Coq.Logic.Classical_Prop.classic"]
    with CoqBackend(workers=1, timeout=60) as backend:

        def verify(candidate: str, **policy: object):
            return StrictVerifier(backend, VerifierPolicy(**policy)).verify(COQ_ORIGINAL, candidate)

        task_stated = verify(stated)  # f and f_spec are postulated by the task itself
        assert task_stated.passed, task_stated.findings
        # by kernel name: the task's own postulates, declared before the target
        assert set(task_stated.axioms["t"]) == {"Candidate.f", "Candidate.f_spec"}
        assert verify(classic).passed
        refused = verify(classic, axiom_presets=[])
        assert refused.reasons == [Reason.disallowed_axiom]
        assert verify(classic, axiom_presets=[], allowed_axioms=library).passed


@coq
def test_real_coq_end_to_end() -> None:
    from formalbench.backends.coq import CoqBackend

    original = (EXAMPLES / "check" / "original.v").read_text()
    good = (EXAMPLES / "check" / "candidate.v").read_text()
    with CoqBackend(timeout=120, workers=2) as backend:
        verifier = StrictVerifier(backend)
        verdict = verifier.verify(original, good)
        assert verdict.passed, verdict.findings
        assert verdict.axioms == {"double_le_square_plus_one": []}
        wrong = good.replace("nia.", "lia.")
        failed = verifier.verify(original, wrong)
        assert failed.reasons == [Reason.compile_error] and failed.findings[0].line == 14
        # a helper closed by Admitted passes the text layer only when `Admitted` is allowed;
        # the assistant still sees it as an axiom of the file
        lenient = StrictVerifier(backend, VerifierPolicy(forbidden=[]))
        cheat = good.replace("Proof. intros n. unfold double. lia. Qed.", "Proof. Admitted.")
        caught = lenient.verify(original, cheat)
        assert Reason.disallowed_axiom in caught.reasons
        assert "Candidate.double_is_twice" in {f.subject for f in caught.findings}


@coq
def test_real_coq_task_axioms_and_classical_logic() -> None:
    from formalbench.backends.coq import CoqBackend

    original = (
        "Require Import Classical.\n"
        + COQ_ORIGINAL
        + ("Theorem em : forall P : Prop, P \\/ ~ P.\nProof.\nAdmitted.\n")
    )
    candidate = original.replace("Admitted.", "intros n. rewrite f_spec. auto. Qed.", 1)
    candidate = candidate.replace("Admitted.", "exact classic. Qed.", 1)
    with CoqBackend(timeout=120) as backend:
        assert StrictVerifier(backend).verify(original, candidate).passed
        strict = StrictVerifier(backend, VerifierPolicy(axiom_presets=[]))
        verdict = strict.verify(original, candidate, kind=TaskKind.proof)
        assert verdict.reasons == [Reason.disallowed_axiom]
        assert verdict.findings[0].subject == std("Coq.Logic.Classical_Prop.classic")
