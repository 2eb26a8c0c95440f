"""`formalbench eval` reports on AMBER tasks: pass@k for k in 1..16 per template kind, and
AMBER's four error classes mapped from our taxonomy."""

from __future__ import annotations

from formalbench.core.records import (
    Attempt,
    Diagnostic,
    Finding,
    Reason,
    Severity,
    TaskKind,
    Verdict,
)
from formalbench.datasets import load_tasks
from formalbench.metrics.amber_taxonomy import AMBER_OF, amber_taxonomy
from formalbench.metrics.messages import ErrorCategory
from formalbench.metrics.passk import pass_at_k
from formalbench.metrics.summary import summarize
from formalbench.reporting.html import render_html
from formalbench.reporting.tables import report_tables

N = 16


def _failed(reason: Reason, message: str) -> Verdict:
    diagnostics = [Diagnostic(severity=Severity.error, message=message, line=3)]
    if reason != Reason.compile_error:
        diagnostics = []
    return Verdict(
        passed=False,
        reasons=[reason],
        findings=[Finding(reason=reason, message=message)],
        diagnostics=diagnostics,
    )


FAILURES = [
    _failed(
        Reason.compile_error, "The reference rsum_swap was not found in the current environment."
    ),
    _failed(Reason.non_constructive, "the value of `answer` is chosen by `epsilon`"),
    _failed(Reason.compile_error, "Tactic failure: Cannot find witness."),
]


def _attempts(passes: dict[str, int]) -> list[Attempt]:
    out = []
    for task_id, passed in passes.items():
        for sample in range(N):
            verdict = Verdict(passed=True) if sample < passed else FAILURES[sample % 3]
            out.append(
                Attempt(task_id=task_id, solver="whole", sample=sample, code="x", verdict=verdict)
            )
    return out


def test_pass_at_k_per_template_kind_and_amber_classes():
    tasks = list(load_tasks("example-amber-coq"))
    passes = {t.id: (3 if t.kind == TaskKind.evaluation else 0) for t in tasks}
    passes["amber_algo_powers"] = 16
    summary = summarize(tasks, _attempts(passes), samples=N)
    assert summary.ks == [1, 2, 4, 8, 16]
    by_kind = {
        row.value: row for row in next(c for c in summary.categories if c.field == "kind").rows
    }
    assert set(by_kind) == {"proof", "evaluation", "algorithm", "transformation"}
    evaluation = by_kind["evaluation"]
    assert list(evaluation.pass_at_k) == ["1", "2", "4", "8", "16"]
    assert abs(evaluation.pass_at_k["1"] - 3 / 16) < 1e-9
    assert abs(evaluation.pass_at_k["4"] - pass_at_k(16, 3, 4)) < 1e-9
    algorithms = sum(t.kind == TaskKind.algorithm for t in tasks)
    assert abs(by_kind["algorithm"].pass_at_k["16"] - 1 / algorithms) < 1e-9
    assert by_kind["transformation"].pass_at_k["16"] == 0.0

    assert set(summary.taxonomy) == {
        "hallucinated_identifier",
        "non_constructive",
        "tactic_failure",
    }
    amber = summary.taxonomy_amber
    assert list(amber) == ["hallucination", "competence", "incomplete", "format"]
    assert amber["hallucination"] == summary.taxonomy["hallucinated_identifier"]
    assert (
        amber["competence"]
        == summary.taxonomy["non_constructive"] + summary.taxonomy["tactic_failure"]
    )
    assert sum(amber.values()) == summary.failed_attempts

    keys = [t.key for t in report_tables(summary)]
    assert keys.index("taxonomy_amber") == keys.index("taxonomy") + 1
    assert "Error taxonomy (AMBER classes)" in render_html(summary)


def test_proof_only_runs_have_no_amber_table():
    tasks = [t for t in load_tasks("example-amber-coq") if t.kind == TaskKind.proof]
    summary = summarize(tasks, _attempts({t.id: 0 for t in tasks}), samples=N)
    assert summary.taxonomy_amber == {}
    assert "taxonomy_amber" not in [t.key for t in report_tables(summary)]


def test_every_category_has_an_amber_class_and_infrastructure_is_apart():
    assert set(AMBER_OF) == set(ErrorCategory)
    counts = amber_taxonomy({"format_error": 2, "incomplete_output": 1, "backend_crash": 4})
    assert counts == {"hallucination": 0, "competence": 0, "incomplete": 1, "format": 2,
                      "not_attributed": 4}  # fmt: skip
