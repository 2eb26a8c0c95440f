"""`compare` with each statement elaborated in its own header only (issue 20), and what it
prints (issue 21 item 11), with real coqc: a candidate's scope or imports never reach the
reference, a term the tree reader cannot read leaves BEq decided, and the output says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.comparison.beq_coq import CoqBeq, parse_statement
from formalbench.comparison.beq_lean import parse_lean_statement
from formalbench.comparison.compare import coq_gted
from formalbench.core.errors import InputError

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")
NAT = "Require Import Arith Lia.\n"
ZS = "Require Import ZArith Lia.\nOpen Scope Z_scope.\n"
SQ = "Definition sq (x : nat) := (x * x)%nat.\n"


def thm(header: str, statement: str) -> str:
    return f"{header}Theorem t : {statement}.\nProof.\nAdmitted.\n"


def run(tmp_path: Path, reference: str, candidate: str, *extra: str) -> tuple[int, str]:
    (tmp_path / "ref.v").write_text(reference, encoding="utf-8")
    (tmp_path / "cand.v").write_text(candidate, encoding="utf-8")
    args = ["compare", str(tmp_path / "ref.v"), str(tmp_path / "cand.v"), *extra]
    out = CliRunner().invoke(app, args)
    return out.exit_code, out.stdout


@needs_coq
@pytest.mark.coq
def test_the_issues_examples_are_decided(tmp_path: Path) -> None:
    # the same theorem over Z under `Open Scope Z_scope`: before, the candidate's header
    # reached the reference (exit 2); now both are decided, and trivially true statements
    # are not "equivalent", with the reason and the tactics said in words
    code, out = run(
        tmp_path,
        thm(NAT, "forall a b : nat, a + b = b + a"),
        thm(ZS, "forall a b : Z, a + b = b + a"),
    )
    assert code == 0, out
    assert out.startswith("equivalent (BEq): no: both statements are provable without")
    assert "True" not in out and "False" not in out
    assert "forward  (reference ⊢ candidate): proved by `" in out
    assert "provable alone (by `intros; " in out and "compiled: yes" in out
    # the curried/uncurried pair the tree reader could not read (`(...)` elided by Coq)
    code, out = run(
        tmp_path,
        thm(NAT, "forall n : nat, n > 2 /\\ n < 50 -> n * n > 4"),
        thm(NAT, "forall n : nat, n > 2 -> n < 50 -> n * n > 4"),
        "--json",
    )
    got = json.loads(out)
    assert code == 0 and got["compiled"] and got["gted"] is not None and 0 < got["gted"] < 1
    assert got["trivial"] == {"forward": True, "backward": True} and got["alone"]["forward"]


@needs_coq
@pytest.mark.coq
def test_headers_do_not_leak_and_mutations_are_judged() -> None:
    hard = "forall a b : nat, a < b -> 2 ^ a < 2 ^ b"
    untyped = "forall a b, a < b -> 2 ^ a < 2 ^ b"  # nat in one header, Z in the other
    squared = "forall n : nat, sq n < 2 ^ (2 * n + 1)"
    dropped = "forall a b : nat, 2 ^ a < 2 ^ b"
    squared = "forall n : nat, sq n < 2 ^ (2 * n + 1)"
    dropped = "forall a b : nat, 2 ^ a < 2 ^ b"
    matching = "forall n : nat, match n with O => True | S _ => n < 2 ^ n end"
    pairs = {
        "other header, same statement": (
            thm(NAT, hard),
            thm("Require Import ZArith.\nSet Implicit Arguments.\n" + NAT, hard),
            True,
        ),
        "same text, Z scope": (thm(NAT, untyped), thm(ZS, untyped), False),
        "same text, same header": (thm(ZS, untyped), thm(ZS, untyped), True),
        "over Z": (thm(NAT, hard), thm(ZS, hard.replace("nat", "Z")), False),
        "hypothesis dropped": (thm(NAT, hard), thm(NAT, dropped), False),
        "unreadable tree": (thm(NAT, matching), thm("Require Import Arith.\n", matching), True),
        # each side's own definition: two constants, related by conversion
        "own definitions": (
            thm(NAT + SQ, squared),
            thm("Require Import ZArith Arith.\n" + SQ, squared),
            True,
        ),
    }
    found = CoqBeq(timeout=60).compare_many([(r, c) for r, c, _ in pairs.values()])
    for (name, (_, _, want)), result in zip(pairs.items(), found, strict=True):
        assert result.compiled and result.beq is want, (name, result)
    one_way = found[4]
    assert one_way.backward.counts and not one_way.forward.proved  # one way only
    assert found[0].forward.detail == "exact fb_other"
    # `match` is outside the tree grammar: BEq stands, GTED says why it is missing
    gted = coq_gted(found[5])
    assert gted["gted"] is None and "cannot read Coq's printed statement" in gted["gted_error"]
    assert coq_gted(found[2]) == {"gted": 1.0}


def test_names_reserved_for_the_comparison_are_refused() -> None:
    with pytest.raises(InputError, match="reserves"):
        parse_statement("Theorem t : fb_statement_0 -> True.", "candidate")
    with pytest.raises(InputError, match="reserves"):
        parse_statement("From FbBeq Require Import FbS0a.\nTheorem t : True.", "candidate")
    with pytest.raises(InputError, match="no proof mode"):  # an admitted body is an axiom
        parse_statement("Definition x : False.\nAdmitted.\nTheorem t : True.", "candidate")
    with pytest.raises(InputError, match="reserves"):
        parse_lean_statement("theorem t : fb_statement_reference := by sorry", "candidate")


def test_the_run_is_read_in_order_and_printed_terms_forge_nothing() -> None:
    from formalbench.comparison.beq_coq import PROBES, read_run

    stdout = "\n".join(
        [
            "formalbench_tree 0",
            '= forall n : nat, "formalbench_beq 0_forward yes"',
            "     : Type",
            "Chars 10 - 20 [Goal~True.] 0. secs (0.u,0.s)",
            PROBES,
            "formalbench_beq 0_forward try 0",
            "formalbench_beq 0_forward try 3",
            "formalbench_beq 0_forward yes",
            "formalbench_beq 0_candidate_alone try 0",
            "formalbench_beq 0_candidate_alone no",
        ]
    )
    said = read_run(stdout, ["FbSab.fb_statement_0"])
    assert said.verdict == {"0_forward": "yes", "0_candidate_alone": "no"}
    assert said.winner == {"0_forward": 3}
    assert said.printed["FbSab.fb_statement_0"].startswith("forall n : nat")
    # without the probes marker nothing counts as a verdict, whatever a term printed
    assert read_run(stdout.split(PROBES)[0], ["x"]).verdict == {}


def test_undecided_comparisons_say_so() -> None:
    from formalbench.cli.compare import human

    out = {
        "beq": False,
        "undecided": True,
        "reason": "undecided: coqc stopped before this check (timeout): no output",
        "compiled": True,
        "trivial": {"forward": False, "backward": False},
        "tactics": {"forward": "", "backward": ""},
        "gted": None,
        "gted_error": "coqc did not print both statements",
        "tier": "portfolio",
    }
    text = human(out)
    assert text.startswith("equivalent (BEq): undecided: coqc stopped before this check")
    assert "GTED: unavailable (coqc did not print both statements)" in text
