"""CoqBackend against the real coqc (the suite's toolchain) on small sources and miniF2F-rocq files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formalbench.backends.base import CheckRequest
from formalbench.backends.coq import LOCAL_MODULE, CoqBackend
from formalbench.core.errors import InputError, ToolchainMissingError
from formalbench.core.records import CheckResult, CheckStatus
from tests.shared_data import ROOT, needs_shared
from tests.suite_coq import std

MINIF2F = ROOT / "data" / "minif2f-coq"

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")
pytestmark = pytest.mark.coq


@pytest.fixture(scope="module")
def coq():
    with CoqBackend(workers=2, timeout=30) as backend:
        yield backend


def only_error(result: CheckResult):
    (error,) = result.errors
    return error


def within_source(result: CheckResult, source: str) -> bool:
    last = len(source.rstrip("\n").split("\n"))
    lines = [d.line for d in result.diagnostics] + [d.end_line for d in result.diagnostics]
    return all(line is None or 1 <= line <= last for line in lines)


def test_missing_coqc_names_the_tool_and_how_to_install_it() -> None:
    with pytest.raises(ToolchainMissingError, match="apt-get install coq libcoq-coquelicot"):
        CoqBackend(coqc="formalbench-no-such-coqc")


@needs_coq
def test_version_and_targets_refused(coq: CoqBackend) -> None:
    version = coq.toolchain.version()
    assert coq.version().startswith(f"coq {version} (toolchain {coq.toolchain.name} coq {version}")
    # axioms are never read in the candidate's scope (the identity file reads them)
    with pytest.raises(InputError, match="reports no axioms"):
        coq.check("Theorem foo : True. Proof. exact I. Qed.", targets=["foo"])


@needs_coq
def test_a_proof_that_compiles_is_closed_with_no_holes(coq: CoqBackend) -> None:
    source = (
        "Theorem add_0 : forall n : nat, n + 0 = n.\n"
        "Proof. intros n. induction n as [|n IH]; simpl; [reflexivity | rewrite IH; reflexivity].\n"
        "Qed.\n"
    )
    result = coq.check(source)
    assert result.status == CheckStatus.ok and result.compiled
    assert result.diagnostics == [] and result.holes == [] and result.axioms == {}


@needs_coq
def test_multi_line_error_with_exact_position(coq: CoqBackend) -> None:
    source = "Theorem foo : forall n : nat, n + 0 = n.\nProof.\n  intros n.\n  simpl.\n  reflexivity.\nQed."
    error = only_error(coq.check(source))
    assert (error.line, error.column, error.end_line, error.end_column) == (5, 2, 5, 13)
    assert error.message.splitlines() == [
        "In environment",
        "n : nat",
        'Unable to unify "n" with "n + 0".',
    ]


@needs_coq
def test_a_range_that_runs_onto_the_next_line(coq: CoqBackend) -> None:
    source = "Lemma t3 : True.\nProof. exact (fun (x : nat) =>\n   x + 1). Qed.\n"
    error = only_error(coq.check(source))
    assert (error.line, error.column, error.end_line, error.end_column) == (2, 14, 3, 8)
    assert "product" in error.message


@needs_coq
def test_utf8_columns_count_characters_not_bytes(coq: CoqBackend) -> None:
    line = "Theorem t (h₀ : 0 < 1) (α : nat) : α = foo."
    source = "(* ≤ ∀ ℝ *)\n" + line + "\nProof. Admitted.\n"
    error = only_error(coq.check(source))
    column = line.index("foo")
    assert column != len(line[:column].encode())  # the test means something
    assert (error.line, error.column, error.end_line, error.end_column) == (
        2,
        column,
        2,
        column + 3,
    )
    token = only_error(coq.check("Definition d := 1 ≤ 2.\n"))
    assert (token.column, token.end_column) == (18, 19) and "Undefined token" in token.message


@needs_shared
@needs_coq
def test_real_minif2f_utf8_file_with_an_injected_error(coq: CoqBackend) -> None:
    source = (MINIF2F / "test" / "imo_1964_p2.v").read_text(encoding="utf-8")
    assert coq.check(source).compiled
    broken = source.replace("3 * a * b * c", "3 * a * b * d")
    line_no, line = next((i + 1, t) for i, t in enumerate(broken.split("\n")) if "* d." in t)
    error = only_error(coq.check(broken))
    assert "²" in line and (error.line, error.column) == (line_no, line.index("* d") + 2)


@needs_shared
@needs_coq
def test_minif2f_admitted_statement_and_open_proof(coq: CoqBackend) -> None:
    source = (MINIF2F / "test" / "aime_1983_p1.v").read_text(encoding="utf-8")
    result = coq.check(source)
    assert result.compiled
    (hole,) = result.holes
    assert source.split("\n")[hole.line - 1][hole.column : hole.end_column] == "Admitted."
    open_proof = (MINIF2F / "test" / "aime_1983_p3.v").read_text(encoding="utf-8")
    result = coq.check(open_proof)
    assert "pending proofs" in only_error(result).message and within_source(result, open_proof)


@needs_coq
def test_timeout_is_cut_within_its_limit(coq: CoqBackend) -> None:
    source = (
        "Require Import PArith.\n"
        "Definition x := Eval vm_compute in Pos.iter negb true 1000000000000%positive.\n"
    )
    result = coq.check(source, timeout=1.5)
    assert result.status == CheckStatus.timeout and not result.compiled
    assert 1.5 <= result.elapsed < 4.0


@needs_coq
def test_out_of_memory_under_a_small_cap() -> None:
    source = (
        "Require Import List.\n"
        "Definition big := Eval vm_compute in List.length (List.repeat tt 100000000).\n"
    )
    with CoqBackend(workers=1, memory_mb=600, timeout=30) as small:
        result = small.check(source)
    assert result.status == CheckStatus.out_of_memory and not result.compiled


@needs_coq
@pytest.mark.host("coqc 8.16 (OCaml 4) overflows its system stack; Rocq 9.2 (OCaml 5) grows it")
def test_stack_overflow_is_exhaustion() -> None:
    deep = (
        "Fixpoint f (n : nat) : nat := match n with 0 => 0 | S m => S (f m) end.\n"
        "Definition big := Eval cbv in f 1000000.\n"
    )
    with CoqBackend(workers=1, timeout=30) as backend:
        result = backend.check(deep)
    assert result.status == CheckStatus.out_of_memory
    assert any(e.message == "Stack overflow." and e.line == 2 for e in result.errors)


@needs_coq
def test_axioms_by_full_path_in_a_file_that_only_requires_the_candidate(coq: CoqBackend) -> None:
    """What the identity file does for the verifier (`library_assumptions`, same grammar):
    the file's own postulates, holes and unguarded fixpoints are `Candidate.*` whatever they
    are named, a library axiom comes back by its full path."""
    from formalbench.backends.coq_assumptions import library_assumptions
    from formalbench.backends.sandbox import work_dir

    source = (
        "Require Import Classical.\n"
        "Axiom classic : forall n : nat, n = n.\n"  # shadows the library name on purpose
        "Theorem adm : 1 = 2. Admitted.\n"
        "Module M. Axiom inner : False. End M.\n"
        "Theorem uses (P : Prop) : P \\/ ~ P.\n"
        "Proof. pose proof (classic 0). pose proof adm. destruct M.inner. Qed.\n"
        "Theorem lib (P : Prop) : P \\/ ~ P. Proof. apply Classical_Prop.classic. Qed.\n"
        "Theorem part : 1 = 1 /\\ 2 = 2. Proof. split. (* admit *) admit. reflexivity. Admitted.\n"
        "Unset Guard Checking.\nFixpoint loop (n : nat) : False := loop n.\nSet Guard Checking.\n"
        "Theorem absurd : False. Proof. exact (loop 0). Qed.\n"
    )
    with work_dir("coq") as tmp:
        result = coq.check(source, workdir=Path(tmp))
        assert result.compiled, result.diagnostics
        axioms = library_assumptions(
            coq, Path(tmp), LOCAL_MODULE, ["uses", "lib", "part", "absurd"], 30
        )
    local = f"{LOCAL_MODULE}."
    assert sorted(axioms["uses"]) == [local + "M.inner", local + "adm", local + "classic"]
    assert axioms["lib"] == [std("Coq.Logic.Classical_Prop.classic")]
    assert axioms["part"] == [local + "part"] and axioms["absurd"] == [local + "loop"]
    lines = source.split("\n")
    holes = [lines[h.line - 1][h.column : h.end_column] for h in result.holes]
    assert holes == ["Admitted.", "admit", "Admitted."]


@needs_coq
def test_errors_at_the_end_of_the_file_stay_inside_it(coq: CoqBackend) -> None:
    sources = [
        "Theorem foo : True.\nProof.\n  exact I.\nQed",  # no final period
        "Theorem foo : True.\nProof.\n  exact I.\nQed. (* unterminated",
        "Theorem foo : True.\nProof.\n  idtac.\n",  # open proof
        "Section S. Variable v : nat.\nTheorem foo : v = v. reflexivity. Qed.\n",
    ]
    for source in sources:
        result = coq.check(source)
        assert not result.compiled and within_source(result, source), result.diagnostics
    no_period = coq.check(sources[0])
    assert only_error(no_period).line == 4 and "'.' expected" in only_error(no_period).message


@needs_coq
def test_concurrent_checks_match_one_by_one(coq: CoqBackend) -> None:
    sources = [
        "Theorem a : 2 + 2 = 4. Proof. reflexivity. Qed.",
        "Theorem b : 2 + 2 = 5. Proof. reflexivity. Qed.",
        "Require Import Classical.\nTheorem c (P : Prop) : P \\/ ~ P. apply classic. Qed.",
        "Theorem d : True. Admitted.\nLemma d' : True.",
        "Lemma e : False.\nProof.\n  auto.\nQed.",
    ]
    requests = [CheckRequest(source=s) for s in sources]
    together = list(coq.check_many(requests))
    alone = [coq.check(s) for s in sources]

    def essence(r: CheckResult):
        return r.status, r.diagnostics, r.holes, r.axioms

    assert [essence(r) for r in together] == [essence(r) for r in alone]
    assert [r.compiled for r in together] == [True, False, True, False, False]


def test_a_coqc_that_fails_without_a_message_is_not_a_compile(tmp_path: Path) -> None:
    """A wrapper or sandbox that cannot start coqc exits non-zero with text that is no Coq
    message (bwrap: "Can't mkdir /root"): the check fails, it never reads as compiled."""
    fake = tmp_path / "coqc"
    fake.write_text(
        '#!/bin/sh\necho "bwrap: Can\'t mkdir /root: Read-only file system" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    result = CoqBackend(coqc=str(fake), workers=1).check(
        "Theorem t : True.\nProof. exact I. Qed.\n"
    )
    assert not result.compiled
    assert "exited with code 1" in result.errors[0].message
    assert "Can't mkdir /root" in result.errors[0].message
