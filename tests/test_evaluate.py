"""The evaluation harness end to end: real coqc, real SQLite, real HTTP to a stand-in model.

The dataset is written by each test: a Coq task the portfolio proves (`lia`), one it cannot
(a false statement), and one a model answers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.errors import FormalbenchError
from formalbench.core.records import Language, Task
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.run_config import EvalConfig, Selection
from formalbench.pipelines.run_files import RunFiles, load_summary
from formalbench.store.runs import RunStore
from tests.standins.openai_server import Reply, StandinServer

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

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


def test_portfolio_run_solves_the_easy_task_and_rerun_does_nothing(tmp_path: Path) -> None:
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
    assert log["versions"]["backend"].startswith("coq 8.")


def test_changed_config_on_the_same_run_dir_is_refused(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    run_evaluation(EvalConfig(dataset=str(data)), tmp_path / "run")
    changed = EvalConfig(dataset=str(data), selection=Selection(pattern="t*"))
    with pytest.raises(FormalbenchError, match="selection"):
        run_evaluation(changed, tmp_path / "run")


def test_whole_proof_sampling_over_real_http(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL, "never": FALSE})

    def answer(body: dict) -> list[str]:
        prompt = body["messages"][-1]["content"]
        proof = "reflexivity." if "Theorem two" in prompt else "intros. assumption."
        return [f"```coq\nProof.\n  {proof}\nQed.\n```"] * int(body.get("n", 1) or 1)

    with StandinServer() as server:
        server.responder = answer
        spec = f"openai:standin-model@{server.base_url}"
        os.environ["OPENAI_API_KEY"] = "test-key"
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


def test_run_token_budget_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    formals = {f"t{i}": REFL.replace("two", f"t{i}") for i in range(4)}
    data = write_dataset(tmp_path / "d.jsonl", formals)
    proof = ["```coq\nProof. reflexivity. Qed.\n```"]
    with StandinServer() as server:
        # Each answer reports 2,010 tokens: a 2,600-token run budget pays for two attempts.
        server.script(*[Reply(texts=proof, usage=(2000, 10)) for _ in range(4)])
        server.responder = lambda body: proof
        os.environ["OPENAI_API_KEY"] = "test-key"
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
        (["--backend", "nonsense"], "nonsense"),
        (["--solver", "whole"], "needs a model"),
        (["--model", "nosuch:model", "--solver", "whole"], "unknown provider"),
        (["--executor", "spark"], "--executor"),
    ],
)
def test_bad_options_are_one_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    data = write_dataset(tmp_path / "d.jsonl", {"two": REFL})
    result = CliRunner().invoke(app, ["eval", str(data), "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_lean_backend_without_toolchain_is_exit_2_before_the_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(Path(__file__).parents[2] / "shared/data/minif2f-lean4/minif2f_deepseek_v15.jsonl"),
            "--run-dir",
            str(tmp_path / "r"),
            "--sample-tasks",
            "2",
        ],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "lean" in result.output.lower() and "Traceback" not in result.output
    assert not (tmp_path / "r" / "run.sqlite").exists()


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
    assert summary.run_info["versions"]["backend"].startswith("coq 8.")
