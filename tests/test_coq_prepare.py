"""Preparing a Coq task's header for a toolchain (backends/coq_prepare.py): each rule fires
only where the toolchain needs it, the statement is never touched, and the rules meet every
import-line cause results.tsv lists for PutnamBench-Coq on Rocq 9.2."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from formalbench.backends.coq_prepare import (
    ToolchainFacts,
    debian_versions,
    parse_version,
    prepare,
    prepare_task,
    prepare_tasks,
    sentences,
)
from formalbench.core.records import Language, Task
from formalbench.datasets.loader import load_tasks
from tests.shared_data import needs_shared

# Module paths as Rocq 9.2 with mathcomp 2.6 / analysis 1.17 lays them out (reals moved out
# of mathcomp.analysis, signed renamed interval_inference).
ROCQ = ToolchainFacts(
    name="rocq-9.2",
    coq=(9, 2),
    libraries={"mathcomp": (2, 6, 0), "mathcomp-analysis": (1, 17, 0)},
    modules=frozenset(
        {
            "mathcomp.ssreflect.all_ssreflect",
            "mathcomp.algebra.all_algebra",
            "mathcomp.reals.reals",
            "mathcomp.reals.interval_inference",
            "mathcomp.analysis.topology",
            "mathcomp.analysis.normedtype",
        }
    ),
)
COQ816 = ToolchainFacts(
    name="host",
    coq=(8, 16, 1),
    libraries={"mathcomp": (1, 15, 0), "mathcomp-analysis": (0, 6, 0)},
    modules=frozenset(
        {
            "mathcomp.ssreflect.all_ssreflect",
            "mathcomp.algebra.all_algebra",
            "mathcomp.analysis.reals",
            "mathcomp.analysis.signed",
            "mathcomp.analysis.topology",
        }
    ),
)
MATHCOMP = """From mathcomp Require Import all_algebra all_ssreflect.
From mathcomp.analysis Require Import reals signed topology.

Local Open Scope ring_scope.

