"""The whole APE loop on real coqc with a scripted model: instructions, reverse validation,
patches (good, broken, gated, unplaceable, and three that prove False yet compile: issue
23), repair, compile, judge, and the report."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.llm.base import Message
from formalbench.llm.replay import ScriptedCall, ScriptedModel
from formalbench.pipelines.ape.evaluate import synthesize_run
from formalbench.pipelines.ape.filters import counts, diff_lines
from formalbench.pipelines.ape.gitsource import GitRepo
from formalbench.pipelines.ape.judge import vote
from formalbench.pipelines.ape.task import ApeTask, MineConfig
from formalbench.store.ape import ApeStore
from tests.shared_data import DATA, needs_shared
from tests.standins.openai_server import StandinServer

BUNDLE = DATA / "git-histories" / "coq-topology.bundle"
COMMIT, PATH = "40256857a47f", "theories/ZornsLemma/InverseImage.v"


# the APE build and validation on the toolchain are tested on rocq-9.2 by test_ape_layout.py
COQ8_HISTORY = pytest.mark.host(
    "the shipped coq-topology history (written for Coq 8) does not build on Rocq 9.2: `Expected a single focused goal`"
)


@needs_shared
def test_synthesis_drops_superficial_and_unreadable(tmp_path) -> None:
    task = _seed_run(tmp_path)
    superficial = json.dumps(
        {
            "exercises": [
                {
                    "title": "t",
                    "hunk_span": "1-3",
                    "category": "Formatting",
                    "focus": "Software Engineering",
                    "difficulty": "Easy",
                    "nature": "Superficial",
                    "instruction": "Reformat.",
                }
            ]
        }
    )
    assert synthesize_run(tmp_path, ScriptedModel([superficial])).kept == 0
    with ApeStore(tmp_path / "ape.sqlite") as store:
        got = store.get_result(task.id, "synthesize")
        assert got["nature"] == "Superficial" and not got["kept"]
        store.conn.execute("DELETE FROM ape_results")
    bad = json.dumps({"exercises": [{"title": "t", "category": "Cooking"}]})
    assert synthesize_run(tmp_path, ScriptedModel([bad])).kept == 0
    with ApeStore(tmp_path / "ape.sqlite") as store:
        assert "unreadable" in store.get_result(task.id, "synthesize")["reason"]


def test_vote_rule() -> None:
    assert vote([["good"], ["acceptable"], ["poor"], ["excellent"]])
    assert not vote([["good", "poor"], ["acceptable"], [], []])  # a tie fails
    assert not vote([[], [], [], []])


def _seed_run(run_dir) -> ApeTask:
    repo = GitRepo.open(BUNDLE, run_dir)
    sha = repo.git("rev-parse", COMMIT).strip()
    parent = repo.git("rev-parse", f"{sha}^").strip()
    before, after = repo.show(parent, PATH), repo.show(sha, PATH)
    gold = diff_lines(before, after, PATH)
    task = ApeTask(
        id=f"{COMMIT}:{PATH}:0",
        commit_hash=sha,
        parent_commit_hash=parent,
        date="2023-09-15",
        message="m",
        type="feat",
        language="coq",
        change_type="modified",
        file_path_before=PATH,
        file_path_after=PATH,
        content_before=before,
        content_after=after,
        gold_diff="\n".join(gold) + "\n",
        counts=counts(gold),
        filtered_gold_diff="",
        filtered=counts(gold),
    )
    repo.close()
    with ApeStore(run_dir / "ape.sqlite") as store:
        store.set_meta("config", MineConfig().model_dump())
        store.set_meta("source", str(BUNDLE))
        store.set_meta("language", "coq")
        store.put_commit(sha, 0, "feat", [(task.id, None, task.model_dump())])
    return task


CHEATS = (
    "+Program Definition cheat : False := _.\n+Admit Obligations.\n+",
    '+Set Warnings "-local-declaration".\n+Variable cheat : False.\n+',
    "+Context (cheat : False).\n+",
)


def _rule(task: ApeTask):
    gold_body = "\n".join(
        ln for ln in task.gold_diff.splitlines() if not ln.startswith(("---", "+++"))
    )
    gold_no_numbers = "\n".join(
        "@@" if ln.startswith("@@") else ln for ln in gold_body.splitlines()
    )
    broken = gold_no_numbers.replace(
        "\n+", "\n+(* x *) Lemma bad : False. Proof. exact I. Qed.\n+", 1
    )
    gated = gold_no_numbers.replace("\n+", "\n+Axiom cheat : False.\n+", 1)
    patches = [gold_no_numbers, broken, gated, "@@\n+no anchor at all"]
    # compile passes that prove False (issue 23): refused by Coq's assumptions or the gate
    patches += [gold_no_numbers.replace("\n+", "\n" + cheat, 1) for cheat in CHEATS]

    def answer(call: ScriptedCall) -> str:
        system = call.messages[0].content
        if "proof-engineering exercises" in system:
            return json.dumps(
                {
                    "exercises": [
                        {
                            "title": "Strengthen inverse images",
                            "hunk_span": "all",
                            "category": "Feature",
                            "focus": "Mathematical Concepts",
                            "difficulty": "Medium",
                            "nature": "Substantial",
                            "instruction": "Prove the facts about inverse images that the change adds.",
                        }
                    ]
                }
            )
        if "You review changes" in system:
            return '{"TaskEvaluations": {"Task 1": "Good"}, "FinalOverallGrade": "Good"}'
        return f"Plan.\n```diff\n{patches[call.seed]}\n```\n"

    return answer


@needs_shared
@pytest.mark.coq
@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")
@COQ8_HISTORY
def test_full_loop_on_real_coqc(tmp_path, monkeypatch) -> None:
    """Through the CLI and real HTTP: the model is the OpenAI-compatible stand-in server."""
    task = _seed_run(tmp_path)
    rule = _rule(task)

    def respond(body: dict) -> list[str]:
        messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]
        call = ScriptedCall(messages, 0, 1, 0.0, None, None, body.get("seed") or 0, 0)
        return [rule(call)]

    runner = CliRunner()
    with StandinServer() as server:
        server.responder = respond
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        spec = f"openai:standin-model@{server.base_url}"
        res = runner.invoke(app, ["ape", "synthesize", str(tmp_path), "--model", spec])
        assert res.exit_code == 0, res.output
        assert "1 tasks kept" in res.stdout
        res = runner.invoke(app, ["ape", "eval", str(tmp_path), "--model", spec, "--samples", "7"])
        assert res.exit_code == 0, res.output
        assert "1 tasks with at least one judged pass" in res.stdout
    with ApeStore(tmp_path / "ape.sqlite") as store:
        result = store.get_result(task.id, "eval")["samples"]
    assert [s["applied"] for s in result] == [True, True, True, False, True, True, True]
    assert [s["compiled"] for s in result] == [True] + [False] * 6
    assert result[1]["check"]["errors"] and "gate" in result[2]
    assert result[0]["apply"]["repaired_hunks"] >= 1  # headers without line numbers
    assert result[0]["check"]["complete"] and result[0]["check"]["baseline"] == "coq"
    obligation = result[4]["check"]  # Program Definition cheat : False := _. Admit Obligations.
    assert "Candidate.cheat_obligation_1" in obligation["new_axioms"] and obligation["new_holes"]
    assert "Candidate.cheat" in obligation["declarations"]["added"]
    assert any("Set Warnings" in g for g in result[5]["gate"])  # never reaches coqc
    assert result[6]["check"]["new_axioms"] == ["Candidate.cheat"]  # a top-level Context
    res = runner.invoke(app, ["report", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["kind"] == "ape" and report["benchmark_tasks"] == 1
    figures = report["pass_at_k"]
    assert figures["compile_pass@1"] == round(1 / 7, 4) == figures["judge_pass@1"]
    assert figures["compile_pass@2"] == round(2 / 7, 4) and figures["semantic_drop@1"] == 0.0
    assert report["by_category"]["Feature"]["tasks"] == 1
    answers = {a["sample"]: a for a in report["answers"]}
    assert "Candidate.cheat" in answers[4]["declarations"]["added"]
    assert answers[4]["refused"] and answers[6]["refused"] and not answers[0]["refused"]
    summary = report["answer_summary"]
    assert summary["answers"] == 7 and summary["compiled"] == 1
    assert summary["not_complete_because"]["new axiom"] == 2  # the obligation, the Context
    assert (
        summary["not_complete_because"]["gate"] == 2
        and summary["answers_that_added_declarations"] >= 2
    )
