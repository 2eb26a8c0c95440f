"""`formalbench compare` and the Coq operator trees, with real coqc."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app
from formalbench.metrics.coq_optree import CoqParseError, coq_tree
from formalbench.metrics.gted import gted
from formalbench.metrics.optree import HYPOTHESIS, VARIABLE

ARITH = "Require Import Arith.\n"
needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="needs coqc")


def test_printed_terms_become_trees_with_folded_numerals() -> None:
    printed = (
        "forall (x : R) (_ : Rlt (IZR Z0) x), Rlt (IZR (Zpos (xO xH))) (Rmult (exp x) x)\n"
        "     : Prop"
    )
    tree = coq_tree(printed)
    assert tree.show() == (
        "(theorem (forall (_ : _ x* R) (_ : _ _* (Rlt 0 x*)) (Rlt 2 (Rmult (exp x*) x*))))"
    )
    binders = tree.children[0].children[:2]
    assert [b.children[0].free for b in binders] == [VARIABLE, HYPOTHESIS]
    nat = coq_tree("forall (n : nat) (_ : le (S (S (S O))) n), lt n (Nat.pow (S (S O)) n)")
    assert "(le 3 n*)" in nat.show() and "(Nat.pow 2 n*)" in nat.show()
    renamed = coq_tree("forall (m : nat) (_ : le (S (S (S O))) m), lt m (Nat.pow (S (S O)) m)")
    assert gted(nat, renamed) == 1.0
    with pytest.raises(CoqParseError):
        coq_tree("match n with O => True | S _ => False end")


@needs_coq
@pytest.mark.coq
def test_compare_command(tmp_path: Path) -> None:
    ref = tmp_path / "ref.v"
    ref.write_text(ARITH + "Theorem p (n : nat) (h : 0 < n) : n < 2 ^ n.\n", encoding="utf-8")
    same = tmp_path / "same.v"
    same.write_text(ARITH + "Theorem q (m : nat) (h : m > 0) : 2 ^ m > m.\nProof. Admitted.\n")
    weaker = tmp_path / "weaker.v"
    weaker.write_text(ARITH + "Theorem q (m : nat) (h : m > 0) : 2 ^ m >= m.\n")
    runner = CliRunner()
    out = runner.invoke(app, ["compare", str(ref), str(same), "--backend", "coq", "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert got["beq"] and got["forward"] and got["backward"] and got["compiled"]
    assert 0.0 < got["gted"] < 1.0
    out = runner.invoke(app, ["compare", str(ref), str(weaker), "--backend", "coq", "--json"])
    got = json.loads(out.stdout)
    assert out.exit_code == 0 and not got["beq"] and not got["backward"]
    hostile = tmp_path / "hostile.v"
    hostile.write_text('Redirect "out" Check nat.\nTheorem q : 1 = 1.\n')
    out = runner.invoke(app, ["compare", str(ref), str(hostile), "--json"])
    assert out.exit_code == 2
    out = runner.invoke(app, ["compare", str(ref), str(tmp_path / "missing.v"), "--json"])
    assert out.exit_code == 2
