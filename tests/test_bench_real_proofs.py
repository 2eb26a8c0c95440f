"""The real-code bench's own parts (`bench/bench_real_proofs.py`, issue 28 "How to measure").

The bench is the instrument the Coq verdict route is measured with before and after a change,
so what it measures must not drift: a task is a library file with one `Qed` proof replaced by
`Admitted.` and nothing else changed; `--spread` picks the same tasks for the same seed; and a
library's load path (`LIBRARIES`, written as a `_CoqProject` the product reads) is the one its
files need: Coq binds user-contrib with `-Q` only, so Coquelicot's `Require Import
Rcomplements.` compiles only under the library's own `-R`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_project import read_coq_project

ROOT = Path(__file__).resolve().parents[1]
needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

MATHCOMP_LIKE = """From mathcomp Require Import ssreflect ssrfun ssrbool.

Section S.
Variable T : Type.

Lemma a (x : T) : x = x.
Proof. by []. Qed.

Lemma b : True.
Proof. exact I. Defined.

Lemma c : True.
Proof. Admitted.

Fact d : 1 = 1.
Proof.
by [].
Qed.
End S.

Theorem e : 2 = 2.
Proof. reflexivity. Qed.
"""


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_real_proofs

        yield bench_real_proofs
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_a_task_is_the_file_with_one_qed_proof_admitted(bench: ModuleType) -> None:
    tasks = bench.tasks_of("x.v", MATHCOMP_LIKE)
    # `Defined` and `Admitted` proofs are no tasks: only a `Qed` proof can be taken away
    assert [t.theorem for t in tasks] == ["a", "d", "e"]
    for task in tasks:
        assert task.real == MATHCOMP_LIKE and task.file == "x.v"
    # everything else byte for byte: the proof is the only change
    proof_a = "x = x.\nProof. by []. Qed."
    assert tasks[0].original == MATHCOMP_LIKE.replace(proof_a, "x = x.\nAdmitted.")
    proof_d = "1 = 1.\nProof.\nby [].\nQed."
    assert tasks[1].original == MATHCOMP_LIKE.replace(proof_d, "1 = 1.\nAdmitted.")


def test_spread_picks_the_same_tasks_for_a_seed_in_file_order(bench: ModuleType) -> None:
    text = "".join(f"Lemma l{i} : True.\nProof. exact I. Qed.\n" for i in range(30))
    tasks = bench.tasks_of("f.v", text)
    assert [t.theorem for t in bench.pick(tasks, 3, False, 0)] == ["l0", "l1", "l2"]
    picked = [t.theorem for t in bench.pick(tasks, 3, True, 7)]
    assert picked == [t.theorem for t in bench.pick(tasks, 3, True, 7)]
    assert len(picked) == 3 and picked == sorted(picked, key=lambda n: int(n[1:]))
    seeds = {tuple(t.theorem for t in bench.pick(tasks, 3, True, s)) for s in range(5)}
    assert len(seeds) > 1  # the seed chooses
    assert bench.pick(tasks, None, True, 0) == tasks
    assert bench.pick(tasks[:2], 3, True, 0) == tasks[:2]


def _user_contrib() -> Path:
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True)
    return Path(where.stdout.strip()) / "user-contrib"


@needs_coq
def test_every_installed_library_gets_a_project_the_product_reads(
    bench: ModuleType, tmp_path: Path
) -> None:
    contrib = _user_contrib()
    installed = [n for n, lib in bench.LIBRARIES.items() if (contrib / lib.sources).is_dir()]
    if not installed:
        pytest.skip("no library of the bench is installed")
    for name in installed:
        lib = bench.LIBRARIES[name]
        folder = tmp_path / name
        folder.mkdir()
        project = read_coq_project(bench.library_project(lib, contrib, folder))
        root = (contrib / lib.root).resolve()
        assert project.args == (lib.flag, str(root), lib.logical)
        assert (contrib / lib.sources).resolve().is_relative_to(root)
        assert any((contrib / lib.sources).rglob("*.v")), f"{name}: no sources shipped"


@needs_coq
@pytest.mark.host(
    "reads the host's installed Coquelicot (/usr/lib/ocaml/coq), which a root toolchain does not show"
)
def test_a_coquelicot_file_compiles_only_under_its_own_load_path(
    bench: ModuleType, tmp_path: Path
) -> None:
    lib = bench.LIBRARIES["coquelicot"]
    source = _user_contrib() / lib.sources / "Markov.v"
    if not source.is_file():
        pytest.skip("libcoq-coquelicot is not installed")
    text = source.read_text()
    assert "\nRequire Import Rcomplements." in text  # a sibling by its short name
    bare = CoqBackend(timeout=120).check(text)
    assert not bare.compiled  # user-contrib's own binding is `-Q`: Rcomplements is not found
    project = bench.library_project(lib, _user_contrib(), tmp_path)
    assert CoqBackend(timeout=120, project_dir=project).check(text).compiled


def test_a_refusal_is_counted_by_its_rule_not_its_names(bench: ModuleType) -> None:
    open_section = (
        "undecided: the task's inductives or postulates before `{}` are inside a section or "
        "module still open there, so both sides have their own copy; renamed side to side, "
        "the statements still differ: definition `{}` is not the original's"
    )
    one = bench.refusal_class(open_section.format("GRing.mulr2n", "ratio_EqMixin"))
    assert one == bench.refusal_class(open_section.format("sgrMz", "int_eqMixin"))
    assert one.startswith("the task's inductives or postulates before `…` are inside")
    assert "renamed" not in one  # the details after `;` are the example's, not the rule's
    changed = 'horner_polyC` does not prove the original statement (kernel check): "x"'
    assert bench.refusal_class("`" + changed) == "`…` does not prove the original statement"
    assert bench.refusal_class("`" + changed) != one
    env = "undecided: environment: the original does not compile here: FbContext.v: The module"
    assert bench.refusal_class(env) == "the original does not compile here"


def test_a_toolchains_libraries_are_found_in_its_own_root(bench: ModuleType) -> None:
    # `--toolchain rocq-9.2`: the sources and the load path are the root's (mathcomp 2.x's
    # `boot` and `finite_group` folders), never the host's user-contrib
    from formalbench.core.errors import ToolchainMissingError
    from formalbench.toolchains.toolchain import resolve

    try:
        toolchain = resolve("rocq-9.2")
    except ToolchainMissingError:
        pytest.skip("rocq-9.2 is not installed")
    lib = bench.coqlib(toolchain)
    assert toolchain.root is not None and lib.is_relative_to(toolchain.root)
    contrib = lib / "user-contrib"
    assert (contrib / "Stdlib").is_dir()
    for name, library in bench.ROCQ9_LIBRARIES.items():
        if (contrib / library.root).is_dir():
            assert any((contrib / library.sources).glob("*.v")), name
    assert "mathclasses" not in bench.ROCQ9_LIBRARIES
