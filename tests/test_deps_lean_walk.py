"""The Lean dependency walk on the stand-in REPL (no Lean runs here): reading `#print`
answers, the file's own declarations as waypoints, unknown names neither counted nor
walked, and the SQLite cache. The stand-in cannot print library constants, so the library
level is exercised only as "unknown"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from formalbench.backends.lean.backend import LeanBackend
from formalbench.core.records import Language, Task
from formalbench.deps.lean_walk import LeanDependencyWalker, answer_names
from formalbench.deps.stats import ROOT, dependency_density, task_graph
from formalbench.metrics.density import LEAN_TRIVIAL
from formalbench.store.deps_cache import DepsCache

FAKE = Path(__file__).resolve().parent / "standins" / "fake_repl.py"
TEXT = (
    "import Mathlib\n\ndef f (n : Nat) : Nat := Real.sqrt n\n\n"
    "theorem t (x : Nat) (h : 0 < x) : f x ≠ 0 := by\n  sorry\n"
)


def test_answer_names_keep_full_names_and_drop_a_theorem_proof() -> None:
    text = "theorem foo : ∀ (x : Nat), @Eq Nat x x :=\nfun (x : Nat) => @rfl Nat x"
    # `rfl` is in the proof; the bound `x` is no constant (checking/lean_printed.py)
    assert answer_names(text, "foo") == ["Nat", "Eq"]
    assert answer_names("def g : Nat :=\n@_root_.Real.pi", "g") == ["Nat", "Real.pi"]


@pytest.fixture
def lean(tmp_path: Path):
    command = [sys.executable, str(FAKE), "--fixtures", str(tmp_path)]
    with LeanBackend(repl_command=command, workers=1) as backend:
        yield backend


def test_the_lean_walk_goes_through_own_definitions_and_is_cached(lean, tmp_path: Path) -> None:
    task = Task(id="t", language=Language.lean, formal=TEXT)
    cache = tmp_path / "deps.sqlite"
    with DepsCache(cache) as store:
        walker = LeanDependencyWalker(lean, store, workers=1)
        statements, library = walker.walk([task], 2)
        [s] = statements
        assert s.error is None and s.root == "Candidate.t"
        assert "Candidate.f" in s.edges["Candidate.t"]
        assert "Real.sqrt" in s.edges["Candidate.f"]
        graph = task_graph(s, library, 2)
        assert graph.has_edge("Candidate.f", "Real.sqrt")
        # the stand-in knows no library constant: every library name is `unknown`
        assert library["Real.sqrt"][0] == "unknown"
        report = dependency_density([task], walker, k=2, trivial=LEAN_TRIVIAL)
        assert report.tasks[0].rho == {1: 0, 2: 0}
        assert ROOT in graph
    with DepsCache(cache) as store:
        again = LeanDependencyWalker(lean, store, workers=1)
        again.walk([task], 2)
        assert again.stats.coqc_runs == 0 and again.stats.tasks_cached == 1
