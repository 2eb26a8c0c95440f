"""A reward function in the shape RL trainers take, scored by `formalbench serve`'s strict route.

`compute_score(solution_str, ground_truth, data_source=None, extra_info=None) -> float` is the
signature verl's reward manager calls (by keyword): `solution_str` is the model's answer,
`ground_truth` the task, either its text (the original with its holes) or a `task_id`
registered with `POST /tasks`. The score is 1.0 when the strict verifier passes the candidate,
else 0.0; nothing is scored from compilation alone, so a policy that changes the statement,
adds an axiom or leaves an `Admitted` gets 0. The verdict's reason is kept: when `extra_info`
is a dict, `extra_info["formalbench"]` is set to `{"passed", "reasons", "error", "findings"}`
(and `score_details` returns the same with the score, for trainers that log dicts).

The candidate is the last fenced Coq block of the answer (`solvers.extract.pick_block`; with
`language="lean"`, for a service started with `--backend lean`, the last Lean block), or the
whole answer when it has no fence; it is sent as written, whole: the service decides whether
its statement is the task's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from formalbench.core.records import Language
from formalbench.service.client import ServiceError, VerifierClient
from formalbench.store.service_tasks import ID_PREFIX


def candidate_of(solution_str: str, language: str = "coq") -> str:
    """The proof text in a model's answer: its last fenced block of `language` (coq or
    lean), else the answer itself."""
    from formalbench.solvers.extract import FormatFailure, pick_block

    try:
        return pick_block(solution_str, Language(language)).body
    except FormatFailure:
        return solution_str


def score_details(
    solution_str: str,
    ground_truth: str,
    *,
    url: str | None = None,
    api_key: str | None = None,
    timeout: float = 300.0,
    language: str = "coq",
) -> dict[str, Any]:
    """`{"score", "passed", "reasons", "error", "findings"}` for one answer (blocking);
    `language`: the service's (`lean` for `serve --backend lean`)."""
    item: dict[str, Any] = {"custom_id": "reward", "proof": candidate_of(solution_str, language)}
    if ground_truth.startswith(ID_PREFIX) and "\n" not in ground_truth:
        item["task_id"] = ground_truth
    else:
        item["original"] = ground_truth

    async def ask() -> dict[str, Any]:
        async with VerifierClient(url, api_key=api_key, timeout=timeout) as client:
            return (await client.verify([item]))[0]

    try:
        answer = _run(ask())
    except ServiceError as exc:
        return {
            "score": 0.0,
            "passed": False,
            "reasons": ["service_error"],
            "error": str(exc),
            "findings": [],
        }
    verdict = answer.get("verdict") or {}
    passed = bool(verdict.get("passed")) and not answer.get("error")
    return {
        "score": 1.0 if passed else 0.0,
        "passed": passed,
        "reasons": list(verdict.get("reasons") or ([] if passed else ["error"])),
        "error": answer.get("error"),
        "findings": [f.get("message", "") for f in verdict.get("findings") or []][:5],
    }


def compute_score(
    solution_str: str,
    ground_truth: str,
    data_source: str | None = None,
    extra_info: dict[str, Any] | None = None,
    **options: Any,
) -> float:
    """1.0 if the strict verifier passes the answer's proof of `ground_truth`, else 0.0; the
    verdict's reason goes into `extra_info["formalbench"]` (module doc). `options`: `url`,
    `api_key`, `timeout` for the service, `language` of its backend (coq, lean)."""
    details = score_details(solution_str, ground_truth, **options)
    if isinstance(extra_info, dict):
        extra_info["formalbench"] = {k: v for k, v in details.items() if k != "score"}
    return float(details["score"])


def _run(work: Any) -> Any:
    """Run a coroutine to its end from sync code, also when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, work).result()
