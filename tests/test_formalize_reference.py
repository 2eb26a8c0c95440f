"""A formalize run whose problem carries a reference statement: BEq and GTED per model (real
coqc, stand-in model over HTTP), in metrics.json, `report`, and beside each candidate in the
dashboard; the comparisons are stored, so a rerun makes none."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.core.formalization import Candidate, CompileRound, Problem
from formalbench.core.records import Language
from formalbench.pipelines.formalize import FormalizeConfig, load_metrics, run_formalize
from formalbench.pipelines.formalize.problems import load_problems
from formalbench.pipelines.formalize.reference import compare_one, reference_table
from formalbench.store.formalize import FormalizeStore
from tests.standins.openai_server import StandinServer

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

REFERENCE = (
    "From Coq Require Import Arith.\nTheorem p (n : nat) (h : 0 < n) : n < 2 ^ n.\nProof. Admitted."
)
SAME = (
    "From Coq Require Import Arith.\nTheorem q (m : nat) (h : m > 0) : 2 ^ m > m.\nProof. Admitted."
)
WEAKER = "From Coq Require Import Arith.\nTheorem q (m : nat) (h : m > 0) : 2 ^ m >= m.\nProof. Admitted."
PROBLEM = {"id": "pow", "informal": "Show that n < 2^n for every n > 0.", "reference": REFERENCE}


def coq(code: str) -> str:
    return f"Here it is.\n```coq\n{code}\n```\n"


def responder(body: dict[str, Any]) -> list[str]:
    """alpha states the reference reformulated, beta a weaker bound; the judges agree."""
    sys_text = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    n = int(body.get("n") or 1)
    if "You turn competition mathematics problems" in sys_text:
        return [coq(SAME if body["model"] == "alpha" else WEAKER)] * n
    if "careful comparison with formal statements" in sys_text:
        return [json.dumps({"data_type": "n: nat", "conditions": ["n > 0"], "proof_goal": "x"})]
    if "You check whether a formal statement" in sys_text:
        return [json.dumps({"aligned": True, "problems": []})]
    if "You help a person who reviews" in sys_text:
        return [json.dumps({"ranking": [], "summary": "both"})]
    return ["?"] * n


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StandinServer(models=("alpha", "beta")) as srv:
        srv.responder = responder
        yield srv


def test_reference_field_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(PROBLEM) + "\n" + json.dumps({"id": "b", "informal": "x"}) + "\n")
    with_ref, without = load_problems(str(path))
    assert with_ref.reference == REFERENCE and "reference" not in with_ref.metadata
    assert without.reference is None


def test_lean_beq_is_unknown_not_false_and_gted_comes_from_text(tmp_path: Path) -> None:
    ref = "theorem p (n : ℕ) (h : 0 < n) : n < 2 ^ n := by sorry"
    cand = Candidate(
        id="p/m/0",
        problem_id="p",
        model="m",
        sample=0,
        language=Language.lean,
        rounds=[CompileRound(round=1, code=ref.replace("n", "k"), compiled=True)],
    )
    got = compare_one(ref, cand, backend=None, language=Language.lean)  # type: ignore[arg-type]
    assert got["beq"] is None and got["gted"] is not None and got["gted"] > 0.5
    with FormalizeStore(tmp_path / "f.sqlite") as store:
        store.add_problems([Problem(id="p", informal="x", reference=ref)])
        store.put_candidate(cand)
        table = reference_table(store, {"m": "m"})
    assert table["m"]["beq"] is None and table["m"]["compiled"] == 1


@needs_coq
@pytest.mark.coq
def test_formalize_run_reports_beq_and_gted_per_model(
    server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = tmp_path / "problems.jsonl"
    problems.write_text(json.dumps(PROBLEM) + "\n", encoding="utf-8")
    context = tmp_path / "context.txt"
    context.write_text("Lemma x : True.\n", encoding="utf-8")
    config = FormalizeConfig(
        problems=str(problems),
        models=[f"openai:{m}@{server.base_url}" for m in ("alpha", "beta")],
        backend="coq",
        samples=1,
        repair_rounds=1,
        context_file=str(context),
        workers=2,
        timeout=60,
    )
    run = tmp_path / "run"
    result = run_formalize(config, run)
    table = result.metrics.reference  # type: ignore[union-attr]
    table = {k.split(":")[-1]: v for k, v in table.items()}
    assert set(table) == {"alpha", "beta"}
    assert table["alpha"]["beq"] == 1 and table["beta"]["beq"] == 0
    assert table["alpha"]["compiled"] == table["beta"]["compiled"] == 1
    assert 0.0 < table["alpha"]["gted_mean"] < 1.0 and 0.0 < table["beta"]["gted_mean"] < 1.0
    assert table["alpha"]["gted_above_0_9"] + table["beta"]["gted_above_0_9"] <= 2
    on_disk = json.loads((run / "metrics.json").read_text())
    assert on_disk["reference"]["openai:alpha"] == table["alpha"]

    # a rerun compares nothing again: the verdicts are in the store
    with FormalizeStore(run / "formalize.sqlite") as store:
        marks = {c.id: store.step_value("pow", f"reference:{c.id}") for c in store.candidates()}
    assert all(m and "digest" in m for m in marks.values())
    from formalbench.pipelines.formalize import reference as module

    calls: list[str] = []
    real = module.compare_one
    monkeypatch.setattr(module, "compare_one", lambda *a, **k: calls.append("x") or real(*a, **k))
    run_formalize(config, run)
    assert calls == [] and load_metrics(run).reference["openai:beta"] == table["beta"]

    out = CliRunner().invoke(app, ["report", str(run), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["reference"]["openai:alpha"]["beq"] == 1
    text = CliRunner().invoke(app, ["report", str(run)])
    assert "against the reference" in text.output and "GTED" in text.output

    from fastapi.testclient import TestClient

    from formalbench.dashboard.app import create_app

    with TestClient(create_app(run, reviewer="ana")) as client:
        page = html.unescape(client.get("/p/pow").text)
    shown = re.findall(r"BEq (yes|no) · GTED (\d\.\d\d)", page)
    assert sorted(b for b, _ in shown) == ["no", "yes"]
    gteds = {f"{table[m]['gted_mean']:.2f}" for m in table}
    assert {g for _, g in shown} == gteds
