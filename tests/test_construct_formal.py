"""Phase 3 of `formalbench construct`: blocks, Algorithms 2 and 3, packaging, resume.

The end-to-end tests run the real coqc on four exercises written here, with a scripted model
(tests/construct_formal_script.py) that reads each prompt and answers in its role; see that
module for the paths each exercise takes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import formalbench
from formalbench.backends.coq import CoqBackend
from formalbench.checking.holes import hole_decls
from formalbench.core.errors import InputError
from formalbench.core.records import Language
from formalbench.datasets import load_tasks
from formalbench.pipelines.construct.block_records import (
    Block,
    BlockKind,
    BlockReview,
    BlockSplit,
)
from formalbench.pipelines.construct.blockfile import (
    SYNTAX,
    BlockFile,
    FrozenPrefixViolation,
    assert_frozen,
    block_problems,
)
from formalbench.pipelines.construct.fewshot import for_repair, for_translation, load_examples
from formalbench.pipelines.construct.formal import (
    FormalResult,
    FormalStageConfig,
    formal_summary,
    run_formal_stages,
)
from formalbench.pipelines.construct.weakening import statements, weakening_findings
from formalbench.store.construct_formal import ConstructFormalStore
from tests import construct_formal_script as script

COQ = SYNTAX[Language.coq]
needs_coqc = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
CONFIG = FormalStageConfig(repair_rounds=2, header=script.HEADER, concurrency=1)


# --- the mechanical weakening check --------------------------------------------------------
BEFORE = (
    "Theorem t (n : nat) (A : list nat) (h : length A = n) :\n"
    "  forall x : nat, x > 0 -> In x A -> x <= n.\nProof.\nAdmitted."
)


def _review(**fields: Any) -> BlockReview:
    base = dict(script.MISSING_BOUND)
    base.update(fields)
    return BlockReview.model_validate(base)


def test_a_dropped_hypothesis_is_found() -> None:
    after = BEFORE.replace("(h : length A = n) ", "")
    assert weakening_findings(BEFORE, after, Language.coq) == [
        "`t`: the hypothesis `length A = n` was dropped"
    ]
    premise = BEFORE.replace("x > 0 -> ", "")
    assert weakening_findings(BEFORE, premise, Language.coq) == [
        "`t`: the hypothesis `x > 0` was dropped"
    ]


def test_a_dropped_variable_and_a_changed_conclusion_are_found() -> None:
    no_forall = BEFORE.replace("forall x : nat, x > 0 -> In x A -> x <= n", "0 <= n")
    found = weakening_findings(BEFORE, no_forall, Language.coq)
    assert any("variable `x : nat` is no longer bound" in f for f in found)
    assert any("conclusion changed from `x ≤ n` to `0 ≤ n`" in f for f in found)
    renamed = BEFORE.replace("Theorem t ", "Theorem t2 ")
    assert weakening_findings(BEFORE, renamed, Language.coq) == [
        "theorem `t` was dropped or renamed"
    ]


def test_moving_a_hypothesis_or_adding_one_is_no_loss() -> None:
    moved = BEFORE.replace("(h : length A = n) :\n  ", ":\n  length A = n -> ")
    assert weakening_findings(BEFORE, moved, Language.coq) == []
    added = BEFORE.replace("(h : length A = n)", "(h : length A = n) (h2 : n <= 10)")
    assert weakening_findings(BEFORE, added, Language.coq) == []


def test_a_loss_the_review_asked_for_is_allowed() -> None:
    after = BEFORE.replace("(h : length A = n) ", "")
    named = _review(issues=[{"severity": "P1", "issue_type": "extra_assumption",
                             "location": "h", "reason": "length A = n is not in the text"}])  # fmt: skip
    assert weakening_findings(BEFORE, after, Language.coq, named) == []
    goal = BEFORE.replace("x <= n.", "x < n.")
    assert weakening_findings(BEFORE, goal, Language.coq, _review())  # a hypothesis issue
    wrong_goal = _review(dominant_issue_types=["wrong_conclusion"])
    assert weakening_findings(BEFORE, goal, Language.coq, wrong_goal) == []


def test_lean_statements_are_read_too() -> None:
    lean = "theorem foo {n : ℕ} [Fintype α] (h : 0 < n) : ∀ x : ℕ, x ≤ n → x < n + 1 := by sorry"
    st = statements(lean, Language.lean)["foo"]
    assert st.variables["n"] == "ℕ" and st.variables["x"] == "ℕ"
    assert {"Fintype α", "0 < n", "x ≤ n"} <= set(st.hypotheses)
    assert st.conclusion == "x < n + 1"
    dropped = lean.replace("(h : 0 < n) ", "")
    assert weakening_findings(lean, dropped, Language.lean) == [
        "`foo`: the hypothesis `0 < n` was dropped"
    ]


# --- blocks and their text checks -------------------------------------------------------------
def test_block_split_needs_the_theorem_as_root() -> None:
    ok = BlockSplit.model_validate(
        {"blocks": [{"kind": "alg", "content": "x"}, {"kind": "thm", "content": "y"},
                    {"kind": "hints", "content": "z"}]}
    )  # fmt: skip
    assert [b.kind for b in ok.blocks] == [BlockKind.algo, BlockKind.thm, BlockKind.hints]
    with pytest.raises(ValidationError, match="no `thm` block"):
        BlockSplit.model_validate({"blocks": [{"kind": "defn", "content": "x"}]})
    with pytest.raises(ValidationError, match="last formal block must be the theorem"):
        BlockSplit.model_validate(
            {"blocks": [{"kind": "thm", "content": "y"}, {"kind": "defn", "content": "x"}]}
        )
    with pytest.raises(ValidationError):
        BlockSplit.model_validate({"blocks": [{"kind": "lemma_ish", "content": "y"}]})


def _messages(code: str, kind: BlockKind) -> list[str]:
    return [d.message for d in block_problems(code, kind, COQ)]


def test_holes_only_in_theorem_proofs_of_theorem_blocks() -> None:
    assert _messages(script.TRACE_DEF, BlockKind.defn) == []
    assert _messages(script.TRACE_THM, BlockKind.thm) == []
    assert "left unfinished" in _messages(script.RANK_HOLE, BlockKind.defn)[0]
    assert "left unfinished" in _messages(script.TRACE_THM, BlockKind.defn)[0]
    proved = "Theorem z : 0 = 0.\nProof. reflexivity. Qed."
    assert "leave the proof of `z` open" in _messages(proved, BlockKind.thm)[0]
    assert "must state a theorem" in _messages(script.TRACE_DEF, BlockKind.thm)[0]


def test_imports_axioms_and_forged_block_comments_are_refused() -> None:
    assert "imports belong" in _messages("Require Import Reals.\n" + script.TRACE_DEF,
                                         BlockKind.defn)[0]  # fmt: skip
    assert "`Axiom` is not allowed" in _messages("Axiom ax : False.", BlockKind.defn)[0]
    forged = "(* [BLOCK Exercise 1 | 1 | defn] *)\n" + script.TRACE_DEF
    assert "block comments belong" in _messages(forged, BlockKind.defn)[0]


def test_the_prefix_is_frozen() -> None:
    bfile = BlockFile.start(COQ, script.HEADER)
    first = Block(index=1, source="s", source_idx="Ex 1", kind=BlockKind.defn, content="d")
    second = Block(index=2, source="s", source_idx="Ex 1", kind=BlockKind.thm, content="t")
    prefix = bfile.prefix(first)
    assert prefix.endswith("(* [BLOCK Ex 1 | 1 | defn] *)\n")
    bfile.freeze(first, script.TRACE_DEF)
    later = bfile.prefix(second)
    assert later.startswith(bfile.candidate(prefix, script.TRACE_DEF))
    assert bfile.candidate(later, script.TRACE_THM) == later + script.TRACE_THM + "\n"
    with pytest.raises(FrozenPrefixViolation):
        assert_frozen(later, later.replace("list_sum", "list_max") + script.TRACE_THM)


# --- end to end with coqc -----------------------------------------------------------------------
def _run(run_dir: Path, model: Any = None, progress: Any = None) -> FormalResult:
    with CoqBackend(workers=1) as backend:
        return asyncio.run(
            run_formal_stages(
                script.PROBLEMS,
                backend=backend,
                model=model or script.model(),
                run_dir=run_dir,
                config=CONFIG,
                progress=progress,
            )
        )


MODEL = script.model()  # the model of the module's run, whose calls some tests read
PROGRESS: list[tuple[str, int, int, int]] = []


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FormalResult]:
    if shutil.which("coqc") is None:
        pytest.skip("coqc is not installed")
    run_dir = tmp_path_factory.mktemp("construct") / "run"
    return run_dir, _run(run_dir, MODEL, lambda *step: PROGRESS.append(step))


def _prompts(marker: str) -> list[str]:
    """The last user message of every call whose system text holds `marker`."""
    return [
        [m.content for m in c.messages if m.role == "user"][-1]
        for c in MODEL.calls
        if marker in c.messages[0].content
    ]


def _trail(run_dir: Path, stem: str) -> dict[str, Any]:
    return json.loads((run_dir / "instances" / f"{stem}.trail.json").read_text())


def _meta(run_dir: Path, stem: str) -> dict[str, Any]:
    return json.loads((run_dir / "instances" / f"{stem}.json").read_text())


@needs_coqc
def test_the_funnel_of_the_run(finished: tuple[Path, FormalResult]) -> None:
    run_dir, result = finished
    assert result.validation == {"validated": 2, "compile_failed": 1, "split_failed": 1}
    # formal blocks: trace 2, square 1, broken 2 (hints are not formal); rank never compiles
    assert (result.blocks, result.blocks_compiled, result.blocks_accepted) == (5, 4, 4)
    assert result.instances == 3 and result.tasks == 2
    assert [step[1:] for step in PROGRESS] == [(i, 4, 0) for i in range(1, 5)]  # none resumed
    assert {step[0] for step in PROGRESS} == {"exercises"}  # shown as "formal: exercises"
    assert result.tasks_file == run_dir / "tasks.jsonl"
    summary = formal_summary(run_dir)  # what a report reads, from the store alone
    assert (summary.blocks, summary.blocks_compiled, summary.instances, summary.tasks) == (
        5,
        4,
        3,
        2,
    )
    assert summary.validation == result.validation
    assert formal_summary(run_dir.parent / "nothing-here").exercises == 0
    assert set(result.prompt_hashes) == {"split", "translate", "repair", "review", "rewrite",
                                         "weakening"}  # fmt: skip


@needs_coqc
def test_a_translation_repaired_once_and_a_review_that_asks_for_a_revision(
    finished: tuple[Path, FormalResult],
) -> None:
    run_dir, _ = finished
    hints, defn, thm = _trail(run_dir, "la_trace")["blocks"]
    assert hints["status"] == "skipped" and not hints["compiles"]
    rounds = [(c["stage"], c["compiled"]) for c in defn["compiles"]]
    assert rounds == [("translate", False), ("repair", True)]
    # the error (Rocq 9 prints a deprecation warning for `From Coq` before it)
    (error,) = [d for d in defn["compiles"][0]["diagnostics"] if "sum_list" in d["message"]]
    assert error["line"] == 2  # counted from the block
    assert defn["status"] == "accepted" and [r["outcome"] for r in defn["reviews"]] == ["accepted"]
    assert [r["outcome"] for r in thm["reviews"]] == ["recompiled", "accepted"]
    assert thm["reviews"][0]["review"]["overall_status"] == "not_usable_yet"
    assert thm["code"].strip() == script.TRACE_THM
    text = (run_dir / "instances" / "la_trace.v").read_text()
    assert text == (
        f"{script.HEADER}\n(* [BLOCK Exercise MO.C1 | 2 | defn] *)\n{script.TRACE_DEF}\n"
        f"\n(* [BLOCK Exercise MO.C1 | 3 | thm] *)\n{script.TRACE_THM}\n"
    )


@needs_coqc
def test_a_weakening_rewrite_is_refused(finished: tuple[Path, FormalResult]) -> None:
    run_dir, _ = finished
    (thm,) = _trail(run_dir, "la_square")["blocks"]
    first, second, third = thm["reviews"]
    assert first["outcome"] == "rejected"
    assert first["rejected"] == ["`sq_pos`: the hypothesis `0 < n` was dropped"]
    assert first["compiles"] == []  # refused before any compile
    assert second["outcome"] == "recompiled" and second["rewrite"].strip() == script.SQUARE_FIXED
    assert third["outcome"] == "accepted"
    assert script.SQUARE_FIXED in (run_dir / "instances" / "la_square.v").read_text()
    stats = _meta(run_dir, "la_square")["statistics"]
    assert (stats["rewrites"], stats["rewrites_rejected"], stats["review_rounds"]) == (2, 1, 3)


@needs_coqc
def test_a_block_that_never_compiles_is_recorded_and_the_next_goes_on(
    finished: tuple[Path, FormalResult],
) -> None:
    run_dir, _ = finished
    meta = _meta(run_dir, "la_broken")
    assert meta["validation"] == "compile_failed"
    assert [b["status"] for b in meta["blocks"]] == ["compile_failed", "accepted"]
    defn = _trail(run_dir, "la_broken")["blocks"][0]
    assert len(defn["compiles"]) == 1 + CONFIG.repair_rounds
    assert "left unfinished" in defn["compiles"][1]["diagnostics"][0]["message"]
    assert _trail(run_dir, "la_broken")["failures"][0]["status"] == "compile_failed"
    text = (run_dir / "instances" / "la_broken.v").read_text()
    assert "rank" not in text and script.PLUS_ZERO in text
    garbled = _meta(run_dir, "la_garbled")
    assert garbled["validation"] == "split_failed" and garbled["file"] is None
    assert "unreadable reply" in garbled["failure"]
    assert not (run_dir / "instances" / "la_garbled.v").exists()


@needs_coqc
def test_packaged_files_compile_with_holes_only_in_theorem_proofs(
    finished: tuple[Path, FormalResult],
) -> None:
    run_dir, _ = finished
    files = sorted((run_dir / "instances").glob("*.v"))
    assert [f.stem for f in files] == ["la_broken", "la_square", "la_trace"]
    with CoqBackend(workers=1) as backend:
        for path in files:
            text = path.read_text()
            assert backend.check(text).compiled, path
            decls, holed = hole_decls(text, Language.coq)
            assert holed and {decls[i].kind for i in holed} == {"Theorem"}


@needs_coqc
def test_tasks_load_with_the_dataset_loader(finished: tuple[Path, FormalResult]) -> None:
    run_dir, _ = finished
    loaded = load_tasks(run_dir / "tasks.jsonl")
    assert loaded.format == "native" and not loaded.problems
    tasks = {t.id: t for t in loaded.tasks}
    assert sorted(tasks) == ["la/square", "la/trace"]
    trace = tasks["la/trace"]
    assert trace.header == script.HEADER and trace.language == Language.coq
    assert trace.source_text == (run_dir / "instances" / "la_trace.v").read_text()
    assert trace.metadata["holes"] == 1 and trace.metadata["targets"] == ["trace_add"]
    assert trace.informal.statement == script.TRACE
    construct = trace.trail["construct"]
    assert [b["kind"] for b in construct["blocks"]] == ["hints", "defn", "thm"]
    assert construct["problem_finally"] == script.TRACE


@needs_coqc
def test_a_finished_run_reruns_without_calls_or_compiles(
    finished: tuple[Path, FormalResult],
) -> None:
    run_dir, first = finished
    before = (run_dir / "tasks.jsonl").read_bytes()
    (run_dir / "instances" / "la_trace.v").unlink()  # rewritten from the store
    again = _run(run_dir, script.model(kill_after=0))  # any call would kill the test
    assert (again.fresh_calls, again.fresh_compiles) == (0, 0)
    assert (run_dir / "tasks.jsonl").read_bytes() == before
    assert (run_dir / "instances" / "la_trace.v").is_file()
    assert again.validation == first.validation


@needs_coqc
def test_a_killed_run_resumes_without_redoing_finished_steps(
    finished: tuple[Path, FormalResult], tmp_path: Path
) -> None:
    reference_dir, reference = finished
    run_dir = tmp_path / "run"
    src = Path(formalbench.__file__).resolve().parents[1]
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(root)])}
    child = subprocess.run(
        [sys.executable, "-m", "tests.construct_formal_script", str(run_dir), "9"],
        env=env,
        cwd=root,
        capture_output=True,
        timeout=240,
    )
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    store = ConstructFormalStore(run_dir / "construct.sqlite")
    calls, compiles = sum(store.call_counts().values()), store.compile_count()
    store.close()
    assert calls == 9 and 0 < compiles < reference.fresh_compiles
    resumed = _run(run_dir)
    assert resumed.fresh_calls == reference.fresh_calls - calls
    assert resumed.fresh_compiles == reference.fresh_compiles - compiles
    assert (run_dir / "tasks.jsonl").read_bytes() == (reference_dir / "tasks.jsonl").read_bytes()


def test_a_changed_problem_loses_its_stored_result(tmp_path: Path) -> None:
    store = ConstructFormalStore(tmp_path / "construct.sqlite")
    store.add_problem("a", {"text": "one"})
    store.finish_problem("a", "validated", {"status": "validated"})
    store.add_problem("a", {"text": "one"})
    assert store.result("a") == {"status": "validated"}
    store.add_problem("a", {"text": "two"})
    assert store.result("a") is None and store.statuses() == {"a": "pending"}
    store.close()


# --- few-shot helper --------------------------------------------------------------------------
def _block(kind: BlockKind, content: str) -> Block:
    return Block(index=1, source="s", source_idx="Ex", kind=kind, content=content)


def test_fewshot_examples_are_chosen_by_kind_and_by_diagnostics() -> None:
    examples = load_examples(None, Language.coq)
    assert examples and load_examples(None, Language.lean) == []
    algo = for_translation(examples, _block(BlockKind.algo, "an update rule x_{k+1}"), 2)
    assert algo and {e.kind for e in algo} == {BlockKind.algo}
    defn = _block(BlockKind.defn, "a matrix is symmetric when A i j = A j i")
    assert for_translation(examples, defn, 1)[0].code.startswith("Definition symmetric")
    scope = 'The term "x" has type "R" while it is expected to have type "nat".'
    fixes = for_repair(examples, defn, scope, 1)
    assert fixes and "Rlt_dec" in fixes[0].code
    assert for_repair(examples, defn, "Syntax error: '.' expected.", 2) == []


@needs_coqc
def test_the_shipped_fewshot_examples_compile() -> None:
    examples = load_examples(None, Language.coq)
    text = COQ.header + "\n".join(e.code for e in examples) + "\n"
    with CoqBackend(workers=1) as backend:
        assert backend.check(text).compiled
    repairs = [e for e in examples if e.is_repair]
    assert all(not block_problems(e.code, e.kind, COQ) for e in examples)
    assert any(block_problems(e.broken or "", e.kind, COQ) for e in repairs)


def test_a_bad_fewshot_file_is_one_line_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "shots.jsonl"
    bad.write_text('{"language": "coq", "kind": "lemma", "content": "x", "code": "y"}\n')
    with pytest.raises(InputError, match=r"shots.jsonl:1: kind"):
        load_examples(bad, Language.coq)


@needs_coqc
def test_translations_and_repairs_are_shown_examples(finished: tuple[Path, FormalResult]) -> None:
    translations = [
        c for c in MODEL.calls if "below the block's marker comment" in c.messages[0].content
    ]
    defn = next(c for c in translations if "introducing `trace`" in c.messages[-1].content)
    assert "An example block (defn)" in defn.messages[1].content  # an earlier turn
    repair = next(p for p in _prompts("was rejected by the checker") if "sum_list" in p)
    assert "How similar errors were fixed elsewhere" in repair


def test_lean_blocks_are_checked_the_same_way() -> None:
    lean = SYNTAX[Language.lean]

    def problems(code: str, kind: BlockKind) -> list[str]:
        return [d.message for d in block_problems(code, kind, lean)]

    assert problems("theorem t (n : ℕ) : n ≤ n * n := by sorry", BlockKind.thm) == []
    assert "left unfinished" in problems("def f : ℕ := sorry", BlockKind.defn)[0]
    assert "imports belong" in problems("import Mathlib\ndef f : ℕ := 1", BlockKind.defn)[0]
    forged = "/- [BLOCK Ex | 1 | thm] -/\ntheorem t : 1 = 1 := by sorry"
    assert "block comments belong" in problems(forged, BlockKind.thm)[0]
    block = Block(index=2, source="s", source_idx="Ex 3", kind=BlockKind.thm, content="c")
    assert lean.block_comment(block) == "/- [BLOCK Ex 3 | 2 | thm] -/"


@needs_coqc
def test_formalbench_eval_runs_on_the_tasks_file(
    finished: tuple[Path, FormalResult], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from formalbench.cli.main import app

    run_dir, _ = finished
    out = tmp_path / "eval"
    args = ["eval", str(run_dir / "tasks.jsonl"), "--solver", "portfolio", "--tactics", "nia"]
    result = CliRunner().invoke(app, [*args, "--run-dir", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == 2 and summary["solved"] == ["la/square"]
