"""The Coq strict verifier on real library code: genuine proofs must pass, task texts must not.

For a folder of Coq sources (default: the standard library that comes with coqc, `coqc
-where`/theories; `--library NAME`: one of the libraries Debian installs under `coqc
-where`/user-contrib, sources included, checked with the load path of its own build, see
`LIBRARIES`), each file is copied to a scratch folder (never compiled in place) and
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
FORMALBENCH_COQ_SESSION=0 measures the one-shot dump instead. Each task's own
seconds (the pair's CPU and wall, the file compiled alone) are on its line and in `--out`,
so a slow pair shows; `--file F --lemma L` judges exactly one task again. Every refused
genuine proof is listed at the end with its first finding.

    python bench/bench_real_proofs.py --sample 12 --tasks-per-file 3 --max-bytes 20000
    python bench/bench_real_proofs.py --library stdpp --sample 4 --tasks-per-file 2 --spread
    python bench/bench_real_proofs.py --library mathcomp-algebra --file F.v --lemma L
    python bench/bench_real_proofs.py DIR --limit 5 --out results.jsonl
    python bench/bench_real_proofs.py DIR --retry results.jsonl  # the refused ones again
    python bench/bench_real_proofs.py PROJECT/theories --coq-project PROJECT --skip 40 --limit 40
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from formalbench.backends import coq_session
from formalbench.backends.coq import CoqBackend
from formalbench.checking import coq_replay
from formalbench.checking.decls import split_decls
from formalbench.checking.verifier import StrictVerifier, kernel_of
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Language, Reason, Verdict
from formalbench.toolchains.toolchain import Toolchain, resolve

T = TypeVar("T")


@dataclass(frozen=True)
class Library:
    """A library installed with its sources under `coqc -where`/user-contrib (a Debian
    `libcoq-*` package): `sources`, the folder whose `.v` files are sampled, and the
    `-R`/`-Q` binding its own build passes (`flag root logical`, root a folder under
    user-contrib). Coq binds user-contrib with `-Q` semantics only, so a library whose files
    require their siblings by short name (`Require Import Rcomplements.`) needs its `-R`."""

    package: str
    sources: str
    flag: str
    root: str
    logical: str


# The load path is each library's own `_CoqProject`/`Make` (upstream; warning flags left out).
# Coq 8 (the host's 8.16, coq-8.20); a Rocq 9 toolchain: `ROCQ9_LIBRARIES`.
LIBRARIES: dict[str, Library] = {
    "stdpp": Library("libcoq-stdpp", "stdpp", "-Q", "stdpp", "stdpp"),
    "mathclasses": Library(
        "libcoq-math-classes", "MathClasses", "-R", "MathClasses", "MathClasses"
    ),
    "flocq": Library("libcoq-flocq", "Flocq", "-R", "Flocq", "Flocq"),
    "coquelicot": Library("libcoq-coquelicot", "Coquelicot", "-R", "Coquelicot", "Coquelicot"),
    "bignums": Library("libcoq-bignums", "Bignums", "-R", "Bignums", "Bignums"),
    "mathcomp-ssreflect": Library(
        "libcoq-mathcomp-ssreflect", "mathcomp/ssreflect", "-R", "mathcomp", "mathcomp"
    ),
    "mathcomp-fingroup": Library(
        "libcoq-mathcomp-fingroup", "mathcomp/fingroup", "-R", "mathcomp", "mathcomp"
    ),
    "mathcomp-algebra": Library(
        "libcoq-mathcomp-algebra", "mathcomp/algebra", "-R", "mathcomp", "mathcomp"
    ),
}


# Rocq 9.2's Debian packages: mathcomp 2.x moved ssreflect's files to `mathcomp/boot` and
# fingroup's to `mathcomp/finite_group`; MathClasses is not packaged for it.
ROCQ9_LIBRARIES: dict[str, Library] = {
    **{k: v for k, v in LIBRARIES.items() if k != "mathclasses"},
    "mathcomp-ssreflect": Library(
        "rocq-mathcomp-boot", "mathcomp/boot", "-R", "mathcomp", "mathcomp"
    ),
    "mathcomp-fingroup": Library(
        "rocq-mathcomp-fingroup", "mathcomp/finite_group", "-R", "mathcomp", "mathcomp"
    ),
}


def library_project(library: Library, user_contrib: Path, folder: Path) -> Path:
    """Write into `folder` the `_CoqProject` that gives `library` its own load path (what
    `--coq-project` takes: the bench goes through the product's project route)."""
    root = user_contrib / library.root
    (folder / "_CoqProject").write_text(f"{library.flag} {root} {library.logical}\n")
    return folder


@dataclass
class Task:
    file: str
    theorem: str
    original: str  # the file with this theorem's proof replaced by `Admitted.`
    real: str  # the file itself


def coqlib(toolchain: Toolchain) -> Path:
    """The toolchain's Coq library folder as a path of this machine (a provisioned
    toolchain's `coqc -where` names a folder inside its root)."""
    with tempfile.TemporaryDirectory() as work:
        where = toolchain.run([toolchain.program("coqc"), "-where"], cwd=work, timeout=120)
    path = where.stdout.strip()
    if where.returncode or not path:
        sys.exit(f"error: `coqc -where` failed on toolchain {toolchain.name}")
    return Path(path) if toolchain.root is None else toolchain.root / path.lstrip("/")


class ReplayClock:
    """The coqchk replay's own seconds (CPU of its ended processes, wall), so that the
    `eval` ratio leaves it out and reports it apart, as issue 28 asks: a timing wrapper
    around `coq_replay.replay_findings`, which `coq_layer` imports at each call."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0
        self.runs = 0
        self._real = coq_replay.replay_findings

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        c0, w0 = cpu(), time.perf_counter()
        try:
            return self._real(*args, **kwargs)
        finally:
            self.cpu += cpu() - c0
            self.wall += time.perf_counter() - w0
            self.runs += 1

    def install(self) -> None:
        coq_replay.replay_findings = self  # type: ignore[assignment]


def pick(tasks: list[Task], n: int | None, spread: bool, seed: int) -> list[Task]:
    """At most `n` of a file's tasks: its first ones, or (`spread`) a sample by `seed` over
    the whole file, kept in file order (later lemmas sit in sections, after records ...)."""
    if n is None or len(tasks) <= n:
        return tasks
    if not spread:
        return tasks[:n]
    keep = set(random.Random(f"{seed}:{tasks[0].file}").sample(range(len(tasks)), n))
    return [t for i, t in enumerate(tasks) if i in keep]


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


def refusal_class(message: str) -> str:
    """A finding's class, the same for every task it refuses: its names (`…` spans), quoted
    terms and universe levels (`Candidate.1037`) blanked, cut before its details (the first `;`, `: ` after the reason, or
    ` (`), so that the refusals of a run can be counted by the rule that made them."""
    text = " ".join(message.split())
    text = re.sub(r"`[^`]*`", "`…`", text)
    text = re.sub(r'"[^"]*"', '"…"', text)
    text = re.sub(r"\b(?:[A-Za-z_][\w']*\.)+\d+\b", "…", text)  # universe levels
    while True:  # `undecided: environment: …`: one-word heads are the verdict's kinds
        head, sep, rest = text.partition(": ")
        if not (sep and head.isidentifier()):
            break
        text = rest
    cut = min(
        (i for i in (text.find(";"), text.find(": "), text.find(" (")) if i > 0), default=len(text)
    )
    return text[:cut][:140]


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
    parser.add_argument(
        "--sample", type=int, default=None, help="a random sample of the files that give a task"
    )
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
    parser.add_argument(
        "--toolchain",
        default=None,
        help="the Coq toolchain (`host`, `rocq-9.2`, ...; default: FORMALBENCH_TOOLCHAIN, else "
        "the newest installed): its coqc, its standard library and its installed libraries",
    )
    parser.add_argument(
        "--library",
        choices=sorted(LIBRARIES),
        default=None,
        help="an installed library's sources (under `coqc -where`/user-contrib) instead of "
        "FOLDER, with the load path of its own build",
    )
    parser.add_argument(
        "--spread",
        action="store_true",
        help="with --tasks-per-file N: N tasks sampled by --seed over the whole file, not its "
        "first N",
    )
    parser.add_argument(
        "--file", default=None, help="only this file (its path under the folder): no sampling"
    )
    parser.add_argument(
        "--lemma", action="append", default=[], help="only this theorem's task (repeatable)"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fb-real-proofs-"))
    project = args.coq_project
    toolchain = resolve(args.toolchain)
    lib = coqlib(toolchain)
    rocq9 = (lib / "user-contrib" / "Stdlib").is_dir()
    if args.library:
        if args.folder or project:
            sys.exit("error: --library names its folder and load path: no FOLDER/--coq-project")
        table = ROCQ9_LIBRARIES if rocq9 else LIBRARIES
        if args.library not in table:
            sys.exit(f"error: {args.library} is not packaged for toolchain {toolchain.name}")
        library = table[args.library]
        folder = lib / "user-contrib" / library.sources
        if not folder.is_dir():
            sys.exit(f"error: {folder} is missing: install {library.package}")
        (scratch / "project").mkdir()
        project = library_project(library, lib / "user-contrib", scratch / "project")
    else:
        default = lib / "user-contrib" / "Stdlib" if rocq9 else lib / "theories"
        folder = args.folder or default
    if not folder.is_dir():
        sys.exit(f"error: {folder} is not a folder")
    files = sorted(p for p in folder.rglob("*.v") if "Init" not in p.parts)
    retry = refused_before(args.retry) if args.retry else None
    if retry is not None:
        files = [p for p in files if str(p.relative_to(folder)) in {f for f, _ in retry}]
    if args.file:
        files = [p for p in files if str(p.relative_to(folder)) == args.file]
        if not files:
            sys.exit(f"error: no file {args.file} under {folder}")
    else:
        if args.max_bytes:
            files = [p for p in files if p.stat().st_size <= args.max_bytes]
        if args.sample:  # among the files that can give a task at all
            files = [p for p in files if tasks_of(p.name, p.read_text(errors="replace"))]
            files = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
        files = files[args.skip :][: args.limit]
    backend = CoqBackend(timeout=args.timeout, workers=1, project_dir=project, toolchain=toolchain)
    print(f"toolchain {toolchain.name} (Coq {toolchain.version()}), sources {folder}", flush=True)
    replay = ReplayClock()
    replay.install()
    verifier = StrictVerifier(backend)
    # the same checks without the forbidden-word pre-filter (`--task-by-assistant`)
    lenient = StrictVerifier(backend, VerifierPolicy(forbidden=[]))
    judges = (verifier, lenient)
    counts: dict[str, Counter[str]] = {"genuine": Counter(), "task": Counter()}
    examples: dict[tuple[str, str], str] = {}
    cost = {"alone": 0.0, "pair": 0.0, "eval": 0.0, "alone_wall": 0.0, "eval_wall": 0.0}
    cost["replay"] = cost["replay_wall"] = 0.0  # the replay of the timed `eval` checks
    cost["eval_session"] = 0.0  # the warm coqtop's share of `eval` (kernel dumps)
    timed_tasks = 0
    broken_tasks = 0
    compiled_files = 0
    not_alone: list[str] = []  # files that do not compile alone here, with coqc's status
    refused: list[str] = []  # every refused genuine proof with its first finding
    classes: Counter[str] = Counter()  # the refused genuine proofs by `refusal_class`
    out = args.out.open("w") if args.out else None
    try:
        for path in files:
            copy = scratch / path.name
            shutil.copy(path, copy)  # a copy: the library's sources are never compiled
            text = copy.read_text(encoding="utf-8", errors="replace")
            alone, alone_cpu, alone_wall = timed(backend.check, text)
            name = str(path.relative_to(folder))
            if not alone.compiled:
                not_alone.append(f"{name} ({alone.status.value})")
                continue
            compiled_files += 1
            tasks = tasks_of(name, text)
            if args.lemma:
                tasks = [t for t in tasks if t.theorem in args.lemma]
            tasks = pick(tasks, args.tasks_per_file, args.spread, args.seed)
            if retry is not None:
                tasks = [t for t in tasks if (t.file, t.theorem) in retry]
            for i, task in enumerate(tasks):
                genuine, pair_cpu, pair_wall = timed(verifier.verify, task.original, task.real)
                if i == 0:  # one task per file is timed again, warm: what `eval` pays
                    warm = coq_session.sessions_cpu()
                    r_cpu, r_wall = replay.cpu, replay.wall
                    _, eval_cpu, eval_wall = timed(verifier.verify, task.original, task.real)
                    cost["eval_session"] += coq_session.sessions_cpu() - warm
                    # the replay is reported apart (issue 28: "replay excluded")
                    cost["replay"] += replay.cpu - r_cpu
                    cost["replay_wall"] += replay.wall - r_wall
                    eval_cpu -= replay.cpu - r_cpu
                    eval_wall -= replay.wall - r_wall
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
                if not genuine.passed:
                    finding = genuine.findings[0].message if genuine.findings else "no finding"
                    reason = first_reason(genuine)
                    if not finding.startswith(f"{reason}:"):
                        finding = f"{reason}: {finding}"
                    refused.append(f"{task.file} {task.theorem}: " + " ".join(finding.split()))
                    classes[f"{reason}: {refusal_class(finding)}"] += 1
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
                                    "pair_cpu": round(pair_cpu, 2),
                                    "pair_wall": round(pair_wall, 2),
                                    "alone_cpu": round(alone_cpu, 2),
                                    "alone_wall": round(alone_wall, 2),
                                }
                            )
                            + "\n"
                        )
                        out.flush()  # a run stopped early still leaves every verdict
                print(
                    f"{task.file} {task.theorem}: genuine {first_reason(genuine)}, "
                    f"task {first_reason(own)} (pair {pair_cpu:.1f} s CPU, {pair_wall:.1f} s "
                    f"wall; file alone {alone_cpu:.1f} s CPU)",
                    flush=True,
                )
    except KeyboardInterrupt:  # Ctrl-C: the figures so far are still printed
        print("interrupted: figures over the tasks done so far")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if out:
            out.close()
    print(f"\nfiles: {len(files)} tried, {compiled_files} compile alone")
    if not_alone:
        print(f"  not compiled alone (no tasks): {', '.join(not_alone)}")
    print(f"tasks whose text does not compile (refused as it must be): {broken_tasks}")
    for kind in ("genuine", "task"):
        total = sum(counts[kind].values())
        print(f"{kind} candidates ({total}):")
        for reason, n in counts[kind].most_common():
            print(
                f"  {reason}: {n}"
                + (f"  e.g. {examples[(kind, reason)]}" if (kind, reason) in examples else "")
            )
    if refused:
        print(f"refused genuine proofs ({len(refused)}), first finding:")
        for line in refused:
            print(f"  {line}")
        print("refused genuine proofs by class (first finding, names blanked):")
        for name, n in classes.most_common():
            print(f"  {n}  {name}")
    if timed_tasks and cost["alone"] > 0:
        print(
            f"cost over {timed_tasks} tasks (coqc CPU, vs the candidate compiled alone): "
            f"pair {cost['pair'] / cost['alone']:.2f}x, eval {cost['eval'] / cost['alone']:.2f}x"
            f" (wall eval {cost['eval_wall'] / cost['alone_wall']:.2f}x; kernel dumps in "
            f"the warm coqtop: {cost['eval_session'] / cost['alone']:.2f}x of it); the coqchk "
            f"replay apart: {cost['replay'] / cost['alone']:.2f}x CPU, "
            f"{cost['replay_wall'] / cost['alone_wall']:.2f}x wall"
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
