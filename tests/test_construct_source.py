"""The source stages of `formalbench construct` on exercises built here (phase 1's records),
with a model stand-in answering by prompt, recorded and then replayed: every stage's output,
the funnel per pool, format failures recorded, resume without asking twice, the report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.construct import Pool, ReviewFlag, ReviewLabel, SourceReview
from formalbench.core.errors import InputError
from formalbench.llm import RecordingModel, ReplayModel, ScriptedModel
from formalbench.pipelines.construct.config import STEPS, ConstructConfig, parse_model_options
from formalbench.pipelines.construct.context import problem_with_context
from formalbench.pipelines.construct.repair import repair_pool
from formalbench.pipelines.construct.report import construct_report
from formalbench.pipelines.construct.runner import run_construct
from formalbench.pipelines.construct.session import SourceSession
from formalbench.pipelines.construct.source import run_source_stages
from formalbench.store.construct import ConstructStore
from tests.construct_fixtures import answer, exercises, write_jsonl


def scripted(**kw) -> ScriptedModel:
    def rule(call) -> str:
        msgs = call.messages
        system = msgs[0].content if msgs and msgs[0].role == "system" else ""
        user = next(m.content for m in msgs if m.role == "user")
        return answer(system, user, "\n".join(m.content for m in msgs))

    return ScriptedModel(rule, takes_schema=True, **kw)


def config(source: Path, **kw) -> ConstructConfig:
    return ConstructConfig(source=str(source), stop_after="source", concurrency=2, **kw)


@pytest.fixture
def recorded(tmp_path: Path):
    """One run of the source stages with the scripted stand-in, recorded to a replay file."""
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    model = scripted()
    recorder = RecordingModel(model, tmp_path / "replay.jsonl")
    result = run_construct(
        config(source), tmp_path / "run", models={s: recorder for s in STEPS[:-1]}
    )
    return source, tmp_path / "replay.jsonl", result, model


def test_every_stage_and_the_funnel_per_pool(recorded, tmp_path: Path) -> None:
    source, replay_file, first, _ = recorded
    # the replay model answers the same run again, with no stand-in behind it
    models = {"replay": f"replay:{replay_file}"}
    cfg = config(source, models={s: models["replay"] for s in STEPS})
    result = run_construct(cfg, tmp_path / "again")
    assert (result.exercises, result.problems, result.usable) == (5, 5, 2)
    with ConstructStore(tmp_path / "again" / "construct.sqlite") as store:
        problems = {p.id: (p, failed) for p, failed in store.problems()}
        steps = dict((step.step, step) for eid, step in store.steps() if eid == "book/E1")
    e1, failed = problems["book/E1"]
    assert failed is None and e1.usable
    assert e1.problem_clean == "ACCEPT: Show A is invertible using Theorem T1."  # hint gone
    # bottom-up: D1 rewritten inside T1, T1 inside the exercise
    assert e1.problem_standardized_math.startswith("N<exercise Exercise E1: ACCEPT")
    assert "N<theorem T1: Nonsingular" in e1.problem_standardized_math
    assert "[N<definition D1: A matrix" in e1.problem_standardized_math
    # conditions folded deepest hop first, the exercise itself last
    assert e1.problem_finally.endswith("[hop 2] [hop 1] [hop 0]")
    assert "[definition D1 | hop 2" in e1.problem_with_context
    assert [r.label for r in e1.reviews] == [ReviewLabel.accept]
    assert set(steps) >= {"clean", "naturalize:root", "conditions:2", "review:OI"}
    assert steps["clean"].prompt_hash and steps["clean"].model.startswith("replay:")
    assert steps["review:OI"].tokens.total > 0

    e2, _ = problems["book/E2"]  # revise -> repaired -> accepted (pool RI)
    assert [(r.label, r.pool, r.round) for r in e2.reviews] == [
        (ReviewLabel.revise, Pool.original, 1),
        (ReviewLabel.accept, Pool.revised, 2),
    ]
    assert e2.usable and e2.problem_finally.startswith("repaired: ")
    e3, failed3 = problems["book/E3"]  # hold on an unresolved reference: not repaired
    assert not e3.usable and failed3 is None and len(e3.reviews) == 1
    assert e3.reviews[0].flags == [ReviewFlag.missing_dependency]
    e4, _ = problems["book/E4"]  # hold (unsuitable) -> repaired -> held again (pool HI)
    assert [(r.label, r.pool) for r in e4.reviews] == [
        (ReviewLabel.hold, Pool.original),
        (ReviewLabel.hold, Pool.held),
    ]
    e5, failed5 = problems["book/E5"]  # cleaning returned the input unchanged, twice
    assert failed5 == "clean" and not e5.usable and e5.problem_clean is None

    shape = result.funnel
    assert shape is not None
    assert (shape.reviewed, shape.accepted, shape.revised, shape.held) == (4, 1, 1, 2)
    assert (shape.usable, shape.repaired, shape.dropped) == (2, 2, 1)
    assert shape.usable_fraction == 0.5 and shape.failed == {"clean": 1}
    assert shape.pools["OI"].hold_reasons == {"missing_dependency": 1, "unsuitable": 1}
    assert shape.pools["OI"].revise_reasons == {"missing_assumption": 1}
    assert (shape.pools["RI"].items, shape.pools["RI"].accept) == (1, 1)
    assert (shape.pools["HI"].items, shape.pools["HI"].hold) == (1, 1)
    assert first.funnel == shape  # the recorded run and its replay agree


def test_format_failure_is_recorded_with_the_reply_and_the_error(recorded) -> None:
    _, _, _, model = recorded
    with ConstructStore(Path(recorded[2].run_dir) / "construct.sqlite") as store:
        record = store.step("book/E5", "clean")
        counts = store.step_counts()
    assert record is not None and not record.ok and record.output is None
    assert record.attempts == 2 and "unchanged" in (record.error or "")
    assert "BROKEN" in record.raw and counts["format_failure"] == 1
    # the re-ask showed the model why its reply was refused
    reasks = [c for c in model.calls if any("could not be used" in m.content for m in c.messages)]
    assert len(reasks) == 1 and "unchanged" in reasks[0].messages[-1].content


def test_rerun_of_a_finished_run_asks_nothing(recorded, tmp_path: Path) -> None:
    source, _, first, model = recorded
    before = len(model.calls)
    again = run_construct(config(source), tmp_path / "run", models={s: model for s in STEPS[:-1]})
    assert len(model.calls) == before and again.funnel == first.funnel
    log = json.loads((tmp_path / "run" / "construct.json").read_text())
    assert log["status"] == "finished" and log["steps_asked_this_session"] == 0
    assert "construct_review" in log["prompt_hashes"]


def test_a_stage_resumes_from_its_stored_steps(tmp_path: Path) -> None:
    """Stop in the middle of an exercise (the model fails at the review), then resume:
    the finished steps are read back, only the rest is asked."""
    e1 = exercises()[0]
    failing = ScriptedModel(lambda call: (_ for _ in ()).throw(RuntimeError("down")))
    model = scripted()
    with ConstructStore(tmp_path / "construct.sqlite") as store:
        store.put_exercises([e1], {"exercises": 1})
        models = {s: model for s in STEPS}
        session = SourceSession(store=store, models={**models, "review": failing})
        with pytest.raises(RuntimeError):
            asyncio.run(run_source_stages(session, 0, e1))
        asked = len(model.calls)
        assert store.problem(e1.id) is None and asked == 7  # clean, 3 naturalize, 3 conditions
        session = SourceSession(store=store, models=models)
        problem = asyncio.run(run_source_stages(session, 0, e1))
        assert len(model.calls) == asked + 1  # only the review
        assert problem.usable and store.problem(e1.id) == problem


def test_model_options_and_bad_input(tmp_path: Path) -> None:
    assert parse_model_options(["openai:m"]) == {s: "openai:m" for s in STEPS}
    mixed = parse_model_options(["openai:m", "review=anthropic:c@http://h:1/v1"])
    assert mixed["review"] == "anthropic:c@http://h:1/v1" and mixed["clean"] == "openai:m"
    for bad, why in (
        (["openai:a", "openai:b"], "second plain model"),
        (["revue=openai:a"], "unknown step 'revue'"),
        (["review=openai:a"], r"no model for step\(s\) clean"),
    ):
        with pytest.raises(InputError, match=why):
            parse_model_options(bad)
    broken = tmp_path / "bad.jsonl"
    broken.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl, line 1: not an extracted exercise"):
        run_construct(config(broken), tmp_path / "r", models={s: scripted() for s in STEPS})


def test_context_keeps_provenance_and_unresolved_references() -> None:
    e1, _, e3 = exercises()[:3]
    text = problem_with_context(e1.expansion, "clean text")
    assert text.startswith("clean text\n\nContext from the textbook:")
    assert "[theorem T1 | hop 1, via T1]" in text and "[definition D1 | hop 2 in T1]" in text
    assert "Unresolved references (not found in the textbook): ZZ" in problem_with_context(
        e3.expansion, "c"
    )
    cut = e1.expansion.model_copy(update={"truncated": ["NMUS"]})
    assert "not expanded (depth budget or cycle): NMUS" in problem_with_context(cut, "c")
    # a hold for a missing dependency is repaired only when the expansion is complete
    hold = SourceReview(label=ReviewLabel.hold, flags=[ReviewFlag.missing_dependency])
    assert repair_pool(hold, e1) == Pool.held
    assert repair_pool(hold, e1.model_copy(update={"expansion": cut})) is None
    assert repair_pool(hold, e3) is None
    unsuitable = SourceReview(label=ReviewLabel.hold, flags=[ReviewFlag.unsuitable])
    assert repair_pool(unsuitable, e3) == Pool.held


def test_report_json_tables_and_html(recorded) -> None:
    run_dir = recorded[2].run_dir
    runner = CliRunner()
    out = runner.invoke(app, ["report", str(run_dir), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    expected = {
        "kind": "construct",
        "exercises": 5,
        "references": 2,
        "resolved_references": 1,
        "reviewed": 4,
        "accepted": 1,
        "revised": 1,
        "held": 2,
        "usable": 2,
        "blocks": 0,
        "blocks_compiled": 0,
        "instances": 0,
        "tasks_file": None,
    }
    assert {k: data[k] for k in expected} == expected
    assert data["format_failures"] == 1
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 1 and "</svg>" in page
    assert '<td>usable (after repair)</td><td class="num">2</td>' in page
    assert "<td>HI</td>" in page
    tables = runner.invoke(app, ["report", str(run_dir)])
    assert tables.exit_code == 0 and "source review per pool" in tables.output
    assert construct_report(run_dir).funnel.pools["HI"].hold == 1


def test_extract_only_needs_no_model_and_other_settings_are_refused(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises())
    runner = CliRunner()
    run = tmp_path / "run"
    out = runner.invoke(
        app, ["construct", str(source), "--extract-only", "--run-dir", str(run), "--quiet"]
    )
    assert out.exit_code == 0, out.output
    assert construct_report(run).exercises == 5 and construct_report(run).reviewed == 0
    other = runner.invoke(
        app,
        ["construct", str(source), "--extract-only", "--limit", "2", "--run-dir", str(run)],
    )
    assert other.exit_code == 2 and "other settings (limit)" in other.output
    missing = runner.invoke(app, ["construct", str(source), "--run-dir", str(tmp_path / "x")])
    assert missing.exit_code == 2 and "--model is needed" in missing.output


def test_replay_without_a_recording_is_a_model_error_not_a_crash(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ex.jsonl", exercises()[:1])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    model = ReplayModel(empty)
    result = run_construct(config(source), tmp_path / "run", models={s: model for s in STEPS})
    assert result.problems == 0 and result.incomplete
    assert "no recorded response" in result.incomplete[0]


def test_formal_phase_gets_the_usable_problems_and_its_figures_reach_the_report(
    recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call into phase 3 follows the contract of CONSTRUCT.md: the usable problems, the
    run's settings, and its `FormalResult` read back into the report. Phase 3's own work is
    tested in test_construct_formal.py and, with the runner, in test_construct_e2e.py; here
    only its entry point is replaced, so that no model or assistant is needed."""
    from formalbench.pipelines.construct import formal

    seen: dict = {}

    async def run_formal_stages(problems, *, backend, model, run_dir, config, progress=None):
        seen.update(ids=[p.id for p in problems], backend=backend.name, model=model.spec)
        seen.update(rounds=(config.repair_rounds, config.review_rounds), run_dir=run_dir)
        seen.update(concurrency=config.concurrency, timeout=config.timeout)
        progress("blocks", 1, 1)
        (run_dir / "tasks.jsonl").write_text("{}\n", encoding="utf-8")
        return formal.FormalResult(
            blocks=3,
            blocks_compiled=2,
            instances=2,
            tasks=1,
            tasks_file=run_dir / "tasks.jsonl",
            instances_dir=run_dir / "instances",
        )

    monkeypatch.setattr(formal, "run_formal_stages", run_formal_stages)

    source, _, _, model = recorded
    steps: list[tuple[str, int, int]] = []
    cfg = config(source).model_copy(update={"stop_after": "formal", "repair_rounds": 2})
    run_dir = tmp_path / "run"  # the recorded run: its source stages are all stored
    result = run_construct(
        cfg, run_dir, lambda *a: steps.append(a), models={s: model for s in STEPS}
    )
    assert seen["ids"] == ["book/E1", "book/E2"]  # the usable problems, in book order
    assert seen["backend"] == "coq" and seen["model"] == "scripted"
    assert seen["rounds"] == (2, 8) and seen["run_dir"] == run_dir
    assert (seen["concurrency"], seen["timeout"]) == (cfg.concurrency, cfg.timeout)
    assert ("formal: blocks", 1, 1, 0) in steps and result.formal is not None
    report = construct_report(run_dir)
    assert (report.blocks, report.blocks_compiled, report.instances) == (3, 2, 2)
    assert report.tasks_file == str(run_dir / "tasks.jsonl") and report.stop_after == "formal"
    assert report.tasks == 1
