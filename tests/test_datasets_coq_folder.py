"""The Coq folder importer on PutnamBench-Coq's shape: postulates, library labels, contest
labels and the Coq the folder was written for (datasets/coq_tasks.py, loader.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from formalbench.core.records import Language, Task
from formalbench.datasets.coq_tasks import (
    contest_labels,
    library_labels,
    top_level_postulates,
    written_for,
)
from formalbench.datasets.loader import load_tasks
from tests.shared_data import needs_shared


def test_postulates_are_the_names_top_level_assumptions_bind() -> None:
    text = """
Variable R : realType.
Variables (I : finType) (P : pred I).
Context d (T : measurableType d) `{T3D : Tarski_3D} `{Tarski_2D} [C : Type].
Hypothesis h : 1 = 1.
Section S.
Variable local : nat.
Context (also_local : nat).
Axiom in_section_is_global : False.
End S.
Module M.
Parameter p : nat.
End M.
Module N := M.
Theorem t : True. Proof. Admitted.
"""
    assert top_level_postulates(text) == [
        "R",
        "I",
        "P",
        "d",
        "T",
        "T3D",
        "C",
        "h",
        "in_section_is_global",
        "M.p",
    ]


def test_a_signature_constraint_is_no_module_body() -> None:
    """`with Module E := X` (stdlib FSetPositive.v's shape) constrains the signature: the
    module still opens its scope, so its parameters are `P.p` and `Q.q` (read as top-level
    `p` and `q` before); `Module R := P.` still opens nothing."""
    text = """
Module Type S. Definition t := nat. End S.
Module X. Definition t := nat. End X.
Module Type T. Declare Module E : S. End T.
Module P <: T with Module E := X.
Module E := X.
Parameter p : nat.
End P.
Module Q <: T with Module E:=X.
Module E := X.
Parameter q : nat.
End Q.
Module R := P.
Parameter r : nat.
"""
    assert top_level_postulates(text) == ["P.p", "Q.q", "r"]


def test_a_file_with_no_assumption_postulates_nothing() -> None:
    assert top_level_postulates("Theorem t (x : nat) : x = x.\nProof. Admitted.\n") == []


def test_library_labels_follow_the_requires() -> None:
    mathcomp = (
        "From mathcomp Require Import all_ssreflect reals.\nFrom HB Require Import structures."
    )
    assert library_labels(mathcomp) == {"library": "mathcomp", "libraries": "HB,mathcomp"}
    stdlib = "Require Import Reals Coquelicot.Coquelicot. From mathcomp Require Import div."
    assert library_labels(stdlib) == {
        "library": "stdlib",
        "libraries": "Coquelicot,Stdlib,mathcomp",
    }
    assert library_labels("From Stdlib Require Import ZArith.") == {
        "library": "stdlib",
        "libraries": "Stdlib",
    }
    assert library_labels("Theorem t : True. Proof. Admitted.") == {}


def test_contest_labels_from_the_file_name() -> None:
    assert contest_labels("putnam_1962_a2") == {
        "contest": "putnam",
        "year": "1962",
        "problem": "a2",
    }
    assert contest_labels("putnam_2023_b6") == {
        "contest": "putnam",
        "year": "2023",
        "problem": "b6",
    }
    assert contest_labels("mathd_algebra_478") == {}
    assert contest_labels("lemma_foo") == {}


def test_written_for_reads_a_pin_an_opam_bound_or_a_provenance_note(tmp_path: Path) -> None:
    folder = tmp_path / "coq" / "src"
    folder.mkdir(parents=True)
    assert written_for(folder, tmp_path / "coq") is None
    (tmp_path / "coq" / "setup.sh").write_text("opam switch create x\nopam pin add -y coq 8.18.0\n")
    assert written_for(folder, folder) == "coq-8.18"
    (folder / "x.opam").write_text('depends: [ "rocq-prover" {>= "9.1"} ]\n')
    assert written_for(folder, folder) == "rocq-9.1"  # the nearest folder says first


def test_a_loaded_folder_records_postulates_labels_and_toolchain(tmp_path: Path) -> None:
    (tmp_path / "SOURCE.txt").write_text("written for: Coq 8.18 + mathcomp\n")
    (tmp_path / "putnam_2000_a1.v").write_text(
        "From mathcomp Require Import all_ssreflect.\n\nVariable R : Type.\n"
        "Theorem putnam_2000_a1 (x : R) : x = x.\nProof. Admitted.\n"
    )
    (task,) = load_tasks(tmp_path).tasks
    assert task.postulates == ["R"]
    assert task.toolchain == "coq-8.18"
    assert task.labels == {
        "contest": "putnam",
        "year": "2000",
        "problem": "a1",
        "library": "mathcomp",
        "libraries": "mathcomp",
    }
    assert task.header.startswith("From mathcomp") and task.formal.startswith("Variable R")
    again = Task.model_validate_json(task.model_dump_json())
    assert again == task


def test_postulates_are_written_only_when_there_are_some() -> None:
    task = Task(id="t", language=Language.coq, formal="Theorem t : True. Proof. Admitted.")
    assert "postulates" not in task.model_dump_json()
    assert '"postulates":["R"]' in task.model_copy(update={"postulates": ["R"]}).model_dump_json()


@pytest.fixture(scope="module")
def putnam(shared: Path) -> dict[str, Task]:
    return {t.id: t for t in load_tasks(shared / "data" / "putnambench-coq" / "src").tasks}


@needs_shared
def test_putnambench_coq_folder_imports_every_statement(putnam: dict[str, Task]) -> None:
    assert len(putnam) == 412
    assert all(t.toolchain == "coq-8.18" and t.source == "putnambench-coq" for t in putnam.values())
    assert all(t.labels["contest"] == "putnam" for t in putnam.values())
    libraries = [t.labels["library"] for t in putnam.values()]
    assert libraries.count("mathcomp") == 185 and libraries.count("stdlib") == 227
    # the 132 `Variable R : realType.` files and a few others postulate; the rest do not
    assert sum(t.postulates == ["R"] for t in putnam.values()) == 132
    assert sum(bool(t.postulates) for t in putnam.values()) == 141


@needs_shared
def test_putnambench_coq_real_files(putnam: dict[str, Task], shared: Path) -> None:
    a2 = putnam["putnam_1962_a2"]
    assert a2.postulates == ["R"]
    assert a2.labels["year"] == "1962" and a2.labels["problem"] == "a2"
    assert a2.labels["library"] == "mathcomp"
    assert a2.header.splitlines()[0] == "From mathcomp Require Import all_algebra all_ssreflect."
    assert a2.formal.startswith("Variable R : realType.\nDefinition mu")
    source = (shared / "data" / "putnambench-coq" / "src" / "putnam_1962_a2.v").read_text()
    assert a2.source_text == source  # header and formal are the file, cut in two
    stdlib = putnam["putnam_1965_a2"]
    assert stdlib.postulates == [] and stdlib.labels["library"] == "stdlib"
    assert stdlib.labels["libraries"] == "Coquelicot,Stdlib"
    assert putnam["putnam_2014_a4"].postulates == ["d", "T", "R", "P"]  # a Context line
    assert putnam["putnam_1963_b6"].postulates == ["T3D"]  # GeoCoq's instance binder
    # a file that opens a section before its requires keeps them in its statement text
    assert putnam["putnam_1969_b5"].header == "" and putnam["putnam_1969_b5"].postulates == []
