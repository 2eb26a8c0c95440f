"""The numbers of an APE run, rebuilt from its store alone (`formalbench report D`).

pass@k is the unbiased estimator of `metrics.passk`, averaged over all validated tasks with
tasks that have no output counted as c = 0; the semantic drop is 1 - judge / compile.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from formalbench.core.errors import InputError
from formalbench.metrics.passk import pass_at_k
from formalbench.pipelines.ape.outcome import StageOutcome
from formalbench.store.ape import STORE_NAME, ApeStore


def is_ape_run(run_dir: Path) -> bool:
    return (Path(run_dir) / STORE_NAME).is_file()


def _mean_pass(rows: list[tuple[int, int]], k: int) -> float:
    if not rows:
        return 0.0
    return sum(pass_at_k(n, c, k) if n >= k else float(c > 0) for n, c in rows) / len(rows)


def ape_report(run_dir: Path) -> dict[str, Any]:
    # mining (rapidfuzz, git) only for an ape run: `formalbench report` of an eval run asks
    # `is_ape_run` first and must not pay for it
    from formalbench.pipelines.ape.mining import funnel
    from formalbench.pipelines.ape.task import MineConfig

    if not is_ape_run(run_dir):
        raise InputError(f"{run_dir}: not an ape run (no {STORE_NAME})")
    with ApeStore(Path(run_dir) / STORE_NAME) as store:
        cfg = MineConfig(**(store.get_meta("config") or {}))
        summary = funnel(store, cfg)
        out: dict[str, Any] = {
            "kind": "ape",
            "source": store.get_meta("source"),
            "language": summary.language,
            "commits": summary.commits,
            "candidates": summary.candidates,
            "funnel": summary.funnel,
            "tasks": summary.kept,
            "validated": None,  # set once `--validate` has run
        }
        imported = store.get_meta("export")
        if isinstance(imported, dict):  # a run of `ape eval EXPORT`: its tasks came from there
            out["imported_from"] = imported.get("path")
        validation = store.results("validate")
        if validation:
            out["validation_checked"] = len(validation)
            out["validated"] = sum(1 for v in validation.values() if v.get("kept"))
            out["validation"] = StageOutcome.of("validation", validation.values()).summary()
        synth = store.results("synthesize")
        if synth:
            out["synthesized"] = len(synth)
            out["benchmark_tasks"] = sum(1 for v in synth.values() if v.get("kept"))
            # errors (unreadable replies, failed calls) apart from verdicts: `--retry-errors`
            out["synthesis"] = StageOutcome.of("synthesis", synth.values()).summary()
        evals = store.results("eval")
        if evals:
            out.update(_eval_figures(evals, synth))
            out["answers"] = answer_rows(evals)
            out["answer_summary"] = answer_summary(evals)
    return out


def answer_summary(evals: dict[str, Any]) -> dict[str, Any]:
    """Counts over all answers: why those that applied were not complete, and how many
    changed, removed or added declarations (as Coq lists them)."""
    why: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)  # no verdict: a failed call, no judge grade
    edits = {"changed": 0, "removed": 0, "added": 0}
    total = applied = compiled = 0
    for done in evals.values():
        for s in done.get("samples", []):
            total += 1
            if s.get("error"):
                errors[str(s.get("reason") or "no reason recorded")] += 1
            applied += bool(s.get("applied"))
            compiled += bool(s.get("compiled"))
            check = s.get("check") or {}
            if s.get("gate"):
                why["gate"] += 1
            elif s.get("applied") and not s.get("compiled"):
                if check.get("errors") or check.get("status", "ok") != "ok":
                    why["compile error"] += 1
                elif check.get("warnings"):
                    why["warning"] += 1
                if check.get("new_axioms"):
                    why["new axiom"] += 1
                if check.get("new_holes"):
                    why["new hole"] += 1
            for key in edits:
                edits[key] += bool((check.get("declarations") or {}).get(key))
    return {
        "answers": total,
        "applied": applied,
        "compiled": compiled,
        "not_complete_because": dict(why),
        "errors": dict(errors),
        "answers_that_changed_statements": edits["changed"],
        "answers_that_removed_declarations": edits["removed"],
        "answers_that_added_declarations": edits["added"],
    }


def answer_rows(evals: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per answer: whether it applied, compiled completely and was judged a pass;
    why it was refused (gate, compile, a new axiom or hole); and which declarations, as Coq
    lists them, it changed, removed or added (None where Coq could not read the file before).
    Changed statements and removed lemmas can be what the instruction asked: the judge
    scores them; they are listed here so a reader sees them."""
    rows = []
    for tid, done in sorted(evals.items()):
        for i, s in enumerate(done.get("samples", [])):
            check = s.get("check") or {}
            refused = list(s.get("gate") or []) or list(check.get("reasons") or [])
            if s.get("applied") and not s.get("compiled") and not refused:
                refused = check.get("errors") or ["not complete"]
            rows.append(
                {
                    "task": tid,
                    "sample": i,
                    "applied": bool(s.get("applied")),
                    "compiled": bool(s.get("compiled")),
                    "judged": bool(s.get("judged")),
                    "refused": refused[:5],
                    "declarations": check.get("declarations"),
                }
            )
    return rows


def _eval_figures(evals: dict[str, Any], synth: dict[str, Any]) -> dict[str, Any]:
    """Compile and judge pass@k overall and per category/difficulty; missing samples = 0."""
    tasks = [tid for tid, v in synth.items() if v.get("kept")] or list(evals)
    n = max((len(e.get("samples", [])) for e in evals.values()), default=0)
    ks = [k for k in (1, 2, 4, 8, 16) if k <= max(1, int(0.8 * n)) or k == 1]
    groups: dict[str, dict[str, list[tuple[int, int, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for tid in tasks:
        samples = evals.get(tid, {}).get("samples", [])
        row = (
            max(n, len(samples)),
            sum(1 for s in samples if s.get("compiled")),
            sum(1 for s in samples if s.get("compiled") and s.get("judged")),
        )
        labels = synth.get(tid, {})
        groups["all"]["all"].append(row)
        groups["category"][labels.get("category", "unknown")].append(row)
        groups["difficulty"][labels.get("difficulty", "unknown")].append(row)

    def figures(rows: list[tuple[int, int, int]]) -> dict[str, Any]:
        out: dict[str, Any] = {"tasks": len(rows)}
        for k in ks:
            comp = _mean_pass([(r[0], r[1]) for r in rows], k)
            judge = _mean_pass([(r[0], r[2]) for r in rows], k)
            out[f"compile_pass@{k}"] = round(comp, 4)
            out[f"judge_pass@{k}"] = round(judge, 4)
            out[f"semantic_drop@{k}"] = round(1 - judge / comp, 4) if comp else None
        return out

    return {
        "samples": n,
        "pass_at_k": figures(groups["all"]["all"]),
        "by_category": {c: figures(r) for c, r in sorted(groups["category"].items())},
        "by_difficulty": {d: figures(r) for d, r in sorted(groups["difficulty"].items())},
    }