"""
STATEMENT = "Variable R : realType.\nTheorem t (x : R) : x = x.\nProof. Admitted.\n"
STDLIB = "Require Import Reals Coquelicot.Coquelicot.\nOpen Scope R.\n"
STDLIB_STATEMENT = "Theorem t : fact 3 = 6%nat.\nProof. Admitted.\n"


def rules(header: str, formal: str, facts: ToolchainFacts) -> list[str]:
    return [c.rule for c in prepare(header, formal, facts).changes]


def test_nothing_changes_on_the_toolchain_the_statements_compile_on() -> None:
    assert prepare(MATHCOMP, STATEMENT, COQ816).header == MATHCOMP
    assert prepare(STDLIB, STDLIB_STATEMENT, COQ816).header == STDLIB
    assert rules(MATHCOMP, STATEMENT, COQ816) == []


def test_rocq_92_mathcomp_header() -> None:
    prepared = prepare(MATHCOMP, STATEMENT, ROCQ)
    assert prepared.header == (
        "From mathcomp Require Import all_ssreflect all_algebra.\n"
        "From mathcomp Require Import reals interval_inference topology.\n\n"
        "Local Open Scope ring_scope.\n\n"
        'Set Warnings "-declaration-outside-section".\n'
    )
    assert [c.rule for c in prepared.changes] == [
        "mathcomp-ssreflect-first",
        "module-renamed",
        "module-path-moved",
        "assumption-outside-section",
    ]
    record = prepared.record(ROCQ)
    assert record["toolchain"] == "rocq-9.2" and record["coq"] == "9.2"
    assert all(c["detail"] for c in record["changes"])


def test_rocq_92_stdlib_header_gets_the_arith_prelude_first() -> None:
    prepared = prepare(STDLIB, STDLIB_STATEMENT, ROCQ)
    assert prepared.header == "From Stdlib Require Import Arith ZArith.\n" + STDLIB
    assert rules("", "Require Import Reals.\n" + STDLIB_STATEMENT, ROCQ) == ["stdlib-arith-prelude"]
    assert rules("From Coq Require Import ZArith.\n", STDLIB_STATEMENT, ROCQ) == []


def test_a_renamed_module_that_ends_its_sentence_is_renamed() -> None:
    """PutnamBench 1974_b5: `... normedtype signed.` (the `.` right after the name) was
    recorded as renamed and left as it was, so the task did not compile on rocq-9.2."""
    header = "From mathcomp Require Import reals signed.\n"
    prepared = prepare(header, "", ROCQ)
    assert prepared.header == "From mathcomp Require Import reals interval_inference.\n"
    assert [c.rule for c in prepared.changes] == ["module-renamed"]
    # a name part after it is another module: left alone, and nothing recorded
    kept = "From mathcomp Require Import signed.x.\n"
    assert prepare(kept, "", ROCQ).header == kept
    assert "module-renamed" not in rules(kept, "", ROCQ)


def test_each_rule_needs_its_condition() -> None:
    # already in the right order; a section's variable; no module index: nothing to do
    assert rules("From mathcomp Require Import all_ssreflect all_algebra.\n", "", ROCQ) == []
    assert rules("", "Section S.\nVariable R : Type.\nEnd S.\n", ROCQ) == []
    blind = ToolchainFacts(name="x", coq=(9, 2), libraries=ROCQ.libraries)
    assert rules("From mathcomp.analysis Require Import signed.\n", "", blind) == []
    # the old name still there: not renamed
    old = ToolchainFacts("x", (9, 2), ROCQ.libraries, ROCQ.modules | {"mathcomp.analysis.signed"})
    assert rules("From mathcomp.analysis Require Import signed.\n", "", old) == []
    # a Context outside a section turns its own warning off
    assert prepare("", "Context (T : Type).\n", ROCQ).header == (
        'Set Warnings "-context-outside-section".\n'
    )
    assert rules("", "Parameter p : nat.\n", ROCQ) == []  # never an error


def test_preparing_twice_changes_nothing_more() -> None:
    for header, formal in ((MATHCOMP, STATEMENT), (STDLIB, STDLIB_STATEMENT)):
        once = prepare(header, formal, ROCQ)
        assert prepare(once.header, formal, ROCQ).header == once.header


def test_prepare_task_records_what_it_did_and_keeps_the_statement() -> None:
    task = Task(id="t", language=Language.coq, header=MATHCOMP, formal=STATEMENT)
    assert prepare_task(task, COQ816) is task
    prepared = prepare_task(task, ROCQ)
    assert prepared.formal == task.formal and prepared.header != task.header
    record = prepared.metadata["preparation"]
    assert record["header_as_given"] == MATHCOMP and len(record["changes"]) == 4
    assert prepared.source_text.endswith(STATEMENT)
    plain = Task(id="p", language=Language.coq, formal="Theorem p : True.\nProof. Admitted.\n")
    out, note = prepare_tasks([task, plain], ROCQ)
    assert out[1] is plain and out[0] == prepared
    assert note is not None and "1 task(s) prepared for toolchain rocq-9.2" in note
    assert "assumption-outside-section 1" in note
    assert prepare_task(prepared, ROCQ) == prepared  # a prepared task keeps its record
    assert prepare_tasks([task], COQ816)[1] is None


def test_versions_from_a_dpkg_status_file(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(
        "Package: libcoq-mathcomp-ssreflect\nStatus: install ok installed\nVersion: 2.6.0-3+b2\n\n"
        "Package: libcoq-gone\nStatus: deinstall ok config-files\nVersion: 1.0\n"
    )
    assert debian_versions(status) == {"libcoq-mathcomp-ssreflect": "2.6.0-3+b2"}
    assert debian_versions(tmp_path / "missing") == {}
    assert parse_version("1:8.16.1+dfsg-1") == (8, 16, 1) and parse_version("x") == ()


def _texts(text: str, keep: frozenset[str]) -> list[list[str]]:
    """The sentences of `text` as token texts, leaving out those a rule may add or rewrite."""
    out = []
    for sentence in sentences(text):
        words = [t.text for t in sentence]
        if not (set(words) & keep):
            out.append(words)
    return out


@pytest.fixture(scope="module")
def putnam(shared: Path) -> list[Task]:
    return load_tasks(shared / "data" / "putnambench-coq" / "src").tasks


@needs_shared
def test_no_statement_token_changes_on_any_putnam_file(putnam: list[Task]) -> None:
    touched = frozenset({"Require", "Warnings"})
    for task in putnam:
        prepared = prepare_task(task, ROCQ)
        assert prepared.formal == task.formal
        assert prepared.source_text.endswith(task.formal)
        # outside the import lines and the added warning line, the header is the same
        assert _texts(prepared.header, touched) == _texts(task.header, touched), task.id
        assert prepare_task(task, COQ816) is task  # 8.16 compiles them as given


@needs_shared
def test_every_import_line_cause_of_results_tsv_gets_its_rule(
    putnam: list[Task], shared: Path
) -> None:
    table = shared / "data" / "putnambench-coq" / "results.tsv"
    with table.open(encoding="utf-8") as handle:
        causes = {r["file"][:-2]: r["causes"] for r in csv.DictReader(handle, delimiter="\t")}
    expected = {
        "rocq-variable-outside-section": "assumption-outside-section",
        "rocq-context-outside-section": "assumption-outside-section",
        "mathcomp-numeral-import-order": "mathcomp-ssreflect-first",
        "analysis-path-moved(signed)": "module-renamed",
        "stdlib-reexport": "stdlib-arith-prelude",
    }
    met = 0
    for task in putnam:
        done = set(rules(task.header, task.formal, ROCQ))
        for cause, rule in expected.items():
            if cause in causes[task.id]:
                assert rule in done, (task.id, cause)
                met += 1
    assert met >= 135 + 1 + 76 + 1 + 6
