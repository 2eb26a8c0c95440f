"""GTED against the published data: the authors' 205 scores from their trees, agreement from
our parser, the BEq human pairs, and `formalbench metrics gted`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.comparison.beq_human import beq_human_pairs
from formalbench.comparison.gted_pairs import read_pairs, score_pairs, summarize
from formalbench.core.errors import InputError
from formalbench.metrics.gted import engines, gted, tree_edit_distance
from formalbench.metrics.optree import tree_from_json
from tests.shared_data import DATA, needs_shared

PAIRS = DATA / "gted-minif2f.jsonl"


@needs_shared
def test_the_authors_205_scores_are_reproduced_from_their_trees() -> None:
    records = read_pairs(PAIRS)
    assert len(records) == 205
    pairs = list(score_pairs(records))
    wrong = [
        (p.name, p.gted, r["reference_gted"])
        for p, r in zip(pairs, records, strict=True)
        if round(p.gted, 2) != round(r["reference_gted"], 2)
    ]
    assert wrong == []
    summary = summarize(pairs)
    # the authors' own threshold sweep on the same pairs (their paper: t=0.754, kappa 0.438)
    assert summary["in_sample"]["threshold"] == pytest.approx(0.754)
    assert summary["in_sample"]["kappa"] == pytest.approx(0.438, abs=5e-4)
    assert summary["cross_validated"]["kappa"] < summary["in_sample"]["kappa"]


@needs_shared
def test_the_default_engine_gives_apted_distances_on_all_205_pairs() -> None:
    records = read_pairs(PAIRS)
    for r in records:
        a, b = tree_from_json(r["label_tree"]), tree_from_json(r["prediction_tree"])
        assert tree_edit_distance(a, b, "zhang-shasha") == tree_edit_distance(a, b, "apted")


@needs_shared
def test_apted_and_edist_agree() -> None:
    if "edist" not in engines():
        pytest.skip("edist not installed (optional gted-fast extra)")
    records = read_pairs(PAIRS)[:12]
    for r in records:
        a, b = tree_from_json(r["label_tree"]), tree_from_json(r["prediction_tree"])
        assert gted(a, b, "apted") == gted(a, b, "edist")


@needs_shared
def test_from_text_every_minif2f_statement_parses_and_agrees_with_humans() -> None:
    pairs = list(score_pairs(read_pairs(PAIRS), from_text=True))
    summary = summarize(pairs)
    assert summary["unparseable"] == 0
    assert all(p.source == "text" for p in pairs)
    assert summary["cross_validated"]["kappa"] > 0.2


@needs_shared
def test_beq_human_pairs_score_without_crashing() -> None:
    records = beq_human_pairs(DATA / "beq-human")
    assert len(records) == 200 and sum(r["human_equivalent"] for r in records) == 70
    pairs = list(score_pairs(records, from_text=True))
    summary = summarize(pairs)
    assert summary["pairs"] == 200
    assert summary["unparseable"] == sum(1 for p in pairs if p.error)
    assert summary["scored"] >= 150  # what the grammar covers of ProofNet's Mathlib statements


def test_cli_json_and_bad_input(tmp_path: Path) -> None:
    lines = [
        {
            "name": "same",
            "label_statement": "theorem a (x : ℕ) (h : 0 < x) : x ≠ 0 := sorry",
            "prediction_statement": "theorem b (y : ℕ) (hy : 0 < y) : y ≠ 0 := by sorry",
            "human_equivalent": True,
        },
        {
            "name": "weaker",
            "label_statement": "theorem a (x : ℕ) (h : 0 < x) : x ≠ 0 := sorry",
            "prediction_statement": "theorem b (x : ℕ) : x + 0 = x := by sorry",
            "human_equivalent": False,
        },
        {
            "name": "broken",
            "label_statement": "theorem a : (x + := sorry",
            "prediction_statement": "theorem b : x = x := sorry",
        },
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    result = CliRunner().invoke(app, ["metrics", "gted", str(path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    scores = {p["name"]: p["gted"] for p in out["pairs"]}
    assert scores["same"] == 1.0 and scores["weaker"] < 0.7 and scores["broken"] is None
    assert out["summary"]["unparseable"] == 1 and out["summary"]["labelled"] == 2
    table = CliRunner().invoke(app, ["metrics", "gted", str(path)])
    assert table.exit_code == 0 and "unparseable" in table.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"name": 1}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["metrics", "gted", str(bad), "--json"])
    assert result.exit_code == 2
    with pytest.raises(InputError):
        read_pairs(tmp_path / "missing.jsonl")
