"""Importers on the real public samples in the public data folder, and the loader's error handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from formalbench.core.errors import InputError
from formalbench.core.records import Language, Task, TaskKind
from formalbench.datasets import load_tasks
from formalbench.datasets.text import has_hole
from tests.shared_data import DATA, needs_shared


@needs_shared
def test_minif2f_jsonl_gets_holes_informal_and_splits():
    loaded = load_tasks(DATA / "minif2f-lean4" / "minif2f_deepseek_v15.jsonl")
    assert loaded.format == "statements" and not loaded.problems
    assert len(loaded) == 488
    assert {t.split for t in loaded} == {"valid", "test"}
    assert all(has_hole(t.formal, Language.lean) for t in loaded)
    task = next(t for t in loaded if t.id == "amc12a_2015_p10")
    # published as `... := by` with no proof: the importer adds the hole
    assert task.formal.rstrip().endswith(":= by\n  sorry")
    assert task.informal.statement.startswith("Integers $x$ and $y$")
    assert "/--" not in task.informal.statement and "-/" not in task.informal.statement
    assert task.header.startswith("import Mathlib")
    assert task.labels["category"] == "amc12a"
    assert task.metadata["goal"].endswith("⊢ x = 26")


@needs_shared
def test_proofnet_both_ports():
    old = load_tasks(DATA / "proofnet-lean4" / "proofnet_deepseek_v15.jsonl")
    assert len(old) == 371 and old.tasks[0].source == "ProofNet"
    # statements end in a bare `:=`; every task still gets its hole
    assert all(has_hole(t.formal, Language.lean) for t in old)
    # the same exercise number in two books: kept apart, published name remembered
    renamed = [t for t in old if "published_id" in t.metadata]
    assert renamed and all(t.id.startswith(t.metadata["published_id"] + "-") for t in renamed)
    assert len({t.id for t in old}) == 371

    new = load_tasks(DATA / "proofnet-lean4" / "proofnet_lean4_rahul3613.jsonl")
    task = next(t for t in new if t.id == "Shakarchi_exercise_1_13a")
    assert task.labels["book"] == "Shakarchi"
    assert "\\begin{proof}" not in task.informal.statement
    assert task.informal.statement.startswith("Suppose that $f$ is holomorphic")
    assert "Cauchy-Riemann" in task.metadata["informal_proof"]


@needs_shared
def test_putnam_merged_solution_abbrev_is_a_construction_task():
    loaded = load_tasks(DATA / "putnambench-lean4" / "putnambench_lean4_merged.jsonl")
    assert loaded.format == "putnambench" and len(loaded) == 672
    kinds = [t.kind for t in loaded]
    assert kinds.count(TaskKind.evaluation) == 346
    task = next(t for t in loaded if t.id == "putnam_1962_a2")
    assert task.kind == TaskKind.evaluation
    # the answer comment under the abbrev would give the answer away: moved to metadata
    assert "putnam_1962_a2_solution : Set (ℝ → ℝ) := sorry\n/--" in task.formal
    assert task.metadata["reference_solution"].startswith("{f | (∃ a c : ℝ")
    assert task.informal.solution and task.informal.solution.startswith("Show that")
    assert task.labels == {"domain": "analysis", "year": "1962"}
    plain = next(t for t in loaded if t.id == "putnam_1962_a1")
    assert plain.kind == TaskKind.proof and plain.informal.solution is None


@needs_shared
def test_coq_folder_header_split_and_open_proofs_get_admitted():
    loaded = load_tasks(DATA / "minif2f-coq")
    assert loaded.format == "source-files" and len(loaded) == 488
    assert {t.language for t in loaded} == {Language.coq}
    assert sum(t.split == "test" for t in loaded) == 244
    task = next(t for t in loaded if t.id == "algebra_amgm_sum1toneqn_prod1tonleq1")
    assert task.header.startswith("Require Import Coq.Reals.Reals.\nOpen Scope R_scope.")
    assert task.formal.lstrip().startswith("Fixpoint sum_n")  # definitions stay with the task
    assert task.formal.rstrip().endswith("Proof.\nAdmitted.")  # the file stopped at Proof.
    source = (DATA / "minif2f-coq" / "test" / "aime_1983_p1.v").read_text()
    same = next(t for t in loaded if t.id == "aime_1983_p1")
    assert same.source_text == source  # header + formal is the file when nothing was added


@needs_shared
def test_lean_folders_take_toolchain_and_skip_aggregators():
    minif2f = load_tasks(DATA / "minif2f-lean4" / "lean4_files")
    assert len(minif2f) == 488  # MiniF2F/Test.lean and lakefile.lean are not tasks
    assert {t.toolchain for t in minif2f} == {"leanprover/lean4:v4.24.0"}
    assert all(t.library_revision for t in minif2f)
    assert {t.split for t in minif2f} == {"test", "valid"}
    putnam = load_tasks(DATA / "putnambench-lean4" / "lean4")
    task = next(t for t in putnam if t.id == "putnam_1962_a2")
    assert task.kind == TaskKind.evaluation and "reference_solution" in task.metadata
    assert task.informal.statement.startswith("Find every real-valued function")


def test_native_round_trip(tmp_path: Path):
    tasks = [
        Task(id="a", language=Language.coq, formal="Theorem a : True.\nProof.\nAdmitted.\n"),
        Task(
            id="b",
            language=Language.lean,
            header="import Mathlib\n",
            formal="theorem b : 1 = 1 := sorry\n",
            kind=TaskKind.proof,
            labels={"domain": "algebra"},
            metadata={"x": [1, 2]},
        ),
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    loaded = load_tasks(path)
    assert loaded.format == "native" and loaded.tasks == tasks


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_malformed_lines_named_by_file_and_line(tmp_path: Path):
    good = Task(id="ok", language=Language.coq, formal="Lemma x : True. Proof. Admitted.")
    path = _write(
        tmp_path / "tasks.jsonl",
        [
            good.model_dump_json(),
            "{not json",
            json.dumps({"id": "bad", "language": "klingon", "formal": "x"}),
            "",
            good.model_dump_json(),  # duplicate id
        ],
    )
    with pytest.raises(InputError, match=r"tasks\.jsonl:2: not valid JSON.*and 2 more problems"):
        load_tasks(path)
    loaded = load_tasks(path, on_error="skip")
    assert [t.id for t in loaded] == ["ok"]
    assert [(p.line, p.file) for p in loaded.problems] == [
        (2, str(path)),
        (3, str(path)),
        (5, str(path)),
    ]
    assert "language" in loaded.problems[1].message
    assert "duplicate task id 'ok'" in loaded.problems[2].message


def test_bom_and_crlf_are_accepted(tmp_path: Path):
    task = Task(id="x", language=Language.coq, formal="Lemma x : True.\nProof.\nAdmitted.\n")
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + task.model_dump_json().encode() + b"\r\n\r\n")
    assert load_tasks(path).tasks == [task]


def test_public_row_without_a_statement_is_a_problem(tmp_path: Path):
    path = _write(
        tmp_path / "minif2f_extra.jsonl",
        [
            json.dumps({"name": "t1", "formal_statement": "theorem t1 : 1 = 1 := by\n"}),
            json.dumps({"name": "t2", "formal_statement": 5}),
            json.dumps({"name": "t3", "formal_statement": "theorem t3 : 1 = 1 := rfl"}),
        ],
    )
    loaded = load_tasks(path, on_error="skip")
    assert [t.id for t in loaded] == ["t1"]
    assert [p.line for p in loaded.problems] == [2, 3]
    assert "must be a string" in loaded.problems[0].message
    assert "no hole" in loaded.problems[1].message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\x00\x01binary", "binary file"),
        (b"\xff\xfe{}\n", r"data.jsonl:1: not UTF-8"),
        (b"[1]\n{oops\n", "no usable task .2 problems"),
        (b'{"question": "what"}\n', "unknown record layout"),
    ],
)
def test_unusable_files_are_input_errors(tmp_path: Path, content: bytes, message: str):
    path = tmp_path / "data.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        load_tasks(path, on_error="skip")
    assert str(path) in str(info.value)


def test_missing_paths_and_names(tmp_path: Path):
    with pytest.raises(InputError, match="no such file or directory.*shipped: .*example-coq"):
        load_tasks(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="not a shipped dataset"):
        load_tasks("no-such-benchmark")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no .lean or .v files"):
        load_tasks(tmp_path / "empty")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="not a dataset"):
        load_tasks(tmp_path / "notes.txt")
    with pytest.raises(InputError, match="on_error"):
        load_tasks(tmp_path / "notes.txt", on_error="ignore")  # type: ignore[arg-type]


def test_folder_of_sources_with_split_folders(tmp_path: Path):
    (tmp_path / "bench" / "test").mkdir(parents=True)
    (tmp_path / "bench" / "valid").mkdir()
    (tmp_path / "bench" / "test" / "one.v").write_text(
        "Require Import Arith.\nOpen Scope nat_scope.\n\nTheorem one : 1 + 1 = 2.\nProof.\n"
    )
    (tmp_path / "bench" / "valid" / "two.lean").write_text(
        "import Mathlib\nopen Nat\n\n/-- Two is two. -/\ntheorem two : 2 = 2 := by sorry\n"
    )
    (tmp_path / "bench" / "valid" / "done.v").write_text(
        "Theorem d : True.\nProof. exact I. Qed.\n"
    )
    loaded = load_tasks(tmp_path / "bench", on_error="skip")
    assert [(t.id, t.split, t.language) for t in loaded] == [
        ("one", "test", Language.coq),
        ("two", "valid", Language.lean),
    ]
    one, two = loaded.tasks
    assert one.header == "Require Import Arith.\nOpen Scope nat_scope.\n\n"
    assert one.formal == "Theorem one : 1 + 1 = 2.\nProof.\nAdmitted.\n"
    assert two.informal.statement == "Two is two."
    assert two.source == "bench"
    # a finished file of the benchmark's repository is skipped with a warning, not a problem
    assert loaded.problems == []
    assert [Path(p.file).name for p in loaded.skipped] == ["done.v"]
    assert "no hole" in loaded.skipped[0].message
    assert [t.id for t in load_tasks(tmp_path / "bench")] == ["one", "two"]  # on_error="fail"


def test_folder_of_only_finished_files_is_an_error(tmp_path: Path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "Util.v").write_text("Lemma u : True.\nProof. exact I. Qed.\n")
    with pytest.raises(InputError, match=r"no file with a hole.*Util\.v"):
        load_tasks(tmp_path / "tools")


def test_a_single_finished_file_is_an_error(tmp_path: Path):
    path = tmp_path / "done.v"
    path.write_text("Lemma u : True.\nProof. exact I. Qed.\n")
    with pytest.raises(InputError, match=r"done\.v.*no hole"):
        load_tasks(path)


def test_native_task_with_a_finished_proof_is_a_load_error(tmp_path: Path):
    done = Task(id="done", language=Language.coq, formal="Lemma d : True.\nProof. exact I. Qed.")
    lean = Task(id="leandone", language=Language.lean, formal="theorem t : 1 = 1 := rfl")
    open_ = Task(id="open", language=Language.coq, formal="Lemma o : True. Proof. Admitted.")
    path = _write(
        tmp_path / "tasks.jsonl",
        [open_.model_dump_json(), done.model_dump_json(), lean.model_dump_json()],
    )
    with pytest.raises(InputError, match=r"tasks\.jsonl:2: task 'done': its proof is finished"):
        load_tasks(path)
    loaded = load_tasks(path, on_error="skip")
    assert [t.id for t in loaded] == ["open"]
    assert [(p.line, "finished" in p.message) for p in loaded.problems] == [(2, True), (3, True)]


def test_unreadable_file(tmp_path: Path):
    import os

    path = tmp_path / "locked.jsonl"
    path.write_text("{}\n")
    path.chmod(0)
    if os.access(path, os.R_OK):  # running as root: permissions are not enforced
        pytest.skip("permissions not enforced for this user")
    with pytest.raises(InputError, match="permission denied"):
        load_tasks(path)
