"""A compile pass in APE cannot be forged (issue 23, item 1), on real coqc: Coq's view of
two small files. The same cheats through `formalbench ape eval` (stand-in model, a real
mined task) are in `test_ape_loop.py::test_full_loop_on_real_coqc`.
"""

from __future__ import annotations

import shutil

import pytest

from formalbench.backends.coq import CoqBackend
from formalbench.pipelines.ape.completeness import judge_completeness, read_view

coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")

OBLIGATION = "+Program Definition cheat : False := _.\n+Admit Obligations.\n+"
VARIABLE = '+Set Warnings "-local-declaration".\n+Variable cheat : False.\n+'
CONTEXT = "+Context (cheat : False).\n+"


@coq
def test_silenced_variable_is_an_axiom_coq_reports() -> None:
    """Even with its warning silenced (as if the gate let it through), Coq's assumptions of
    the file name the variable: the axiom check alone refuses it; a changed statement and an
    added lemma are reported, not refused."""
    backend = CoqBackend(timeout=60, workers=1)
    before = "Lemma foo : 1 = 1. Proof. reflexivity. Qed.\nLemma old : 2 = 2. Admitted.\n"
    base = read_view(backend, before, 60)
    assert base.problem is None and base.holes == ["old"]
    # the variable closes `old`'s hole; Coq names it among `old`'s assumptions (Rocq 9 makes a
    # top-level Variable `#[local]`: not listed after `Require`, but named where it is used)
    used = before.replace("2 = 2. Admitted.", "2 = 2. Proof. destruct cheat. Qed.")
    silenced = 'Set Warnings "-all".\nVariable cheat : False.\n' + used
    verdict = judge_completeness(base, read_view(backend, silenced, 60))
    assert not verdict["complete"] and verdict["new_axioms"] == ["Candidate.cheat"]
    edited = before.replace("1 = 1", "2 = 2") + "Lemma extra : 3 = 3. Proof. reflexivity. Qed.\n"
    verdict = judge_completeness(base, read_view(backend, edited, 60))
    assert verdict["complete"], verdict["reasons"]  # `old` keeps the hole it had
    assert verdict["declarations"] == {
        "changed": ["Candidate.foo"],
        "removed": [],
        "added": ["Candidate.extra"],
    }
    dropped = before.replace("Lemma old : 2 = 2. Admitted.\n", "")
    later = "Lemma new : 4 = 4. Admitted.\n"
    verdict = judge_completeness(base, read_view(backend, dropped + later, 60))
    assert not verdict["complete"] and verdict["new_holes"] == ["new"]
    assert verdict["declarations"]["removed"] == ["Candidate.old"]
