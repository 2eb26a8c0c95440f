"""The Coq strict verifier on real library code: genuine proofs must pass, task texts must not.

For a folder of Coq sources (default: the standard library that comes with coqc, `coqc
-where`/theories), each file is copied to a scratch folder (never compiled in place) and
compiled alone; for every file that compiles, each named theorem proved with `Qed` becomes a
task: the file with that one proof replaced by `Admitted.` (the original). Two candidates
per task:

- `genuine`: the real file itself, which must be accepted;
- `task`: the task text offered as its own proof, which must be refused (with
  `--task-by-assistant` the forbidden-word pre-filter is off for it, so the kernel route
  must refuse it: `Candidate.t` is an axiom of its library).

Printed at the end: accepted/refused counts by reason (first reason of each verdict) for
both sets (a genuine proof refused where the task text itself does not compile is counted
apart: that task is broken, not the verifier), with one example message per reason, and
the cost of a check against `coqc` of the candidate alone: `pair` (the first check of a task, which also compiles the original)
and `eval` (a later check of the same task: the original's `.vo` comes from the cache).
Times are coqc CPU (the children's, steadier on a shared machine, plus the CPU of the warm
coqtop sessions that answer kernel dumps, `backends/coq_session.py`) and wall;
FORMALBENCH_COQ_SESSION=0 measures the one-shot dump instead.

    python bench/bench_real_proofs.py --sample 12 --tasks-per-file 3 --max-bytes 20000
    python bench/bench_real_proofs.py DIR --limit 5 --out results.jsonl
    python bench/bench_real_proofs.py DIR --retry results.jsonl  # the refused ones again
    python bench/bench_real_proofs.py PROJECT/theories --coq-project PROJECT --skip 40 --limit 40
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from formalbench.backends import coq_session
from formalbench.backends.coq import CoqBackend
from formalbench.checking.decls import split_decls
from formalbench.checking.verifier import StrictVerifier, kernel_of
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Language, Reason, Verdict

T = TypeVar("T")


@dataclass
class Task:
    file: str
    theorem: str
    original: str  # the file with this theorem's proof replaced by `Admitted.`
    real: str  # the file itself


def stdlib_theories() -> Path:
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True)
    return Path(where.stdout.strip()) / "theories"


def tasks_of(name: str, text: str) -> list[Task]:
    """One task per named theorem whose proof ends with `Qed.` (the proof replaced by
    `Admitted.`, the statement and everything else kept byte for byte)."""
    found = []
    for d in split_decls(text, Language.coq):
        if d.kind != "Theorem" or not d.name or d.body_start >= len(d.tokens):
            continue
        if [t.text for t in d.tokens[-2:]] != ["Qed", "."]:
            continue
        at = d.tokens[d.body_start]  # the `.` that ends the statement
        cut = at.end if at.text == "." else at.offset
        original = text[:cut] + "\nAdmitted." + text[d.end :]
        found.append(Task(name, d.name, original, text))
    return found


def cpu() -> float:
    """CPU of the children that ended, plus the warm coqtop sessions' (live ones are not in
    RUSAGE_CHILDREN yet, and a session that was killed never will be)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + coq_session.sessions_cpu()


def timed(step: Callable[..., T], *args: object) -> tuple[T, float, float]:
    c0, w0 = cpu(), time.perf_counter()
    out = step(*args)
    return out, cpu() - c0, time.perf_counter() - w0


def first_reason(verdict: Verdict) -> str:
    return "accepted" if verdict.passed else verdict.reasons[0].value


