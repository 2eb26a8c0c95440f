"""Server time of the review dashboard: a problem page with 12 candidates, the list at 5,000.

Run: python bench/bench_dashboard.py [--problems 5000] [--repeat 15]
Builds a formalize run in a temporary folder (5,000 problems, 1,000 of them decided, one
problem with 12 candidates of 6 rounds each, with diagnostics), then times requests through
the ASGI app in process (FastAPI's TestClient: routing, guards, SQLite, jinja2 rendering; no
network). Targets: problem page < 100 ms, list < 300 ms. Prints the median of each.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from formalbench.core.formalization import (
    Alignment,
    Candidate,
    CompileRound,
    Problem,
    ProblemSummary,
    RankedCandidate,
    ReviewDecision,
    ReviewStatus,
)
from formalbench.core.records import Diagnostic, Language, Severity
from formalbench.dashboard.app import create_app
from formalbench.store.formalize import FormalizeStore
from formalbench.store.review import ReviewStore

CATEGORIES = ["algebra", "number theory", "geometry", "combinatorics", "inequalities"]
CODE = (
    "Require Import Reals.\nOpen Scope R_scope.\n\n"
    "Theorem problem_{i}_{m} :\n  forall (x y : R),\n    x ^ 2 + 8 * x + y ^ 2 - 6 * y = 0 ->\n"
    "    (x + 4) ^ 2 + (y - 3) ^ 2 = 5 ^ 2.\nProof.\nAdmitted.\n"
)
ERROR = Diagnostic(
    severity=Severity.error,
    message='The term "x" has type "R" while it is expected to have type "nat".',
    line=5,
    column=6,
    end_line=5,
    end_column=7,
)


def build(root: Path, problems: int) -> str:
    """The run; returns the id of the problem with 12 candidates."""
    big = "p00042"
    with FormalizeStore(root / "formalize.sqlite") as store:
        store.set_config({"backend": "coq", "language": "coq"})
        store.add_problems(
            Problem(
                id=f"p{i:05d}",
                informal=f"Problem {i}: let x and y be reals with x^2 + 8x + y^2 - 6y = 0; "
                "show that the point (x, y) lies on the circle of radius 5 around (-4, 3). " * 2,
                category=CATEGORIES[i % len(CATEGORIES)],
                source="bench",
            )
            for i in range(problems)
        )
        for i in range(problems):
            pid = f"p{i:05d}"
            models = 12 if pid == big else 1
            for m in range(models):
                rounds = [
                    CompileRound(
                        round=r,
                        code=CODE.format(i=i, m=m),
                        compiled=r == 6 and m % 2 == 0,
                        diagnostics=[] if r == 6 and m % 2 == 0 else [ERROR] * 3,
                    )
                    for r in range(1, 7 if models > 1 else 2)
                ]
                store.put_candidate(
                    Candidate(
                        id=f"{pid}/model-{m}/0",
                        problem_id=pid,
                        model=f"model-{m}",
                        sample=0,
                        language=Language.coq,
                        rounds=rounds,
                        alignment=Alignment(aligned=m % 3 == 0, explanation="x" * 300),
                    )
                )
        store.put_summary(
            ProblemSummary(
                problem_id=big,
                text="A long comparison of the twelve candidates. " * 20,
                ranking=[
                    RankedCandidate(candidate_id=f"{big}/model-{m}/0", rank=m + 1, verdict="ok")
                    for m in range(12)
                ],
            )
        )
    with ReviewStore(root / "formalize.sqlite") as review:
        for i in range(0, problems, 5):
            review.decide(
                ReviewDecision(
                    problem_id=f"p{i:05d}",
                    status=ReviewStatus.accepted if i % 2 else ReviewStatus.rejected,
                    candidate_id=f"p{i:05d}/model-0/0",
                    code=CODE.format(i=i, m=0),
                    reviewer="bench",
                ),
                based_on=0,
            )
    return big


def median_ms(client: TestClient, url: str, repeat: int) -> float:
    client.get(url)  # warm: templates compiled, pages of the database cached
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        big = build(root, args.problems)
        print(f"built run: {args.problems} problems in {time.perf_counter() - start:.1f} s")
        with TestClient(create_app(root, reviewer="bench")) as client:
            last = (args.problems + 49) // 50
            figures = [
                ("problem page, 12 candidates x 6 rounds", f"/p/{big}", 100),
                (f"list page 1 of {args.problems}", "/", 300),
                (f"list page {last} (last)", f"/?page={last}", 300),
                ("list, status=accepted", "/?status=accepted", 300),
                ("list, category=geometry", "/?category=geometry", 300),
                ("list, text search 'radius 5 around'", "/?q=radius+5+around", 300),
                ("list, text search with no match", "/?q=zzzz", 300),
            ]
            for label, url, target in figures:
                ms = median_ms(client, url, args.repeat)
                verdict = "ok" if ms < target else "OVER TARGET"
                print(f"{label:42s} median {ms:7.1f} ms  (target < {target} ms: {verdict})")
            ms = median_ms(client, "/export.jsonl", 3)
            print(
                f"{'export of ' + str(args.problems // 10) + ' accepted':42s} median {ms:7.1f} ms"
            )


if __name__ == "__main__":
    main()
