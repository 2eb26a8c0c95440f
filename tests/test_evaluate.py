"""The evaluation harness end to end: real coqc, real SQLite, real HTTP to a stand-in model.

The dataset is written by each test: a Coq task the portfolio proves (`lia`), one it cannot
(a false statement), and one a model answers.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from formalbench.backends.coq import CoqBackend
from formalbench.cli.evaluate import ProgressBar, split_tactics
from formalbench.cli.main import app
from formalbench.cli.progress import LongProgress
from formalbench.core.errors import FormalbenchError
from formalbench.core.records import CheckResult, CheckStatus, Language, Reason, Task
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig, Selection
from formalbench.pipelines.run_files import RunFiles, load_summary
from formalbench.store.runs import RunStore
from formalbench.toolchains.toolchain import resolve
from tests.shared_data import ROOT, needs_shared
from tests.standins.openai_server import Reply, StandinServer

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

SHARED = ROOT
EASY = "Theorem easy_add : forall n m : nat, n + m = m + n.\nProof.\nAdmitted.\n"
FALSE = "Theorem never : forall P Q : Prop, P -> Q.\nProof.\nAdmitted.\n"
REFL = "Theorem two : 1 + 1 = 2.\nProof.\nAdmitted.\n"


def write_dataset(path: Path, formals: dict[str, str]) -> Path:
    tasks = [
        Task(id=name, language=Language.coq, formal=formal, labels={"domain": "arith"})
        for name, formal in formals.items()
    ]
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    return path


def test_portfolio_run_solves_the_easy_task_and_rerun_does_nothing(
    tmp_path: Path, suite_and_host: str
) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY, "never": FALSE})
    config = EvalConfig(dataset=str(data), workers=2, timeout=30)
    first = run_evaluation(config, tmp_path / "run")
    assert (first.new_attempts, first.skipped_attempts) == (2, 0)
    summary = load_summary(tmp_path / "run")
    assert summary.solved == ["easy_add"]
    assert summary.pass_at_k == {"1": 0.5}
    with RunStore(RunFiles(tmp_path / "run").store) as store:
        attempts = {a.task_id: a for a in store.attempts(store.runs()[0].id)}
    assert attempts["easy_add"].verdict.passed
    assert "Qed." in attempts["easy_add"].code
    assert not attempts["never"].verdict.passed

    again = run_evaluation(config, tmp_path / "run")
    assert (again.new_attempts, again.skipped_attempts) == (0, 2)
    log = json.loads((tmp_path / "run" / "run.json").read_text())
    assert log["status"] == "finished" and log["config"]["solver"] == "portfolio"
    assert log["versions"]["backend"].startswith(f"coq {resolve().version()}")


def test_changed_config_on_the_same_run_dir_is_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    run_evaluation(EvalConfig(dataset=str(data)), tmp_path / "run")
    changed = EvalConfig(dataset=str(data), selection=Selection(pattern="t*"))
    with pytest.raises(FormalbenchError, match="selection"):
        run_evaluation(changed, tmp_path / "run")


def test_whole_proof_sampling_over_real_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL, "never": FALSE})

    def answer(body: dict) -> list[str]:
        prompt = body["messages"][-1]["content"]
        proof = "reflexivity." if "Theorem two" in prompt else "intros. assumption."
        return [f"```coq\nProof.\n  {proof}\nQed.\n```"] * int(body.get("n", 1) or 1)

    with StandinServer() as server:
        server.responder = answer
        spec = f"openai:standin-model@{server.base_url}"
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        config = EvalConfig(dataset=str(data), solver="whole", model=spec, samples=2)
        result = run_evaluation(config, tmp_path / "run")
        calls = server.count()
        assert result.new_attempts == 4
        summary = load_summary(tmp_path / "run")
        assert summary.solved == ["two"]
        assert summary.pass_at_k["1"] == pytest.approx(0.5)
        assert summary.tokens_total.total > 0
        # A rerun is served from the run's response cache and the store: no new request.
        run_evaluation(config, tmp_path / "run")
        assert server.count() == calls


def test_run_token_budget_stops_cleanly_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    formals = {f"t{i}": REFL.replace("two", f"t{i}") for i in range(4)}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    proof = ["```coq\nProof. reflexivity. Qed.\n```"]
    with StandinServer() as server:
        # Each answer reports 2,010 tokens: a 2,600-token run budget pays for two attempts.
        server.script(*[Reply(texts=proof, usage=(2000, 10)) for _ in range(4)])
        server.responder = lambda body: proof
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        spec = f"openai:standin-model@{server.base_url}"
        base = dict(dataset=str(data), solver="whole", model=spec, concurrency=1, max_tokens=50)
        first = run_evaluation(EvalConfig(**base, run_token_budget=2600), tmp_path / "run")
        assert first.stopped is not None and "run token budget" in first.stopped
        assert first.new_attempts == 2
        log = json.loads((tmp_path / "run" / "run.json").read_text())
        assert log["status"] == "interrupted"
        second = run_evaluation(EvalConfig(**base), tmp_path / "run")
        assert second.stopped is None
        assert (second.new_attempts, second.skipped_attempts) == (2, 2)
    assert load_summary(tmp_path / "run").solved == sorted(formals)


def test_sigkill_mid_run_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    formals = {f"s{i}": EASY.replace("easy_add", f"s{i}") for i in range(8)}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "formalbench",
        "eval",
        str(data),
        "--run-dir",
        str(run_dir),
        "--workers",
        "1",
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store_path = RunFiles(run_dir).store
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until some, not all, attempts are committed
        if store_path.exists():
            with RunStore(store_path) as store:
                runs = store.runs()
                if runs and 2 <= store.counts(runs[0].id)["attempts"] < 8:
                    break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    result = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(run_dir), "--quiet"])
    assert result.exit_code == 0, result.output
    with RunStore(store_path) as store:
        run_id = store.runs()[0].id
        keys = [(a.task_id, a.sample) for a in store.attempts(run_id)]
    assert sorted(keys) == sorted((k, 0) for k in formals)  # every task once, none twice
    assert load_summary(run_dir).solved == sorted(formals)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--solver", "nonsense"], "unknown solver"),
        (["--backend", "nonsense"], "unknown backend 'nonsense'; known backends: coq, lean"),
        (["--backend", "Lean"], "--backend lean: the dataset has no lean tasks"),
        (["--tactics", "lia,,nia"], "an empty tactic"),
        (["--tactics", "lia", "--solver", "whole", "--model", "openai:m"], "portfolio"),
        (["--solver", "whole"], "needs a model"),
        (["--model", "nosuch:model", "--solver", "whole"], "unknown provider"),
        (["--executor", "spark"], "--executor"),
    ],
)
def test_bad_options_are_one_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    result = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not (tmp_path / "r").exists()  # refused before the run folder is made


@needs_shared
def test_lean_backend_without_toolchain_is_exit_2_before_the_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(SHARED / "data/minif2f-lean4/minif2f_deepseek_v15.jsonl"),
            "--run-dir",
            str(tmp_path / "r"),
            "--sample-tasks",
            "2",
        ],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "not installed" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()  # a start that failed leaves no run folder


def test_report_json_has_the_summary_shape(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL, "never": FALSE})
    run_evaluation(EvalConfig(dataset=str(data)), tmp_path / "run")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 2 and summary["attempts"] == 2
    assert summary["solved"] == ["two"] and summary["pass_at_k"] == {"1": 0.5}
    html = (tmp_path / "run" / "report.html").read_text()
    assert "<svg" in html and "50.0%" in html


def test_report_on_a_folder_that_is_no_run_is_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2 and "not a run directory" in result.output


@pytest.mark.ray
def test_ray_executor_runs_verification_on_a_local_ray(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY, "never": FALSE})
    config = EvalConfig(dataset=str(data), executor="ray", workers=2, timeout=30)
    result = run_evaluation(config, tmp_path / "run")
    assert result.new_attempts == 2
    summary = load_summary(tmp_path / "run")
    with RunStore(RunFiles(tmp_path / "run").store) as store:
        verdicts = {a.task_id: a.verdict for a in store.attempts(store.runs()[0].id)}
    assert summary.solved == ["easy_add"], verdicts
    assert verdicts["easy_add"].backend == "ray:coq"
    assert summary.run_info["versions"]["backend"].startswith(f"coq {resolve().version()}")


# ---- the harness under load: progress, overlap, crashes, retries ---------------------------


class SlowCoq(CoqBackend):
    """The real coqc, each check held back first and its time span recorded."""

    def __init__(self, delay: float, **options: object) -> None:
        super().__init__(**options)
        self.delay = delay
        self.spans: list[tuple[float, float]] = []
        self._spans_lock = threading.Lock()

    def check(self, source, *, targets=(), timeout=None, **where):  # noqa: ANN001, ANN201
        begin = time.monotonic()
        time.sleep(self.delay)
        result = super().check(source, targets=targets, timeout=timeout, **where)
        with self._spans_lock:
            self.spans.append((begin, time.monotonic()))
        return result


class CrashingCoq(CoqBackend):
    """The real coqc, except that it crashes on every file that mentions `marker`."""

    def __init__(self, marker: str, **options: object) -> None:
        super().__init__(**options)
        self.marker = marker

    def check(self, source, *, targets=(), timeout=None, **where):  # noqa: ANN001, ANN201
        if self.marker in source:
            return CheckResult(backend=self.name, status=CheckStatus.crash, detail="segfault")
        return super().check(source, targets=targets, timeout=timeout, **where)


def test_progress_bar_counts_attempts_and_pass_rate(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY, "never": FALSE})
    config = EvalConfig(dataset=str(data), workers=2, timeout=30)
    # a terminal: off one, a plain line at the end instead (cli.progress)
    screen = Console(file=io.StringIO(), width=200, color_system=None, force_terminal=True)
    with LongProgress(screen) as progress:
        bar = ProgressBar(progress)
        run_evaluation(config, tmp_path / "run", bar)
    assert bar.stage is not None
    meter = bar.stage.meter
    assert (meter.total, meter.done, meter.resumed) == (2, 2, 0)
    assert meter.status == "1/2 passed (50%)" and meter.seconds_per_item() is not None
    assert "2/2" in screen.file.getvalue() and "1/2 passed (50%)" in screen.file.getvalue()
    log = io.StringIO()
    with LongProgress(Console(file=log)) as progress:  # a resume starts from there
        again = ProgressBar(progress)
        run_evaluation(config, tmp_path / "run", again)
    assert (again.done, again.passed) == (2, 1)
    assert again.stage is not None and again.stage.meter.resumed == 2
    # nothing worked on: no rate, no estimate (not `2 attempts in 0 s`)
    assert log.getvalue() == (
        "attempts: 2/2 attempts (100%), 2 resumed | 1/2 passed (50%) | 0:00:00 elapsed | finished\n"
    )


def test_checks_overlap_model_calls_of_other_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    formals = {name: REFL.replace("two", f"{name}_thm") for name in ("quick", "slow")}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    calls: list[tuple[float, float]] = []

    def answer(body: dict) -> list[str]:
        begin = time.monotonic()
        # The first task's answer comes at once, the second's after its check has begun.
        time.sleep(0.05 if "quick_thm" in json.dumps(body) else 1.5)
        calls.append((begin, time.monotonic()))
        return ["```coq\nProof. reflexivity. Qed.\n```"]

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    backend = SlowCoq(0.5, workers=2, timeout=30)
    with StandinServer() as server:
        server.responder = answer
        spec = f"openai:standin-model@{server.base_url}"
        config = EvalConfig(dataset=str(data), solver="whole", model=spec, concurrency=2)
        result = run_evaluation(config, tmp_path / "run", backend=backend)
    assert result.new_attempts == 2 and len(calls) == 2 and backend.spans
    overlaps = [
        (check, call)
        for check in backend.spans
        for call in calls
        if check[0] < call[1] and call[0] < check[1]
    ]
    assert overlaps, (backend.spans, calls)


def test_a_backend_crash_is_recorded_and_retry_errors_redoes_it(tmp_path: Path) -> None:
    formals = {"easy_add": EASY, "crashme": EASY.replace("easy_add", "crashme")}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    config = EvalConfig(dataset=str(data), timeout=30)
    first = run_evaluation(config, tmp_path / "run", backend=CrashingCoq("crashme", workers=2))
    assert first.new_attempts == 2  # the run went on past the crash
    with RunStore(RunFiles(tmp_path / "run").store) as store:
        verdicts = {a.task_id: a.verdict for a in store.attempts(store.runs()[0].id)}
    assert verdicts["easy_add"].passed
    assert Reason.backend_crash in verdicts["crashme"].reasons
    plain = run_evaluation(config, tmp_path / "run", backend=CoqBackend(workers=2))
    assert plain.new_attempts == 0  # a rerun alone keeps the crashed attempt
    retry = config.model_copy(update={"retry_errors": True})
    again = run_evaluation(retry, tmp_path / "run", backend=CoqBackend(workers=2))
    assert (again.new_attempts, again.skipped_attempts) == (1, 1)
    assert any("1 failed attempt" in note for note in again.notes)
    assert load_summary(tmp_path / "run").solved == ["crashme", "easy_add"]
    with RunStore(RunFiles(tmp_path / "run").store) as store:
        info = store.runs()[0]
        assert info.n_attempts == 2 == len(list(store.attempts(info.id)))


@pytest.mark.parametrize(
    ("solver", "answer"),
    [
        ("sequential", "```coq\nreflexivity.\n```"),
        ("agent", "I am sure.\n```submit\nreflexivity.\n```"),
    ],
)
def test_model_solvers_through_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, solver: str, answer: str
) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL, "never": FALSE})
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer() as server:
        server.responder = lambda body: [answer]
        spec = f"openai:standin-model@{server.base_url}"
        args = ["eval", str(data), "--solver", solver, "--model", spec, "--max-turns", "2"]
        result = CliRunner().invoke(app, [*args, "--run-dir", str(tmp_path / "run"), "--quiet"])
        assert result.exit_code == 0, result.output
        assert server.count() >= 2  # both tasks asked the model
    summary = load_summary(tmp_path / "run")
    assert summary.solved == ["two"] and summary.attempts == 2
    assert summary.run_info["config"]["solver"] == solver


def test_skip_bad_lines_through_the_command_line(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    data.write_text(data.read_text() + '{"id": "broken", "formal": \n', encoding="utf-8")
    args = ["eval", str(data), "--run-dir", str(tmp_path / "run")]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "d.jsonl:2" in refused.output
    assert not (tmp_path / "run").exists()
    skipped = CliRunner().invoke(app, [*args, "--skip-bad-lines"])
    assert skipped.exit_code == 0, skipped.output
    assert "skipped" in skipped.output and "d.jsonl:2" in skipped.output
    assert load_summary(tmp_path / "run").solved == ["two"]


# ---- options of the command: backend names, tactics, model concurrency, reports --------------


def test_backend_name_is_read_case_insensitively_and_stored_canonical(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    run_evaluation(EvalConfig(dataset=str(data), backend=" Coq "), tmp_path / "run")
    assert load_summary(tmp_path / "run").run_info["config"]["backend"] == "coq"


def test_tactics_option_decides_what_the_portfolio_tries(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"easy_add": EASY})
    base = ["eval", str(data), "--quiet"]
    weak = CliRunner().invoke(app, [*base, "--run-dir", str(tmp_path / "a"), "--tactics", "idtac"])
    assert weak.exit_code == 0, weak.output
    assert load_summary(tmp_path / "a").solved == []
    tactic_file = tmp_path / "tactics.txt"
    tactic_file.write_text("# arithmetic first\nreflexivity\n\nlia\n", encoding="utf-8")
    args = [*base, "--run-dir", str(tmp_path / "b"), "--tactics-file", str(tactic_file)]
    strong = CliRunner().invoke(app, args)
    assert strong.exit_code == 0, strong.output
    summary = load_summary(tmp_path / "b")
    assert summary.solved == ["easy_add"]
    assert summary.run_info["config"]["tactics"] == ["reflexivity", "lia"]
    with RunStore(RunFiles(tmp_path / "b").store) as store:
        (attempt,) = store.attempts(store.runs()[0].id)
    assert "lia" in attempt.code
    # The tactic list is part of what the run is: another list is refused on resume.
    changed = CliRunner().invoke(app, [*base, "--run-dir", str(tmp_path / "b"), "--tactics", "lia"])
    assert changed.exit_code == 2 and "tactics" in changed.output


def test_split_tactics_keeps_commas_inside_hint_lists() -> None:
    text = "lia, nlinarith [sq_nonneg (a - b), sq_nonneg (a + b)] ,simp"
    assert split_tactics(text) == [
        "lia",
        "nlinarith [sq_nonneg (a - b), sq_nonneg (a + b)]",
        "simp",
    ]
    with pytest.raises(FormalbenchError, match="empty tactic"):
        split_tactics("lia,")


def test_model_concurrency_bounds_the_calls_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    formals = {f"t{i}": REFL.replace("two", f"t{i}") for i in range(3)}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    proof = ["```coq\nProof. reflexivity. Qed.\n```"]
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    seen = {}
    for limit in (1, None):
        with StandinServer() as server:
            server.responder = lambda body: (time.sleep(0.3), proof)[1]
            config = EvalConfig(
                dataset=str(data),
                solver="whole",
                model=f"openai:standin-model@{server.base_url}",
                concurrency=3,
                model_concurrency=limit,
            )
            run_evaluation(config, tmp_path / f"run-{limit}")
            seen[limit] = server.max_concurrent
    assert seen[1] == 1 and seen[None] > 1
    assert load_summary(tmp_path / "run-1").solved == sorted(formals)


def test_report_and_eval_show_solved_ids_and_per_task_rows(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL, "never": FALSE})
    args = ["eval", str(data), "--run-dir", str(tmp_path / "run"), "--per-task"]
    shown = CliRunner().invoke(app, args, env={"COLUMNS": "160"})
    assert shown.exit_code == 0, shown.output
    assert "solved: two" in shown.output and "Tasks" in shown.output
    plain = CliRunner().invoke(app, ["report", str(tmp_path / "run")], env={"COLUMNS": "160"})
    assert plain.exit_code == 0 and "solved: two" in plain.output
    assert "Tasks" not in plain.output
    rows = CliRunner().invoke(
        app, ["report", str(tmp_path / "run"), "--per-task"], env={"COLUMNS": "160"}
    )
    assert rows.exit_code == 0
    table = rows.output[rows.output.index("Tasks") :]
    assert "never" in table and "two" in table and "tokens" in table


def test_an_unreachable_model_endpoint_leaves_no_run_folder(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = ["eval", str(data), "--solver", "whole", "--run-dir", str(tmp_path / "r")]
    model = f"openai:m@http://127.0.0.1:{port}/v1"
    result = CliRunner().invoke(app, [*args, "--model", model], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.ray
def test_ray_executor_without_lean_is_one_error_before_the_run(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    run_dir = tmp_path / "r"
    cmd = [sys.executable, "-m", "formalbench", "eval", "example-lean", "--executor", "ray"]
    cmd += ["--workers", "1", "--run-dir", str(run_dir), "--quiet"]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 2, done.stderr[-2000:]
    # Ray logs its own start on stderr; the error is the last line, with no traceback.
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("formalbench: error: Lean 4 is not installed")
    )
    assert "Traceback" not in done.stderr and "ActorDiedError" not in done.stderr
    assert not run_dir.exists()


@pytest.mark.parametrize("show", [False, True])
def test_construction_answer_reaches_the_model_only_with_show_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, show: bool
) -> None:
    formal = (
        "Definition answer : nat.\nAdmitted.\n"
        "Theorem answer_ok : answer + 1 = 3.\nProof.\nAdmitted.\n"
    )
    task = Task(
        id="find",
        language=Language.coq,
        formal=formal,
        kind="evaluation",
        informal={"statement": "Find n with n + 1 = 3.", "solution": "SECRET-ANSWER-2"},
    )
    data = tmp_path / "d.jsonl"
    data.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    with StandinServer() as server:
        server.responder = lambda body: ["```coq\nexact 2.\n```"]
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        spec = f"openai:standin-model@{server.base_url}"
        config = EvalConfig(dataset=str(data), solver="whole", model=spec, show_answer=show)
        run_evaluation(config, tmp_path / "run")
        prompts = [json.dumps(seen.body) for seen in server.requests if seen.body.get("messages")]
    assert prompts
    assert any("SECRET-ANSWER-2" in p for p in prompts) is show
