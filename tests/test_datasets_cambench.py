"""The published CAM-Bench record format (optpku/CAM-Bench README; paper App. A.1 / C.1),
read from JSON and JSONL files written here in the documented layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formalbench.core.errors import InputError
from formalbench.core.records import Language
from formalbench.datasets.importers import RowError, from_cambench_row, is_cambench_row
from formalbench.datasets.loader import load_tasks

LEAN_FILE = """import Mathlib

open Matrix

/- [BLOCK Exercise 3.12 | 5 | opt_prob] -/
def traceObjective {n : ℕ} (X : Matrix (Fin n) (Fin n) ℝ) : ℝ := Matrix.trace X

/- [BLOCK Exercise 3.12 | 6 | thm] -/
theorem trace_nonneg_of_posSemidef {n : ℕ} (X : Matrix (Fin n) (Fin n) ℝ)
    (hX : X.PosSemidef) : 0 ≤ traceObjective X := by
  sorry

/- [BLOCK Exercise 3.12 | 7 | thm] -/
theorem trace_add {n : ℕ} (X Y : Matrix (Fin n) (Fin n) ℝ) :
    traceObjective (X + Y) = traceObjective X + traceObjective Y := by
  sorry
"""

RECORD = {
    "id": "cvx_3_12",
    "formal statement": LEAN_FILE,
    "Natural language statement": "Show that the trace of a PSD matrix is nonnegative ...",
    "benchmark": "CAM-Bench",
    "source book": "Convex Optimization Additional Exercises",
    "chapter": "3",
    "exercise": "Exercise 3.12",
    "type tags": ["convex optimization", "matrix analysis"],
}


def test_a_record_becomes_a_lean_task_with_every_field() -> None:
    assert is_cambench_row(RECORD)
    task = from_cambench_row(RECORD)
    assert task.id == "cvx_3_12" and task.language == Language.lean
    assert task.source == "CAM-Bench"
    assert task.header.startswith("import Mathlib") and "open Matrix" in task.header
    assert task.formal.count("sorry") == 2  # two holes: solved only when both are filled
    assert "[BLOCK Exercise 3.12 | 6 | thm]" in task.formal
    assert task.informal.statement.startswith("Show that the trace")
    assert task.labels == {
        "book": "Convex Optimization Additional Exercises",
        "chapter": "3",
        "exercise": "Exercise 3.12",
        "category": "convex optimization,matrix analysis",
    }


def test_spellings_and_nesting_are_read_alike() -> None:
    other = {
        "problem_id": "cvx_3_12",
        "formal_statement": LEAN_FILE,
        "informal_statement": RECORD["Natural language statement"],
        "source": {"book": RECORD["source book"], "chapter": 3, "exercise": "Exercise 3.12"},
        "tags": "convex optimization, matrix analysis",
    }
    assert from_cambench_row(other) == from_cambench_row(RECORD)
    # the construction records of the paper: source "book/<name>_Chp<n>", source_idx
    built = {
        "index": 3,
        "source": "book/Numerical Optimization_Chp16",
        "source_idx": "Exercise 16.24-(a)",
        "problem_finally": "Prove ...",
        "lean_code": LEAN_FILE,
    }
    task = from_cambench_row(built)
    assert task.id == "3" and task.informal.statement == "Prove ..."
    assert task.labels == {
        "book": "Numerical Optimization",
        "chapter": "16",
        "exercise": "Exercise 16.24-(a)",
    }


@pytest.mark.parametrize(
    "change, message",
    [
        ({"id": None}, "missing field 'id'"),
        ({"formal statement": LEAN_FILE.replace("sorry", "simp")}, "has no hole"),
        ({"type tags": [1, 2]}, "type_tags"),
        ({"id": ["x"]}, "must be a string"),
    ],
)
def test_a_bad_record_is_a_one_line_row_error(change: dict, message: str) -> None:
    row = {k: v for k, v in {**RECORD, **change}.items() if v is not None}
    with pytest.raises(RowError, match=message):
        from_cambench_row(row)


def test_json_list_and_jsonl_files_load_the_same_tasks(tmp_path: Path) -> None:
    second = {**RECORD, "id": "cvx_3_13", "exercise": "Exercise 3.13"}
    as_json = tmp_path / "cam_bench.json"
    as_json.write_text(json.dumps([RECORD, second], ensure_ascii=False), encoding="utf-8")
    as_jsonl = tmp_path / "cam_bench.jsonl"
    as_jsonl.write_text("".join(json.dumps(r) + "\n" for r in (RECORD, second)), encoding="utf-8")
    from_json, from_jsonl = load_tasks(as_json), load_tasks(as_jsonl)
    assert from_json.format == from_jsonl.format == "cambench"
    assert [t.id for t in from_json] == ["cvx_3_12", "cvx_3_13"]
    assert from_json.tasks == from_jsonl.tasks
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"problems": [RECORD]}), encoding="utf-8")
    assert [t.id for t in load_tasks(wrapped)] == ["cvx_3_12"]


def test_a_bad_entry_names_its_number_and_other_json_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([RECORD, {**RECORD, "id": "x", "type tags": 3}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: entry 2: field 'type_tags'"):
        load_tasks(bad)
    assert [t.id for t in load_tasks(bad, on_error="skip")] == ["cvx_3_12"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"foo": 1}]), encoding="utf-8")
    with pytest.raises(InputError, match="unknown record layout"):
        load_tasks(other)
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load_tasks(broken)
