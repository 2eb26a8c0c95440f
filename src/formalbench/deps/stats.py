"""`formalbench stats`: the dependency density rho_1..rho_k of every task of a dataset.

The walk (`coq_walk`) hands down, per task, the statement's own part of the graph and the
shared library part; here each task's graph is assembled with networkx (nodes within k
hops of the statement) and `metrics.density` counts. Tasks the assistant cannot read (a
file that does not compile with this Coq, a missing library) are reported as skipped
with their reason, never fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import networkx as nx

from formalbench.core.records import Task
from formalbench.deps.coq_walk import LOCAL, StatementDeps, WalkStats
from formalbench.metrics.density import rho, summarize


class Walker(Protocol):
    """What `dependency_density` needs of a walk (`CoqDependencyWalker`, `LeanDependencyWalker`).
    `progress(n, cached)`: n more statements done, read from the cache or not."""

    stats: WalkStats

    def walk(
        self, tasks: Sequence[Task], depth: int, progress: Callable[[int, bool], None] | None = None
    ) -> tuple[list[StatementDeps], dict[str, tuple[str, list[str]]]]: ...


ROOT = "@statement"  # the problem p itself; its file's declarations are `Candidate.*`


@dataclass
class TaskDensity:
    id: str
    rho: dict[int, int] = field(default_factory=dict)
    nodes: int = 0
    skipped: str | None = None


@dataclass
class DensityReport:
    k: int
    tasks: list[TaskDensity]
    summary: dict[str, dict[str, Any]]
    walk: WalkStats
    elapsed: float = 0.0

    @property
    def measured(self) -> list[TaskDensity]:
        return [t for t in self.tasks if t.skipped is None]

    @property
    def skipped(self) -> list[TaskDensity]:
        return [t for t in self.tasks if t.skipped is not None]

    def to_json(self) -> dict[str, Any]:
        """The `--json` object: k, mean and median per j, and each measured task's rho."""
        return {
            "k": self.k,
            "rho": {j: {"mean": v["mean"], "median": v["median"]} for j, v in self.summary.items()},
            "tasks": [
                {"id": t.id, "rho": {str(j): n for j, n in t.rho.items()}} for t in self.measured
            ],
        }


def task_graph(
    statement: StatementDeps, library: dict[str, tuple[str, list[str]]], k: int
) -> nx.DiGraph:
    """The dependency graph of one statement, to `k` hops: the statement's node (ROOT),
    its file's own declarations (waypoints, not counted) and library declarations."""
    graph = nx.DiGraph()
    graph.add_node(ROOT, counted=False)
    edges = statement.edges
    frontier = [(ROOT, 0)]
    seen = {ROOT}
    while frontier:
        node, dist = frontier.pop(0)
        if dist >= k:
            continue
        if node == ROOT:
            uses = edges.get(statement.root, [])
        elif node.startswith(LOCAL):
            uses = edges.get(node, [])
        else:
            uses = library.get(node, ("", []))[1]
        for used in uses:
            if used not in graph:
                local = used.startswith(LOCAL)
                kind = library.get(used, ("", []))[0]
                graph.add_node(used, counted=not local and kind not in ("alias", "unknown"))
            graph.add_edge(node, used)
            if used not in seen:
                seen.add(used)
                frontier.append((used, dist + 1))
    return graph


def dependency_density(
    tasks: Sequence[Task],
    walker: Walker,
    *,
    k: int = 3,
    trivial: Collection[str] = (),
    progress: Callable[[int, bool], None] | None = None,
) -> DensityReport:
    """rho_1..rho_k of each task and the dataset's mean, median and distribution."""
    import time

    started = time.perf_counter()
    statements, library = walker.walk(tasks, k, progress)
    results: list[TaskDensity] = []
    for task, statement in zip(tasks, statements, strict=True):
        if statement.error is not None:
            results.append(TaskDensity(task.id, skipped=statement.error))
            continue
        graph = task_graph(statement, library, k)
        results.append(
            TaskDensity(task.id, rho=rho(graph, ROOT, k, trivial), nodes=graph.number_of_nodes())
        )
    summary = summarize([t.rho for t in results if t.skipped is None], k)
    return DensityReport(k, results, summary, walker.stats, elapsed=time.perf_counter() - started)
