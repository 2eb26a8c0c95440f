"""The one gate before every assistant run (core/gate.py, enforced in backends/base.py).

Every entry point is tried with a text that would write a file if coqc ran it: a backend
called directly, a backend subclass that overrides `check`, `check_many`, `formalize` with a
model that writes the command, the review page's re-check, and `check` / `eval` on an
original task that itself carries the command. In every case the file must not appear.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from formalbench.backends.base import Backend, CheckRequest
from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.cli.main import app
from formalbench.core.gate import OVERSIZED, unsafe_commands
from formalbench.core.records import CheckResult, CheckStatus, Language, Reason, Task
from formalbench.dashboard.app import create_app
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.formalize import FormalizeConfig, run_formalize
from formalbench.pipelines.run_config import EvalConfig
from formalbench.store.formalize import FormalizeStore
from formalbench.store.runs import RunStore

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
THEOREM = "Theorem two : 1 + 1 = 2.\nProof.\n"


def redirect(target: Path) -> str:
    """A Coq command that makes coqc write `target`.out."""
    return f'Redirect "{target}" Check nat.\n'


def leaked(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("leak"))


# --- what the gate refuses ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ('Redirect "/tmp/x" Check nat.', "Redirect"),
        ('Extraction "/tmp/x.ml" nat.', "Extraction"),
        ("Separate Extraction nat.", "Extraction"),
        ('Print Universes "/tmp/u".', "Print Universes to a file"),
        ('Print Sorted Universes Subgraph (Set) "/tmp/u".', "Print Universes to a file"),
        ("Load foo.", "Load"),
        ('Time Cd "/tmp".', "Cd"),
        ('Add Rec LoadPath "/tmp" as T.', "Add LoadPath"),
        ('Declare ML Module "evil".', "Declare ML Module"),
        ('Add ML Path "/tmp".', "Add ML Path"),
        ("- Drop.", "Drop"),
        ('From Coq Extra Dependency "/etc/passwd" as pw.', "Extra Dependency"),
        ('Locate File "x".', "Locate File"),
    ],
)
def test_coq_file_and_process_commands_are_refused(text: str, command: str) -> None:
    assert [u.command for u in unsafe_commands(text, Language.coq)] == [command]


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("#eval IO.println 1", "#eval"),
        ("run_cmd pure ()", "run_cmd"),
        ("run_elab pure ()", "run_elab"),
        ("run_meta pure ()", "run_meta"),
        ("example : True := by run_tac pure ()", "run_tac"),
        ("initialize counter : IO.Ref Nat ← IO.mkRef 0", "initialize"),
        ("builtin_initialize pure ()", "builtin_initialize"),
        ("#exit", "#exit"),
        ('def w := _root_.IO.FS.writeFile "x" "y"', "_root_.IO.FS.writeFile"),
        ("open IO.Process in", "IO.Process"),
        ('@[extern "system"] opaque sys : Nat', "extern"),
        ("@[simp, init boot] def x := 1", "@[init]"),
        ("def f := unsafeBaseIO (pure 1)", "unsafeBaseIO"),
    ],
)
def test_lean_commands_that_run_code_are_refused(text: str, command: str) -> None:
    assert [u.command for u in unsafe_commands(text, Language.lean)][:1] == [command]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ('(* Redirect "/tmp/x" *) Check "Load".', Language.coq),
        (
            "Definition Drop (n : nat) := n.\nLemma l : Drop 1 = 1. Proof. reflexivity. Qed.",
            Language.coq,
        ),  # noqa: E501
        ("Print Universes.", Language.coq),
        ('theorem t : "#eval".length = 5 := rfl -- run_cmd', Language.lean),
        ("theorem t : System.Platform.numBits ≥ 32 := by omega", Language.lean),
    ],
)
def test_commands_in_comments_strings_and_plain_names_pass(text: str, language: Language) -> None:
    assert unsafe_commands(text, language) == []


def test_an_oversized_text_is_refused_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORMALBENCH_MAX_SOURCE_BYTES", "1000")
    (found,) = unsafe_commands("(* x *)\n" * 200, Language.coq)
    assert found.command == OVERSIZED and "1000 bytes" in found.message
    verifier = StrictVerifier(None, language=Language.coq)
    huge = THEOREM + "Admitted.\n" + "Definition big := 1.\n" * 100
    verdict = verifier.verify(THEOREM + "Admitted.\n", huge)
    assert not verdict.passed and verdict.findings[0].subject == OVERSIZED


def test_a_50_mb_candidate_gets_its_verdict_at_once() -> None:
    """The text layer never sees it: far less than the 53 s it took before the size cap."""
    verifier = StrictVerifier(None, language=Language.coq)
    huge = THEOREM + "Proof. " + "idtac. " * (50 * 1024 * 1024 // 7) + "Qed.\n"
    start = time.perf_counter()
    verdict = verifier.verify(THEOREM + "Admitted.\n", huge)
    assert time.perf_counter() - start < 5
    assert verdict.reasons == [Reason.forbidden_construct]
    assert verdict.findings[0].subject == OVERSIZED


# --- every backend entry point goes through it ----------------------------------------------


class Recording(Backend):
    """A backend that overrides every entry point and records what reached it."""

    name = "recording"
    language = Language.coq

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.seen: list[str] = []

    def check(self, source, *, targets=(), timeout=None):  # noqa: ANN001, ANN201
        self.seen.append(source)
        return CheckResult(backend=self.name)

    def check_many(self, requests: Sequence[CheckRequest]) -> Iterator[CheckResult]:
        for r in requests:
            self.seen.append(r.source)
            yield CheckResult(backend=self.name)

    def version(self) -> str:
        return "recording"


def test_a_subclass_cannot_bypass_the_gate(tmp_path: Path) -> None:
    import asyncio

    bad = redirect(tmp_path / "leak")
    with Recording() as backend:
        assert backend.check(bad).status == CheckStatus.refused
        assert asyncio.run(backend.acheck(bad)).status == CheckStatus.refused
        many = list(
            backend.check_many(
                [
                    CheckRequest(source="Check nat."),
                    CheckRequest(source=bad),
                    CheckRequest(source="Check bool."),
                ]  # fmt: skip
            )
        )
        assert [r.status for r in many] == [CheckStatus.ok, CheckStatus.refused, CheckStatus.ok]
        assert backend.seen == ["Check nat.", "Check bool."]
    (error,) = many[1].errors
    assert error.kind == "forbidden_construct" and "`Redirect` at line 1" in error.message


@needs_coq
def test_coqc_never_runs_a_refused_text(tmp_path: Path) -> None:
    with CoqBackend(workers=1) as coq:
        result = coq.check(redirect(tmp_path / "leak") + THEOREM + "Qed.\n", timeout=30)
        assert result.status == CheckStatus.refused and not result.compiled
        assert "`Redirect`" in (result.detail or "")
        assert coq.check(THEOREM + "reflexivity.\nQed.\n", timeout=30).compiled
    assert leaked(tmp_path) == []


# --- formalize, the review page, check and eval -----------------------------------------------


@needs_coq
def test_formalize_never_compiles_a_candidate_with_redirect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.standins.openai_server import StandinServer
    from tests.test_formalize import PROBLEMS, coq, responder, system, write_problems

    evil = redirect(tmp_path / "leak") + "Theorem add_comm_nat : forall n m : nat, n + m = m + n."
    evil += "\nProof.\nAdmitted."
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer(models=("alpha",)) as server:
        server.responder = lambda body: (
            [coq(evil)] * int(body.get("n") or 1)
            if "You turn competition" in system(body) or "It was rejected:" in str(body)
            else responder(body)
        )
        config = FormalizeConfig(
            problems=str(write_problems(tmp_path / "p.jsonl", PROBLEMS[:1])),
            models=[f"openai:alpha@{server.base_url}"],
            backend="coq",
            samples=1,
            repair_rounds=1,
            context_items=0,
            workers=1,
            timeout=30,
        )
        run_formalize(config, tmp_path / "run")
    assert leaked(tmp_path) == []
    with FormalizeStore(tmp_path / "run" / "formalize.sqlite") as store:
        (cand,) = store.candidates("comm")
    assert not cand.compiled
    messages = [d.message for r in cand.rounds for d in r.diagnostics]
    assert any("`Redirect`" in m and "never given to the proof assistant" in m for m in messages)


@needs_coq
def test_the_review_pages_recheck_refuses_redirect(tmp_path: Path) -> None:
    from test_dashboard_app import form
    from test_dashboard_views import ADD_ZERO_OK, make_run

    run = make_run(tmp_path / "run", extra=0)
    with TestClient(create_app(run, reviewer="ana")) as client:
        fields = form(client.get("/p/alg-add-zero").text)
        code = redirect(tmp_path / "leak") + ADD_ZERO_OK
        page = client.post("/check", data=dict(fields, code=code))
    assert page.status_code == 200
    assert "<b>Compiles</b>" not in page.text and "Redirect" in page.text
    assert leaked(tmp_path) == []


def original_with_redirect(tmp_path: Path) -> str:
    return redirect(tmp_path / "leak") + THEOREM + "Admitted.\n"


@needs_coq
def test_check_refuses_a_command_copied_from_the_original(tmp_path: Path) -> None:
    original = tmp_path / "task.v"
    original.write_text(original_with_redirect(tmp_path), encoding="utf-8")
    candidate = tmp_path / "proof.v"
    candidate.write_text(
        original.read_text().replace("Admitted.", "reflexivity.\nQed."), encoding="utf-8"
    )
    result = CliRunner().invoke(
        app, ["check", str(candidate), "--against", str(original), "--json"]
    )
    assert result.exit_code == 1, result.output
    verdict = json.loads(result.output)
    assert verdict["reasons"] == ["forbidden_construct"]
    assert [f["subject"] for f in verdict["findings"]] == ["Redirect"]
    assert leaked(tmp_path) == []


@needs_coq
def test_eval_refuses_a_task_that_carries_the_command(tmp_path: Path) -> None:
    task = Task(id="two", language=Language.coq, formal=original_with_redirect(tmp_path))
    data = tmp_path / "d.jsonl"
    data.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    run_evaluation(EvalConfig(dataset=str(data), workers=1, timeout=30), tmp_path / "run")
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        (attempt,) = store.attempts(store.runs()[0].id)
    assert attempt.verdict is not None and not attempt.verdict.passed
    assert Reason.forbidden_construct in attempt.verdict.reasons
    assert leaked(tmp_path) == []


def test_lean_repl_never_sees_eval(tmp_path: Path) -> None:
    """The Lean REPL path (stand-in REPL process) is gated like coqc: no request reaches it."""
    import sys

    from formalbench.backends.lean.backend import LeanBackend

    fake = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
    log = tmp_path / "repl.log"
    source = 'import Mathlib\n\n#eval IO.FS.writeFile "leak" "x"\ntheorem t : True := trivial\n'
    with LeanBackend(repl_command=[sys.executable, str(fake), "--log", str(log)]) as lean:
        result = lean.check(source, targets=["t"])
    assert result.status == CheckStatus.refused
    assert {e.message.split("`")[1] for e in result.errors} == {"#eval", "IO.FS.writeFile"}
    assert not log.exists() or log.read_text() == ""
