"""`formalbench construct` says when it did not do what it was asked, as `eval` does: an
empty selection is exit 2 and writes nothing; contradictory options are refused; a run
with exercises left unfinished says why and exits 1 (it used to print "stopped after
formal" for a run that never left the source stages, and exit 0); a formal stage in which
every model reply was unreadable counts each one in `format_failures`, prints one line per
failed stage at the end and in `report` (text and `--json`), and exits 1.

The model stand-in answers the source stages as in test_construct_source and the block
split without a `thm` block; it is recorded once and the commands replay the recording.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.llm import RecordingModel, ScriptedModel
from formalbench.pipelines.construct.config import STEPS, ConstructConfig
from formalbench.pipelines.construct.runner import run_construct
from tests.construct_fixtures import answer, exercises, write_jsonl

runner = CliRunner()
NO_THM = "no `thm` block in the model's plan"


def _no_thm_plans(call) -> str:
    msgs = call.messages
    system = msgs[0].content if msgs and msgs[0].role == "system" else ""
    user = next(m.content for m in msgs if m.role == "user")
    if "You prepare textbook exercises" in system:  # the block split: a plan with no theorem
        return json.dumps({"blocks": [{"kind": "defn", "content": "A thing.", "term": "d"}]})
    return answer(system, user, "\n".join(m.content for m in msgs))


def _construct(*args: str):
    return runner.invoke(app, ["construct", *args])


def test_an_empty_selection_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    run = tmp_path / "run"
    out = _construct(str(source), "--extract-only", "--pattern", "zzz*", "--run-dir", str(run))
    assert out.exit_code == 2, out.output
    assert "--pattern 'zzz*': no exercise of" in out.output and "nothing to construct" in out.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    out = _construct(str(empty), "--model", f"replay:{empty}", "--run-dir", str(run))
    assert out.exit_code == 2 and "empty.jsonl: no exercises in it" in out.output
    assert not run.exists()  # the extraction of a new run is made before its folder


def test_contradictory_options_are_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    run = str(tmp_path / "run")
    out = _construct(str(source), "--extract-only", "--stop-after", "source", "--run-dir", run)
    assert out.exit_code == 2
    assert "--extract-only and --stop-after source contradict each other" in out.output
    out = _construct(str(source), "--extract-only", "--model", "openai:m", "--run-dir", run)
    assert out.exit_code == 2 and "--model is not used when only extracting" in out.output
    ok = _construct(str(source), "--extract-only", "--stop-after", "extract", "--run-dir", run)
    assert ok.exit_code == 0, ok.output


def test_unfinished_source_stages_say_why_and_exit_1(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises()[:2])
    empty = tmp_path / "nothing-recorded.jsonl"
    empty.write_text("", encoding="utf-8")
    run = tmp_path / "run"
    out = _construct(str(source), "--model", f"replay:{empty}", "--run-dir", str(run))
    assert out.exit_code == 1, out.output
    assert "unfinished: book/E1:" in out.output and "no recorded response" in out.output
    assert "unfinished: 2 exercise(s) of the source stages" in out.output
    assert "stopped after formal" not in out.output
    log = json.loads((run / "construct.json").read_text())
    assert log["status"] == "incomplete" and log["stopped_after"] == "extract"
    report = json.loads(_construct_report(run))
    assert report["failed_stages"][0]["stage"] == "source"
    assert report["failed_stages"][0]["failed"] == report["failed_stages"][0]["total"] == 2


def _construct_report(run: Path) -> str:
    out = runner.invoke(app, ["report", str(run), "--json"])
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
def test_a_formal_stage_with_every_plan_unreadable_fails_visibly(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    recording = tmp_path / "replay.jsonl"
    model = RecordingModel(ScriptedModel(_no_thm_plans, takes_schema=True), recording)
    config = ConstructConfig(source=str(source), concurrency=2)
    first = run_construct(config, tmp_path / "recorded", models={s: model for s in STEPS})
    assert first.usable == 2 and [f.stage for f in first.failed_stages] == ["formal"]

    run = tmp_path / "run"
    out = _construct(str(source), "--model", f"replay:{recording}", "--run-dir", str(run))
    assert out.exit_code == 1, out.output
    lines = out.output.splitlines()
    # a whole stage failed: an error line; the source stage lost one exercise: a warning
    (error,) = [ln for ln in lines if ln.startswith("error: formal:")]
    assert error.startswith("error: formal: 2 of 2 exercises failed: ") and NO_THM in error
    assert any(ln.startswith("warning: source: 1 of 5 exercises failed: ") for ln in lines)
    report = json.loads(_construct_report(run))
    # 1 unreadable cleaning (source) + 2 unreadable block plans (formal)
    assert report["format_failures"] == 3 and report["blocks"] == 0
    formal = next(f for f in report["failed_stages"] if f["stage"] == "formal")
    assert formal["failed"] == formal["total"] == 2 and NO_THM in next(iter(formal["reasons"]))
    text = runner.invoke(app, ["report", str(run), "--html"]).output
    assert "failed: formal: 2 of 2 exercises failed:" in text
    assert "format failures (unusable replies)" in text
    assert "<li>formal: 2 of 2 exercises failed:" in (run / "report.html").read_text()