def refused_before(runs: list[Path]) -> set[tuple[str, str]]:
    """(file, theorem) of every genuine proof refused in the JSONL files of earlier runs."""
    refused = set()
    for run in runs:
        for line in run.read_text().splitlines():
            row = json.loads(line)
            if row["candidate"] == "genuine" and row["verdict"] != "accepted":
                refused.add((row["file"], row["theorem"]))
    return refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, help="Coq sources (default: stdlib)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many files")
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first N files (runs in chunks)"
    )
    parser.add_argument("--sample", type=int, default=None, help="a random sample of files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-bytes", type=int, default=None, help="skip larger files")
    parser.add_argument("--tasks-per-file", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=None, help="one JSON line per verdict")
    parser.add_argument(
        "--retry",
        type=Path,
        action="append",
        default=[],
        help="only the tasks whose genuine proof a JSONL of an earlier run (--out) records "
        "as refused (repeatable): the same tasks judged again after a change",
    )
    parser.add_argument(
        "--coq-project",
        type=Path,
        default=None,
        help="the folder of the project's _CoqProject: its load path for every compile "
        "(its libraries built beforehand, used read-only)",
    )
    parser.add_argument(
        "--task-by-assistant",
        action="store_true",
        help="judge the task text with no forbidden words, so that the kernel route, not "
        "the text pre-filter, must refuse it (one more candidate compile per task)",
    )
    args = parser.parse_args()
    folder = args.folder or stdlib_theories()
    if not folder.is_dir():
        sys.exit(f"error: {folder} is not a folder")
    files = sorted(p for p in folder.rglob("*.v") if "Init" not in p.parts)
    retry = refused_before(args.retry) if args.retry else None
    if retry is not None:
        files = [p for p in files if str(p.relative_to(folder)) in {f for f, _ in retry}]
    if args.max_bytes:
        files = [p for p in files if p.stat().st_size <= args.max_bytes]
    if args.sample:
        files = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
    files = files[args.skip :][: args.limit]
    backend = CoqBackend(timeout=args.timeout, workers=1, project_dir=args.coq_project)
    verifier = StrictVerifier(backend)
    # the same checks without the forbidden-word pre-filter (`--task-by-assistant`)
    lenient = StrictVerifier(backend, VerifierPolicy(forbidden=[]))
    judges = (verifier, lenient)
    counts: dict[str, Counter[str]] = {"genuine": Counter(), "task": Counter()}
    examples: dict[tuple[str, str], str] = {}
    cost = {"alone": 0.0, "pair": 0.0, "eval": 0.0, "alone_wall": 0.0, "eval_wall": 0.0}
    cost["eval_session"] = 0.0  # the warm coqtop's share of `eval` (kernel dumps)
    timed_tasks = 0
    broken_tasks = 0
    compiled_files = 0
    out = args.out.open("w") if args.out else None
    scratch = Path(tempfile.mkdtemp(prefix="fb-real-proofs-"))
    try:
        for path in files:
            copy = scratch / path.name
            shutil.copy(path, copy)  # a copy: the library's sources are never compiled
            text = copy.read_text(encoding="utf-8", errors="replace")
            alone, alone_cpu, alone_wall = timed(backend.check, text)
            if not alone.compiled:
                continue
            compiled_files += 1
            tasks = tasks_of(str(path.relative_to(folder)), text)[: args.tasks_per_file]
            if retry is not None:
                tasks = [t for t in tasks if (t.file, t.theorem) in retry]
            for i, task in enumerate(tasks):
                genuine, pair_cpu, _ = timed(verifier.verify, task.original, task.real)
                if i == 0:  # one task per file is timed again, warm: what `eval` pays
                    warm = coq_session.sessions_cpu()
                    _, eval_cpu, eval_wall = timed(verifier.verify, task.original, task.real)
                    cost["eval_session"] += coq_session.sessions_cpu() - warm
                    cost["alone"] += alone_cpu
                    cost["alone_wall"] += alone_wall
                    cost["pair"] += pair_cpu
                    cost["eval"] += eval_cpu
                    cost["eval_wall"] += eval_wall
                    timed_tasks += 1
                judge = lenient if args.task_by_assistant else verifier
                own = judge.verify(task.original, task.original)
                # the task text itself does not compile (an admitted section lemma takes every
                # section variable, and a later proof applies it to fewer): no task at all
                broken = any(f.reason == Reason.compile_error for f in own.findings)
                broken_tasks += broken
                for kind, verdict in (("genuine", genuine), ("task", own)):
                    reason = first_reason(verdict)
                    if broken and kind == "genuine" and not verdict.passed:
                        reason += " (task text does not compile)"
                    counts[kind][reason] += 1
                    if verdict.findings:
                        examples.setdefault(
                            (kind, reason),
                            f"{task.file} {task.theorem}: " + verdict.findings[0].message[:200],
                        )
                    if out:
                        out.write(
                            json.dumps(
                                {
                                    "file": task.file,
                                    "theorem": task.theorem,
                                    "candidate": kind,
                                    "verdict": reason,
                                    "task_compiles": not broken,
                                    "findings": [f.message for f in verdict.findings],
                                }
                            )
                            + "\n"
                        )
                        out.flush()  # a run stopped early still leaves every verdict
                print(
                    f"{task.file} {task.theorem}: genuine {first_reason(genuine)}, "
                    f"task {first_reason(own)}",
                    flush=True,
                )
    except KeyboardInterrupt:  # Ctrl-C: the figures so far are still printed
        print("interrupted: figures over the tasks done so far")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if out:
            out.close()
    print(f"\nfiles: {len(files)} tried, {compiled_files} compile alone")
    print(f"tasks whose text does not compile (refused as it must be): {broken_tasks}")
    for kind in ("genuine", "task"):
        total = sum(counts[kind].values())
        print(f"{kind} candidates ({total}):")
        for reason, n in counts[kind].most_common():
            print(
                f"  {reason}: {n}"
                + (f"  e.g. {examples[(kind, reason)]}" if (kind, reason) in examples else "")
            )
    if timed_tasks and cost["alone"] > 0:
        print(
            f"cost over {timed_tasks} tasks (coqc CPU, vs the candidate compiled alone): "
            f"pair {cost['pair'] / cost['alone']:.2f}x, eval {cost['eval'] / cost['alone']:.2f}x"
            f" (wall eval {cost['eval_wall'] / cost['alone_wall']:.2f}x; kernel dumps in "
            f"the warm coqtop: {cost['eval_session'] / cost['alone']:.2f}x of it)"
        )
    kernels = [k for k in (kernel_of(v.backend) for v in judges if v.backend) if k is not None]
    answered = sum(k.dumper.session_dumps for k in kernels)
    missed = sum(k.dumper.session_fallbacks for k in kernels)
    state = "on" if coq_session.enabled() else f"off ({coq_session.SWITCH}=0)"
    print(
        f"kernel dumps: {answered} answered by a warm coqtop session, {missed} dumped "
        f"one-shot after a session gave no answer (sessions {state}; CPU counted above)"
    )
    coq_session.close_all()


if __name__ == "__main__":
    main()
