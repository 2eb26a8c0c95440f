"""A compile pass in APE cannot be forged (issue 23, item 1), on real coqc.

Through `formalbench ape eval` with the OpenAI-compatible stand-in server as the model:
`Program Definition cheat : False := _. Admit Obligations.` and a top-level `Variable` /
`Context` under `Set Warnings` are never `compiled`, while the gold edit still is; the
results and `report` say which declarations were added or changed.
"""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from formalbench.backends.coq import CoqBackend
from formalbench.cli.main import app
from formalbench.pipelines.ape.completeness import judge_completeness, read_view
from formalbench.store.ape import ApeStore
from tests.shared_data import needs_shared
from tests.standins.openai_server import StandinServer
from tests.test_ape_loop import _seed_run

coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")

OBLIGATION = "+Program Definition cheat : False := _.\n+Admit Obligations.\n+"
VARIABLE = '+Set Warnings "-local-declaration".\n+Variable cheat : False.\n+'
CONTEXT = "+Context (cheat : False).\n+"


@needs_shared
@pytest.mark.coq
@coq
def test_forged_compile_passes_are_refused_through_ape_eval(tmp_path, monkeypatch) -> None:
    task = _seed_run(tmp_path)
    with ApeStore(tmp_path / "ape.sqlite") as store:
        store.put_result(
            task.id,
            "synthesize",
            {"kept": True, "instruction": "Do the change.", "category": "Feature"},
        )
    gold = "\n".join(
        "@@" if ln.startswith("@@") else ln
        for ln in task.gold_diff.splitlines()
        if not ln.startswith(("---", "+++"))
    )
    patches = [gold] + [
        gold.replace("\n+", "\n" + cheat, 1) for cheat in (OBLIGATION, VARIABLE, CONTEXT)
    ]

    def respond(body: dict) -> list[str]:
        if "You review changes" in body["messages"][0]["content"]:
            return ['{"TaskEvaluations": {"Task 1": "Good"}, "FinalOverallGrade": "Good"}']
        return [f"Here it is.\n```diff\n{patches[body.get('seed') or 0]}\n```\n"]

    runner = CliRunner()
    with StandinServer() as server:
        server.responder = respond
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        spec = f"openai:standin-model@{server.base_url}"
        res = runner.invoke(app, ["ape", "eval", str(tmp_path), "--model", spec, "--samples", "4"])
        assert res.exit_code == 0, res.output
    with ApeStore(tmp_path / "ape.sqlite") as store:
        samples = store.get_result(task.id, "eval")["samples"]
    assert [s["applied"] for s in samples] == [True] * 4
    assert [s["compiled"] for s in samples] == [True, False, False, False]
    assert samples[0]["check"]["complete"] and samples[0]["check"]["baseline"] == "coq"
    obligation = samples[1]["check"]
    assert "Candidate.cheat_obligation_1" in obligation["new_axioms"]
    assert obligation["new_holes"] and "Candidate.cheat" in obligation["declarations"]["added"]
    assert any("Set Warnings" in g for g in samples[2]["gate"])  # never reaches coqc
    context = samples[3]["check"]
    assert context["new_axioms"] == ["Candidate.cheat"] and not context["complete"]
    res = runner.invoke(app, ["report", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["pass_at_k"]["compile_pass@1"] == 0.25
    answers = {a["sample"]: a for a in report["answers"]}
    assert "Candidate.cheat" in answers[1]["declarations"]["added"]
    assert answers[1]["refused"] and not answers[0]["refused"]


@coq
def test_silenced_variable_is_an_axiom_coq_reports() -> None:
    """Even with its warning silenced (as if the gate let it through), Coq's assumptions of
    the file name the variable: the axiom check alone refuses it; a changed statement and an
    added lemma are reported, not refused."""
    backend = CoqBackend(timeout=60, workers=1)
    before = "Lemma foo : 1 = 1. Proof. reflexivity. Qed.\nLemma old : 2 = 2. Admitted.\n"
    base = read_view(backend, before, 60)
    assert base.problem is None and base.holes == ["old"]
    silenced = 'Set Warnings "-all".\nVariable cheat : False.\n' + before
    verdict = judge_completeness(base, read_view(backend, silenced, 60))
    assert not verdict["complete"] and verdict["new_axioms"] == ["Candidate.cheat"]
    edited = before.replace("1 = 1", "2 = 2") + "Lemma extra : 3 = 3. Proof. reflexivity. Qed.\n"
    verdict = judge_completeness(base, read_view(backend, edited, 60))
    assert verdict["complete"], verdict["reasons"]  # `old` keeps the hole it had
    assert verdict["declarations"] == {
        "changed": ["Candidate.foo"],
        "removed": [],
        "added": ["Candidate.extra"],
    }
    dropped = before.replace("Lemma old : 2 = 2. Admitted.\n", "")
    later = "Lemma new : 4 = 4. Admitted.\n"
    verdict = judge_completeness(base, read_view(backend, dropped + later, 60))
    assert not verdict["complete"] and verdict["new_holes"] == ["new"]
    assert verdict["declarations"]["removed"] == ["Candidate.old"]
