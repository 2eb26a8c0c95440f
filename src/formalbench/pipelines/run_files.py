"""The files of a run directory, and the self-describing log from which a report is rebuilt.

run.sqlite        the run store: config, versions, tasks, every attempt with its verdict
responses.sqlite  the model-response cache (a rerun or resume costs no tokens)
run.json          the run's log: config, versions, status, history of resumes, seeds,
                  prompt-template hashes, token usage
summary.json      the numbers of the report (pass@k, categories, taxonomy, tokens, time)
report.html       the same with plots (written by the reporting layer)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from formalbench.core.errors import InputError
from formalbench.metrics.summary import RunSummary, summarize
from formalbench.pipelines.run_dir import (
    is_writable,
    read_json_object,
    write_json_atomic,
    write_text_atomic,
)
from formalbench.store.runs import RunStore

if TYPE_CHECKING:  # the llm package (jinja2, the model stack) stays out of `report`
    from formalbench.llm.budget import UsageMeter


@dataclass(frozen=True)
class RunFiles:
    root: Path

    @property
    def store(self) -> Path:
        return self.root / "run.sqlite"

    @property
    def responses(self) -> Path:
        return self.root / "responses.sqlite"

    @property
    def verdicts(self) -> Path:
        return self.root / "verdicts.sqlite"

    @property
    def log(self) -> Path:
        return self.root / "run.json"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def report(self) -> Path:
        return self.root / "report.html"


def write_run_log(
    files: RunFiles,
    store: RunStore,
    run_id: str,
    meter: UsageMeter,
    elapsed: float,
    skipped_lines: Sequence[str] = (),
) -> Path:
    """Write run.json: enough to know exactly what ran and to rebuild the report.

    Wall time and token usage add up over the sessions of a resumed run; `skipped_lines`
    (dataset lines left out by `--skip-bad-lines`) are kept so that the report names them.
    """
    info = store.get_run(run_id)
    prompts: Counter[str] = Counter()
    seeds: set[int] = set()
    for attempt in store.attempts(run_id):
        if attempt.prompt_hash:
            prompts[attempt.prompt_hash] += 1
        for name, digest in (attempt.params.get("prompts") or {}).items():
            prompts[f"{name}={digest}"] += 1
        seed = attempt.params.get("seed")
        if isinstance(seed, int):
            seeds.add(seed)
    previous: dict[str, Any] = {}
    if files.log.exists():
        previous = read_json_object(files.log)
    usage = meter.summary()
    log = {
        "run_id": run_id,
        "status": info.status,
        "created": info.created,
        "updated": info.updated,
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": info.config,
        "versions": info.versions,
        "history": info.history,
        "seeds": sorted(seeds),
        "prompt_hashes": dict(sorted(prompts.items())),
        "wall_time_s": round(previous.get("wall_time_s", 0.0) + elapsed, 3),
        "token_usage_this_session": usage,
        "token_usage_sessions": [*previous.get("token_usage_sessions", []), usage],
        "skipped_lines": list(skipped_lines),
    }
    write_json_atomic(files.log, log)
    return files.log


def load_summary(run_dir: str | Path, *, write: bool | None = None) -> RunSummary:
    """Rebuild a run's summary from its store alone, and write summary.json.

    `write=None` writes only where the folder is writable: a finished run on read-only
    storage is still reported (its store opened read-only), without the file.
    """
    files = RunFiles(Path(run_dir))
    if not files.store.is_file():
        raise InputError(f"{run_dir}: not a run directory (no {files.store.name} in it)")
    writable = is_writable(files.root)
    with RunStore(files.store, readonly=not writable) as store:
        runs = store.runs()
        if not runs:
            raise InputError(f"{files.store}: the store holds no run")
        info = runs[0]
        tasks = store.tasks(info.id)
        attempts = list(store.attempts(info.id))
    run_info = {
        "run_id": info.id,
        "status": info.status,
        "created": info.created,
        "updated": info.updated,
        "config": info.config,
        "versions": info.versions,
    }
    skipped: list[str] = []
    if files.log.is_file():  # wall time adds up over the sessions of a resumed run
        log = read_json_object(files.log)
        wall_time = log.get("wall_time_s")
        if wall_time is not None:
            run_info["wall_time_s"] = wall_time
        skipped = [str(line) for line in log.get("skipped_lines") or []]
    summary = summarize(
        tasks, attempts, samples=int(info.config.get("samples", 1)), run_info=run_info
    )
    if skipped:  # named in the report (and --quiet runs), not only on the first run's screen
        shown = "; ".join(skipped[:3]) + ("; ..." if len(skipped) > 3 else "")
        summary.warnings.append(
            f"{len(skipped)} dataset line(s) skipped by --skip-bad-lines: {shown}"
        )
        summary.run_info["skipped_lines"] = skipped
    chain = (info.versions or {}).get("toolchain") or {}
    if isinstance(chain, dict):  # the toolchain the verdicts were decided on (run.json too)
        summary.run_info["toolchain"] = chain
        if chain.get("known_unsound"):  # seen before a result is trusted
            summary.warnings.append(
                f"toolchain {chain.get('name')} (Coq {chain.get('version')}) has known "
                f"unfixed soundness bugs: {', '.join(map(str, chain['known_unsound']))}"
            )
    if write if write is not None else writable:
        write_text_atomic(files.summary, summary.model_dump_json(indent=2) + "\n")
    return summary
