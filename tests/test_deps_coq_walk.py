"""The Coq dependency walk and `formalbench stats` with real coqc: the statement's names, its
file's own definitions as waypoints, the library walk shared and cached in SQLite, and a
task that does not compile reported as skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.backends.coq import CoqBackend
from formalbench.cli.main import app
from formalbench.core.records import Language, Task
from formalbench.deps.coq_walk import CoqDependencyWalker
from formalbench.deps.stats import ROOT, dependency_density, task_graph
from formalbench.metrics.density import COQ_TRIVIAL, distances
from formalbench.store.deps_cache import DepsCache
from tests.suite_coq import std

pytestmark = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc is not installed")

HEAD = "Require Import Reals.\nOpen Scope R_scope.\n"
# Rge r1 r2 := Rgt r1 r2 \/ r1 = r2; f is the task's own definition, a waypoint to Rabs
OWN = "Definition f (x : R) : R := Rabs x.\nTheorem t : forall x, f x >= 0.\nProof.\nAdmitted.\n"
PLAIN = "Theorem u : forall x : R, x >= x.\nProof.\n"  # an open proof, as miniF2F files end
BROKEN = "Theorem v : forall x : R, x >= undefined_name.\nProof.\nAdmitted.\n"
RGE = "Coq.Reals.Rdefinitions.Rge"
RABS = "Coq.Reals.Rbasic_fun.Rabs"


def _tasks() -> list[Task]:
    return [
        Task(id="own", language=Language.coq, header=HEAD, formal=OWN),
        Task(id="plain", language=Language.coq, header=HEAD, formal=PLAIN),
        Task(id="broken", language=Language.coq, header=HEAD, formal=BROKEN),
    ]


def test_the_walk_reaches_the_library_through_own_definitions_and_caches_it(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "deps.sqlite"
    with CoqBackend(workers=2, timeout=120) as coq, DepsCache(cache) as store:
        walker = CoqDependencyWalker(coq, store, workers=2)
        statements, library = walker.walk(_tasks(), 2)
        own, plain, broken = statements
        graph = task_graph(own, library, 2)
        dist = distances(graph, ROOT, 2)
        assert dist["Candidate.f"] == 1 and dist[std(RGE)] == 1
        assert dist[std(RABS)] == 2  # through the file's own f
        assert dist[std("Coq.Reals.Rdefinitions.Rgt")] == 2  # from Rge's body
        assert not graph.nodes["Candidate.f"]["counted"]
        assert plain.error is None and std(RGE) in plain.edges[plain.root]
        assert broken.error is not None and "does not compile" in broken.error
        assert "undefined_name" in broken.error
        report = dependency_density(_tasks(), walker, k=2, trivial=COQ_TRIVIAL)
        assert walker.stats.coqc_runs > 0
    by_id = {t.id: t for t in report.tasks}
    assert by_id["broken"].skipped and not by_id["own"].skipped
    # own: R and Rge at 1; Rabs (through f) and Rgt (Rge's body) at 2
    assert by_id["own"].rho[1] < by_id["own"].rho[2]
    with CoqBackend(workers=1, timeout=120) as coq, DepsCache(cache) as store:
        again = CoqDependencyWalker(coq, store)
        second = dependency_density(_tasks(), again, k=2, trivial=COQ_TRIVIAL)
        assert again.stats.coqc_runs == 0  # everything came from the SQLite cache
    assert second.to_json() == report.to_json()


def test_stats_cli_prints_the_json_shape_and_refuses_bad_options(tmp_path: Path) -> None:
    data = tmp_path / "tasks"
    data.mkdir()
    (data / "own.v").write_text(HEAD + OWN, encoding="utf-8")
    runner = CliRunner()
    cache = str(tmp_path / "c.sqlite")
    html = tmp_path / "out" / "density.html"
    done = runner.invoke(
        app, ["stats", str(data), "--k", "2", "--json", "--cache", cache, "--html", str(html)]
    )
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert set(out) == {"k", "rho", "tasks"} and out["k"] == 2
    assert set(out["rho"]) == {"1", "2"} and set(out["rho"]["1"]) == {"mean", "median"}
    [task] = out["tasks"]
    assert task["id"] == "own" and task["rho"]["1"] == out["rho"]["1"]["mean"]
    assert "<svg" in html.read_text(encoding="utf-8")
    for bad in (["--k", "0"], ["--backend", "isabelle"]):
        done = runner.invoke(app, ["stats", str(data), *bad])
        assert done.exit_code == 2, done.output
