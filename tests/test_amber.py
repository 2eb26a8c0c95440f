"""AMBER: the shipped library (Coq compiled for real, Lean read by our lexer and splitter),
task records with kinds and constructions, and the shipped example sets, whose reference
solutions must pass the strict verifier and whose non-constructive ones must be refused."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from formalbench.checking.decls import split_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.errors import InputError
from formalbench.core.lexer import tokenize
from formalbench.core.records import Language, Reason, Task, TaskKind
from formalbench.datasets import load_tasks
from formalbench.datasets.amber import read_marker
from formalbench.datasets.build_amber import FOLDERS, render, solution_file
from formalbench.library import COQ_SOURCE_DIR, LEAN_SOURCE_DIR

COQ_SET, LEAN_SET = "example-amber-coq", "example-amber-lean"
needs_coqc = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
# Non-constructive answers today's text layer cannot see: the choice is a Coq constant it does
# not list (`constructive_indefinite_description`), hidden in a helper, or an infimum of the
# problem's own feasible set (`Glb_Rbar`). The value-level check of branch amber-deps sees them.
VALUE_LEVEL = {
    "amber_algo_gradient",  # constructive_indefinite_description in the helper `halfway`
    "amber_eval_box_projection",  # constructive_indefinite_description on the spec
    "amber_eval_linear_system",  # constructive_indefinite_description
    "amber_eval_lp_value",  # Glb_Rbar of the feasible values
    "amber_trans_dual",  # the dual function left as Glb_Rbar of the Lagrangian
    "amber_trans_value_form",  # constructive_indefinite_description in the helper `preimage`
}


def _tasks(name: str) -> list[Task]:
    return list(load_tasks(name))


# --- the library ---------------------------------------------------------------------------
@needs_coqc
@pytest.mark.coq
def test_coq_library_compiles_into_the_cache_and_is_found_by_coqc(tmp_path, monkeypatch):
    from formalbench.backends import coq_library
    from formalbench.backends.coq import CoqBackend
    from formalbench.core.config import cache_path

    # a fresh cache for the library, the installed toolchains still in it (the suite's own)
    (tmp_path / "toolchains").symlink_to(cache_path("toolchains"), target_is_directory=True)
    monkeypatch.setenv("FORMALBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(coq_library, "_known", {})
    folder = coq_library.compiled_library()
    assert folder.parent == tmp_path / "coq-library"
    assert (folder / "Amber.vo").is_file() and coq_library.library_hash() in folder.name
    stamp = (folder / "Amber.vo").stat().st_mtime_ns
    monkeypatch.setattr(coq_library, "_known", {})  # a new process: found on disk, not rebuilt
    assert coq_library.compiled_library() == folder
    assert (folder / "Amber.vo").stat().st_mtime_ns == stamp
    source = (
        "From Formalbench Require Import Amber.\n"
        "Definition P : MathProblem R R := {| constraints := fun x => 0 <= x; "
        "objective := fun x => x |}.\n"
        "Lemma l : relaxes P P /\\ equivalent P P.\nProof. split; [apply relaxes_refl|split; "
        "apply relaxes_refl]. Qed.\n"
    )
    result = CoqBackend().check(source)  # -Q ... Formalbench, in the sandbox
    assert result.compiled and result.holes == [], result.diagnostics


def test_coq_library_keeps_the_public_interface():
    text = (COQ_SOURCE_DIR / "Amber.v").read_text(encoding="utf-8")
    names = {d.name for d in split_decls(text, Language.coq) if d.name}
    public = "MathProblem relaxes equivalent OriginalProblem OptProblem LP SDP DualProblem"
    assert set(public.split()) | {"equivalence", "subequivalence", "dot", "mulVec"} <= names
    assert "Arguments constraints {D V}" in text  # `constraints P x`, types implicit


def test_lean_library_lexes_and_every_declaration_is_found():
    text = (LEAN_SOURCE_DIR / "Amber.lean").read_text(encoding="utf-8")
    assert "v4.24.0" in text  # it says which Mathlib it is written for
    tokens = tokenize(text, Language.lean)
    assert not [t for t in tokens if t.kind == "error"]
    found = [d.name for d in split_decls(text, Language.lean) if d.name]
    heads = re.findall(r"^(?:def|theorem|structure|class)\s+([\w.]+)", text, flags=re.MULTILINE)
    assert len(heads) >= 14 and found == [f"Amber.{name}" for name in heads]
    for name in [
        "MathProblem",
        "relaxes",
        "equivalence",
        "OriginalProblem",
        "OptProblem",
        "LP",
        "SDP",
        "DualProblem",
    ]:
        assert f"Amber.{name}" in found


def test_library_path_command(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from formalbench.cli.main import app

    runner = CliRunner()
    lean = runner.invoke(app, ["library", "path", "--backend", "lean"])
    assert lean.exit_code == 0 and Path(lean.stdout.strip()) == LEAN_SOURCE_DIR
    assert (Path(lean.stdout.strip()) / "Amber.lean").is_file()
    bad = runner.invoke(app, ["library", "path", "--backend", "isabelle"])
    assert bad.exit_code == 2 and "expected coq or lean" in bad.output


# --- task records --------------------------------------------------------------------------
def test_marker_gives_kind_constructions_and_statement_and_leaves_the_text():
    task = next(t for t in _tasks(COQ_SET) if t.id == "amber_trans_abs_epigraph")
    assert task.kind == TaskKind.transformation and task.constructions == ["D_tgt", "P_tgt"]
    assert task.informal.statement.startswith("Minimising |x|")
    assert "formalbench-task" not in task.source_text
    assert Task.model_validate_json(task.model_dump_json()) == task


def test_jsonl_with_unknown_construction_is_refused(tmp_path):
    task = next(t for t in _tasks(COQ_SET) if t.id == "amber_eval_midpoint")
    bad = task.model_copy(update={"constructions": ["answr"]})
    path = tmp_path / "bad.jsonl"
    path.write_text(bad.model_dump_json() + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad.jsonl:1: .*construction 'answr' is not"):
        load_tasks(path)


def test_marker_errors_are_one_line(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "t.v").write_text(
        "(* formalbench-task\n   kind: puzzle *)\nDefinition a : nat.\nAdmitted.\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match="t.v: unknown task kind 'puzzle'"):
        load_tasks(folder)
    text, fields = read_marker(
        "/- formalbench-task\n  kind: proof\n  informal: a\n  b -/\nx", Language.lean
    )
    assert text == "x" and fields == {"kind": "proof", "informal": "a b"}


@pytest.mark.parametrize("name", [COQ_SET, LEAN_SET])
def test_shipped_sets_match_their_folders(name):
    shipped = FOLDERS[name].parent / f"{name}.jsonl"
    assert shipped.read_text(encoding="utf-8") == render(name)
    tasks = _tasks(name)
    kinds = {t.kind for t in tasks}
    if name == COQ_SET:
        assert len(tasks) >= 12 and kinds == {
            TaskKind.proof,
            TaskKind.evaluation,
            TaskKind.algorithm,
            TaskKind.transformation,
        }
    for task in tasks:
        assert solution_file(name, task) is not None, task.id
        refused = solution_file(name, task, "nonconstructive")
        assert (refused is not None) == (task.kind != TaskKind.proof), task.id


# --- verification ------------------------------------------------------------------------
def test_lean_solutions_pass_the_text_layer_and_choices_are_refused():
    verifier = StrictVerifier(None, language=Language.lean)
    for task in _tasks(LEAN_SET):
        good = solution_file(LEAN_SET, task).read_text(encoding="utf-8")
        assert verifier.static_findings(task.source_text, good, task.kind, task.constructions) == []
        bad_file = solution_file(LEAN_SET, task, "nonconstructive")
        if bad_file is not None:
            found = verifier.static_findings(
                task.source_text,
                bad_file.read_text(encoding="utf-8"),
                task.kind,
                task.constructions,
            )
            assert [f.reason for f in found] == [Reason.non_constructive], task.id


def test_construction_names_of_the_task_are_the_ones_checked():
    """A transformation's target type and problem are constructions: a choice in either is
    refused, under the task's kind and names, not only for `evaluation` tasks."""
    task = next(t for t in _tasks(LEAN_SET) if t.id == "amber_trans_abs_epigraph")
    bad = solution_file(LEAN_SET, task, "nonconstructive").read_text(encoding="utf-8")
    verifier = StrictVerifier(None, language=Language.lean)
    assert verifier.static_findings(task.source_text, bad, task.kind, ["P_tgt"])
    assert not verifier.static_findings(task.source_text, bad, task.kind, ["D_tgt"])


