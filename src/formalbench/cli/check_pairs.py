"""The batch form of `formalbench check` (`--pairs FILE.jsonl`): builds one backend and one
verifier per proof assistant the file needs, runs `pipelines.pairs`, and prints one line per
pair (JSON with `--json`, else `PASSED`/`FAILED`/`ERROR` lines and a total on stderr)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from formalbench.backends.base import Backend
from formalbench.backends.registry import language_of, make_backend
from formalbench.checking.verifier import StrictVerifier
from formalbench.cli.progress import LongProgress, Stage
from formalbench.cli.verdict_cache import open_cache
from formalbench.core.config import VerifierPolicy
from formalbench.core.errors import InputError
from formalbench.core.records import TaskKind
from formalbench.pipelines.pairs import Pair, check_pairs, read_pairs


def run_pairs(
    path: str,
    *,
    backend: str | None,
    static_only: bool,
    timeout: float | None,
    json_out: bool,
    kind: TaskKind | None,
    options: Callable[[str, str], dict[str, Any]],
    workers: int | None,
    cache: str | None,
    axioms: tuple[list[str], list[str] | None] = ([], None),
    replay: bool = True,
) -> bool:
    """Check every pair of `path`; True when all passed. `options(name, first candidate
    path)` gives a backend's constructor options (as for a single check); `axioms`: the
    allowed axiom names and presets (`cli.options.axiom_policy`); `replay`: confirm each Coq
    pass with coqchk (`checking/coq_replay.py`)."""
    items = read_pairs(path, backend)
    backends: dict[str, Backend] = {}
    verifiers: dict[str, StrictVerifier] = {}
    verdict_cache = None if static_only else open_cache(cache)
    first_paths: dict[str, str] = {}

    def with_kind(item: Any) -> Any:
        """The pair with --kind where its line names none; notes the first path per backend
        (a Lean backend finds its Lake project from it)."""
        if not isinstance(item, Pair):
            return item
        named = item.candidate or item.original
        first_paths.setdefault(item.backend, str(Path(path).parent / named) if named else path)
        if kind is not None and item.kind is None:
            return Pair(**{**item.__dict__, "kind": kind})
        return item

    def verifier_for(name: str) -> StrictVerifier:
        if name not in verifiers:
            checker = None
            if not static_only:
                opts = options(name, first_paths.get(name, path))
                if workers is not None:
                    opts["workers"] = workers
                checker = backends[name] = make_backend(name, **opts)
            language = language_of(name)
            policy = VerifierPolicy(axiom_presets=axioms[1], replay=replay).with_axioms(
                axioms[0], language
            )
            verifiers[name] = StrictVerifier(
                checker, policy, language=language, cache=verdict_cache
            )
        return verifiers[name]

    async def main(pairs: Stage) -> tuple[int, int, int]:
        counts = [0, 0, 0]  # passed, failed, errors
        window = max(16, 4 * (workers or 4))
        async for result in check_pairs(
            (with_kind(i) for i in items), verifier_for, timeout=timeout, window=window
        ):
            counts[0 if result["passed"] else 2 if "error" in result else 1] += 1
            hits = verdict_cache.hits if verdict_cache is not None else 0
            pairs.update(sum(counts), status=f"{counts[0]} passed", resumed=hits)
            if json_out:
                sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            else:
                sys.stdout.write(_line(result) + "\n")
            sys.stdout.flush()
        return counts[0], counts[1], counts[2]

    try:
        with LongProgress() as shown:
            stage = shown.stage(
                "pairs", total=_count_lines(path), unit="pair", skipped_word="cached"
            )
            passed, failed, errors = asyncio.run(main(stage))
        if passed + failed + errors == 0:
            raise InputError(
                f"--pairs {path!r}: no pair in it (empty file; one JSON object a line)"
            )
    finally:
        for checker in backends.values():
            checker.close()
        if verdict_cache is not None:
            verdict_cache.close()
    if not json_out:
        sys.stderr.write(f"{passed} passed, {failed} failed, {errors} not checked (errors)\n")
    return failed == 0 and errors == 0


def _count_lines(path: str) -> int | None:
    """The pairs of the file as `read_pairs` yields them (its non-blank lines), for the
    progress total; None when it cannot be read (`read_pairs` says why)."""
    try:
        with open(path, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except OSError:
        return None


def _line(result: dict[str, Any]) -> str:
    """One text line for a result: status, id, and the reasons or the error."""
    if "error" in result:
        return f"ERROR  {result['id']}: {result['error']}"
    status = "PASSED" if result["passed"] else "FAILED"
    reasons = ", ".join(result.get("reasons") or [])
    return f"{status} {result['id']}" + (f": {reasons}" if reasons else "")
