"""Which statements of a Coq folder (PutnamBench-Coq) compile as tasks on a toolchain, and why
the others do not.

Each file is imported as `formalbench eval` imports it (`load_tasks`), prepared for the
toolchain (`backends/coq_prepare.py`: header only), and its original is compiled with its
holes admitted, by the eval preflight itself (`pipelines/preflight.check_originals`: 40
tasks a file, a failing file redone task by task). A task that does not compile as given but does once prepared counts as
`prepared`; the first error of the others is sorted into a cause (a library not installed, a
name not found, a type error, ...). Printed: the counts per outcome and cause, and the total
coqc wall time; `--out` writes one JSON line per task.

    python bench/bench_putnam_coq.py ../shared/data/putnambench-coq/src --jobs 2 --out host.jsonl
    python bench/bench_putnam_coq.py host.jsonl --summarize
    python bench/bench_putnam_coq.py DIR --toolchain rocq-9.2 --out rocq92.jsonl
    python bench/bench_putnam_coq.py DIR --start 200 --limit 100 --out part3.jsonl   # a part

Parts of one run (`--start`/`--limit`, in the folder's order) concatenate into the whole:
`cat part*.jsonl > all.jsonl` then `--summarize all.jsonl`.

`--toolchain` names the toolchain (`formalbench toolchain list`; default: host); its facts
(version, packages, modules) are read as `formalbench eval` reads them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_prepare import ToolchainFacts, prepare
from formalbench.core.records import Task
from formalbench.datasets.loader import load_tasks
from formalbench.pipelines.preflight import check_originals
from formalbench.toolchains.prepare import toolchain_facts

_CAUSES = [
    (re.compile(r"The reference (\S+) was not found"), "name not found"),
    (re.compile(r"has type .* while it is expected to have type"), "type error"),
    (re.compile(r"Cannot interpret this number as a value of type"), "number notation"),
    (re.compile(r"outside sections"), "assumption outside a section"),
    (re.compile(r"Unable to unify|Cannot infer|cannot be applied"), "elaboration"),
]


def cause_of(message: str) -> str:
    """A short cause for a first error (the README table groups by it): a library that is not
    installed at all (`library not installed: GeoCoq`), a module an installed library does not
    have in this version (`module not in this version: mathcomp.analysis.probability`), a name
    not found, ..."""
    flat = " ".join(message.split())
    lib = re.search(r"bound to logical path (\S+?)(?: with prefix (\S+?))?\.(?:\s|$)", flat)
    if lib:
        module, prefix = lib.group(1), lib.group(2)
        full = f"{prefix}.{module}" if prefix else module
        root = full.split(".")[0]
        if root in _INSTALLED_ROOTS:
            return f"module not in this version: {full}"
        return f"library not installed: {root}"
    for pattern, cause in _CAUSES:
        match = pattern.search(flat)
        if match:
            return f"{cause}: {match.group(1)}" if match.groups() else cause
    return f"other: {flat[:60]}"


# roots of the libraries both toolchains here have (a module missing under one of them is a
# version difference, not a library Debian lacks)
_INSTALLED_ROOTS = {"mathcomp", "Coquelicot", "Stdlib", "Coq", "HB", "stdpp", "Flocq", "Interval"}


async def measure(
    backend: CoqBackend, tasks: list[Task], facts: ToolchainFacts, timeout: float
) -> list[dict[str, Any]]:
    """One row per task: `as given`, `prepared` (compiles only once prepared) or `fails`."""
    failed = await check_originals(backend, tasks, timeout)
    preps = {t.id: prepare(t.header, t.formal, facts) for t in tasks}
    retry = [
        t.model_copy(update={"header": preps[t.id].header})
        for t in tasks
        if t.id in failed and preps[t.id].changes
    ]
    failed_prepared = await check_originals(backend, retry, timeout) if retry else {}
    retried = {t.id for t in retry}
    rows = []
    for task in tasks:
        row: dict[str, Any] = {
            "id": task.id,
            "library": task.labels.get("library"),
            "changes": [c.rule for c in preps[task.id].changes],
        }
        if task.id not in failed:
            row["outcome"] = "as given"
        elif task.id in retried and task.id not in failed_prepared:
            row.update(outcome="prepared", error_as_given=failed[task.id][0])
        else:
            error = failed_prepared.get(task.id, failed[task.id])[0]
            row.update(outcome="fails", error=error)
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]]) -> None:
    """The counts per outcome (by library family), the rules that made a statement compile,
    and the failures per cause with their tasks."""
    outcomes = Counter(r["outcome"] for r in rows)
    for outcome in ("as given", "prepared", "fails"):
        by_library = Counter(r["library"] for r in rows if r["outcome"] == outcome)
        print(f"  {outcome:9} {outcomes[outcome]:4}  {dict(sorted(by_library.items()))}")
    rules = Counter(rule for r in rows if r["outcome"] == "prepared" for rule in r["changes"])
    print(f"  rules of the prepared: {dict(rules)}")
    failing = [r for r in rows if r["outcome"] == "fails"]
    causes = Counter(cause_of(r["error"]) for r in failing)
    for cause, n in sorted(causes.items(), key=lambda item: (-item[1], item[0])):
        ids = [r["id"].removeprefix("putnam_") for r in failing if cause_of(r["error"]) == cause]
        print(f"  fails {n:3}  {cause:55} {' '.join(ids)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--toolchain", default="host")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument(
        "--start", type=int, default=0, help="skip the first N tasks (split a long run in parts)"
    )
    parser.add_argument(
        "--memory-mb", type=int, default=4096, help="0: no address-space limit (OCaml 5's coqc)"
    )
    parser.add_argument("--out")
    parser.add_argument("--summarize", action="store_true", help="DATASET is an --out file")
    args = parser.parse_args()
    if args.summarize:
        lines = Path(args.dataset).read_text(encoding="utf-8").splitlines()
        summarize([json.loads(line) for line in lines if line.strip()])
        return 0
    tasks = load_tasks(args.dataset).tasks
    tasks = tasks[args.start :]
    tasks = tasks[: args.limit] if args.limit else tasks
    memory = args.memory_mb or None
    backend = CoqBackend(
        toolchain=args.toolchain, timeout=args.timeout, workers=args.jobs, memory_mb=memory
    )
    facts = toolchain_facts(backend.toolchain)
    print(
        f"toolchain {facts.name}: Coq {'.'.join(map(str, facts.coq))}, libraries "
        f"{ {k: '.'.join(map(str, v)) for k, v in facts.libraries.items()} }, "
        f"{len(facts.modules)} modules; {len(tasks)} tasks",
        file=sys.stderr,
    )
    started = time.perf_counter()
    rows = asyncio.run(measure(backend, tasks, facts, args.timeout))
    wall = time.perf_counter() - started
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"\n{facts.name}: {len(rows)} statements, wall {wall:.0f} s ({args.jobs} coqc at a time)")
    summarize(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