@needs_coqc
@pytest.mark.coq
def test_coq_reference_solutions_pass_the_strict_verifier():
    from formalbench.backends.coq import CoqBackend

    tasks = _tasks(COQ_SET)
    with CoqBackend(workers=2) as backend:
        verifier = StrictVerifier(backend)

        async def all_verdicts():
            return await asyncio.gather(
                *(
                    verifier.averify(
                        t.source_text,
                        solution_file(COQ_SET, t).read_text(encoding="utf-8"),
                        kind=t.kind,
                        constructions=t.constructions,
                    )
                    for t in tasks
                )
            )

        verdicts = asyncio.run(all_verdicts())
    failed = {
        t.id: [f.message for f in v.findings][:2]
        for t, v in zip(tasks, verdicts, strict=True)
        if not v.passed
    }
    assert failed == {}
    assert all(not v.static_only for v in verdicts)


@needs_coqc
@pytest.mark.coq
def test_coq_nonconstructive_solutions_compile():
    """They are proofs Coq accepts, so only the construction rules can refuse them. One coqc
    run for all (each file in a module of its own) keeps this test cheap."""
    from formalbench.backends.coq import CoqBackend

    files = [
        solution_file(COQ_SET, t, "nonconstructive")
        for t in _tasks(COQ_SET)
        if t.kind != TaskKind.proof
    ]
    text = "".join(
        f"Module M{i}.\n{f.read_text(encoding='utf-8')}\nEnd M{i}.\n" for i, f in enumerate(files)
    )
    result = CoqBackend().check(text)
    assert result.compiled, [d.message for d in result.errors]


