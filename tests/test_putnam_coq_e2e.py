"""PutnamBench-Coq end to end on the suite's Coq: a stdlib statement imported from the folder
compiles as a task, a real proof of it passes the strict verifier, the task text does not,
and `formalbench eval` on it records the toolchain it was written for and prepares nothing
on the toolchain the statements were checked on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language, Reason, Task
from formalbench.datasets.loader import load_tasks
from formalbench.pipelines.evaluate import run_evaluation
from formalbench.pipelines.preflight import admitted_original
from formalbench.pipelines.run_config import EvalConfig
from formalbench.store.runs import RunStore
from formalbench.toolchains.prepare import prepare_task
from tests.shared_data import needs_shared

pytestmark = [
    needs_shared,
    pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed"),
]

# putnam_2001_a1 (Ensembles, RelationClasses): op (op a b) a = b  implies  op a (op b a) = b.
TACTIC = "intros a b; pose proof (hop (op b a) b) as H; rewrite (hop b a) in H; exact H"
PROOF = f"Proof.\n  {TACTIC}.\nQed."


def _task(shared: Path, name: str):  # noqa: ANN202 - a Task
    (task,) = load_tasks(shared / "data" / "putnambench-coq" / "src" / f"{name}.v").tasks
    return task


def test_a_stdlib_putnam_statement_compiles_and_a_real_proof_passes(shared: Path) -> None:
    task = _task(shared, "putnam_2001_a1")
    assert task.labels["library"] == "stdlib" and task.postulates == []
    candidate = task.source_text.replace("Proof. Admitted.", PROOF)
    assert candidate != task.source_text
    with CoqBackend(workers=1, timeout=120) as backend:
        assert prepare_task(backend.toolchain, task) is task  # 8.16: as given
        assert backend.check(admitted_original(task), timeout=120).compiled
        verifier = StrictVerifier(backend)
        genuine = verifier.verify(task.source_text, candidate, timeout=120)
        assert genuine.passed, [f.message for f in genuine.findings]
        refused = verifier.verify(task.source_text, task.source_text, timeout=120)
        assert not refused.passed and Reason.forbidden_construct in refused.reasons


def test_a_coquelicot_putnam_statement_compiles_as_a_task(shared: Path) -> None:
    task = _task(shared, "putnam_1965_a2")
    assert task.labels["libraries"] == "Coquelicot,Stdlib"
    with CoqBackend(workers=1, timeout=120) as backend:
        result = backend.check(admitted_original(task), timeout=120)
    assert result.compiled, [d.message for d in result.errors]


def test_eval_runs_the_folder_task_and_stores_it_as_imported(shared: Path, tmp_path: Path) -> None:
    source = shared / "data" / "putnambench-coq" / "src" / "putnam_2001_a1.v"
    config = EvalConfig(dataset=str(source), workers=1, timeout=120, tactics=[TACTIC])
    result = run_evaluation(config, tmp_path / "run")
    assert not any("prepared for toolchain" in note for note in result.notes)
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        run = store.runs()[0].id
        (task,) = store.tasks(run)
        (attempt,) = store.attempts(run)
    assert task.toolchain == "coq-8.18" and task.labels["year"] == "2001"
    assert "preparation" not in task.metadata
    assert attempt.verdict is not None and attempt.verdict.passed, attempt


@pytest.mark.rocq
def test_on_rocq_92_a_mathcomp_statement_compiles_once_prepared(shared: Path) -> None:
    """putnam_1962_b5 (`Variable R : realType.`, `all_algebra all_ssreflect`): on Rocq 9.2 the
    file as given is refused; prepared (two header changes) it compiles, statement as given."""
    task = _task(shared, "putnam_1962_b5")
    with CoqBackend(workers=1, timeout=300, toolchain="rocq-9.2") as backend:
        prepared = prepare_task(backend.toolchain, task)
        rules = [c["rule"] for c in prepared.metadata["preparation"]["changes"]]
        assert rules == ["mathcomp-ssreflect-first", "assumption-outside-section"]
        assert prepared.formal == task.formal
        given = backend.check(admitted_original(task), timeout=300)
        assert not given.compiled
        assert "outside sections" in given.errors[0].message
        result = backend.check(admitted_original(prepared), timeout=300)
        assert result.compiled, [d.message for d in result.errors]


def _has_analysis() -> bool:
    import subprocess  # noqa: PLC0415

    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, timeout=60)
    return (Path(where.stdout.strip()) / "user-contrib" / "mathcomp" / "analysis").is_dir()


@pytest.mark.skipif(
    shutil.which("coqc") is None or not _has_analysis(),
    reason="mathcomp-analysis is not installed (apt-get install libcoq-mathcomp-analysis)",
)
def test_a_genuine_proof_over_a_task_variable_passes(tmp_path: Path) -> None:
    """The shape of 132 PutnamBench-Coq statements: `Variable R : realType.` then a theorem
    over R. A genuine proof rests on the task's own postulate R, which is allowed (the kernel
    route compiles both sides as `Candidate`: `Candidate.R` is the task's, pinned). The task
    is prepared for the toolchain as `eval` prepares it (on Coq >= 8.20 a top-level `Variable`
    needs its warning turned off), the prover's answer over the prepared text."""
    task = Task(
        id="t",
        language=Language.coq,
        header="From mathcomp Require Import all_ssreflect all_algebra reals.\n",
        formal="Variable R : realType.\nTheorem t (x : R) : x = x.\nProof. Admitted.\n",
    )
    with CoqBackend(workers=1, timeout=300) as backend:
        original = prepare_task(backend.toolchain, task).source_text
        candidate = original.replace("Proof. Admitted.", "Proof. reflexivity. Qed.")
        verdict = StrictVerifier(backend).verify(original, candidate, timeout=300)
    assert verdict.passed, [f.message for f in verdict.findings]


def test_a_preparation_that_breaks_a_compiling_task_is_dropped(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eval keeps a preparation only where the toolchain needs it: a prepared header that does
    not compile, on a task that compiles as given, runs as given (and says so)."""
    from formalbench.backends import coq_prepare  # noqa: PLC0415
    from formalbench.pipelines import evaluate  # noqa: PLC0415

    def breaking(tasks, facts):  # noqa: ANN001, ANN202 - a stand-in rule that breaks the file
        out = []
        for task in tasks:
            record = {"toolchain": facts.name, "changes": [{"rule": "breaks", "detail": "x"}]}
            out.append(
                task.model_copy(
                    update={
                        "header": "Require Import NoSuchLibraryAnywhere.\n" + task.header,
                        "metadata": {**task.metadata, "preparation": record},
                    }
                )
            )
        return out, coq_prepare.preparation_note(out, facts.name)

    monkeypatch.setattr(evaluate, "prepare_tasks", breaking)
    source = shared / "data" / "putnambench-coq" / "src" / "putnam_2001_a1.v"
    config = EvalConfig(dataset=str(source), workers=1, timeout=120, tactics=[TACTIC])
    result = run_evaluation(config, tmp_path / "run")
    assert any("compile as given but not prepared" in n for n in result.notes), result.notes
    assert not any("task(s) prepared for toolchain" in n for n in result.notes)
    with RunStore(tmp_path / "run" / "run.sqlite") as store:
        run = store.runs()[0].id
        (task,) = store.tasks(run)
        (attempt,) = store.attempts(run)
    assert "preparation" not in task.metadata and "NoSuchLibrary" not in task.header
    assert attempt.verdict is not None and attempt.verdict.passed