def _refused_params() -> list:
    params = []
    for task in _tasks(COQ_SET):
        if task.kind == TaskKind.proof:
            continue
        params.append(pytest.param(task, id=task.id))
    return params


@needs_coqc
@pytest.mark.coq
@pytest.mark.parametrize("task", _refused_params())
def test_coq_nonconstructive_solution_is_refused(task):
    from formalbench.backends.coq import CoqBackend

    bad = solution_file(COQ_SET, task, "nonconstructive").read_text(encoding="utf-8")
    verdict = StrictVerifier(CoqBackend()).verify(
        task.source_text, bad, kind=task.kind, constructions=task.constructions
    )
    assert not verdict.passed and Reason.non_constructive in verdict.reasons


def test_value_level_list_names_real_tasks():
    ids = {t.id for t in _tasks(COQ_SET)}
    assert ids >= VALUE_LEVEL and len(ids - VALUE_LEVEL) >= 6


def test_whole_answers_fill_coq_values_transparently():
    """An answer `Definition answer … := v.` fills the task's `Definition answer … . Admitted.`
    as `exact (v).` closed by `Defined.`, so the theorem can unfold the value."""
    from formalbench.solvers.candidate import from_answer

    for task in _tasks(COQ_SET):
        if task.kind == TaskKind.proof:
            continue
        answer = solution_file(COQ_SET, task).read_text(encoding="utf-8")
        code = from_answer(task.source_text, Language.coq, f"```coq\n{answer}```")
        for name in task.constructions:
            at = code.index(f"Definition {name} ")
            closing = re.search(r"\b(Qed|Defined)\.", code[at:])
            assert closing is not None and closing.group(1) == "Defined", (task.id, name)
    midpoint = next(t for t in _tasks(COQ_SET) if t.id == "amber_eval_midpoint")
    answer = solution_file(COQ_SET, midpoint).read_text(encoding="utf-8")
    code = from_answer(midpoint.source_text, Language.coq, f"```coq\n{answer}```")
    assert "Proof.\nexact ((a + b) / 2).\nDefined." in code
