"""`Fb_Print_Assumptions` against `Print Assumptions` on real library code: same answers?
How much faster once the libraries are frozen?

For each sampled file of a Coq library folder (default: the standard library that comes with
coqc; copies are compiled, never the sources) that compiles alone: the copy becomes the
library `Candidate`; one coqtop loads the file's own `Require`s, freezes them
(`Fb_Freeze_Assumptions`, as a warm session does below its mark), `Require`s `Candidate` and
asks both commands about every top-level theorem of it, in turn. Their outputs must be
identical, line for line. Times are coqtop CPU of two more runs that ask only one of the
two commands, each asked twice over the file's theorems (the second round is what a warm
session pays for the next candidate over the same libraries).

    python bench/bench_assumptions_plugin.py --sample 40 --seed 3
"""

from __future__ import annotations

import argparse
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from formalbench.backends import coq_assumptions_plugin as plugin
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_session import preload_sentences
from formalbench.checking.decls import split_decls
from formalbench.core.records import Language

PROJECT: list[str] = []  # a Coq project's load path (`--coq-project`)
_THEOREMS = {"Theorem", "Definition", "Instance", "Inductive"}


def stdlib_theories() -> Path:
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True)
    return Path(where.stdout.strip()) / "theories"


def subjects_of(text: str) -> list[str]:
    """Full names (`M.t` inside modules) of the file's theorems and definitions outside
    sections and functors."""
    names: list[str] = []
    scopes: list[str | None] = []
    for d in split_decls(text, Language.coq):
        if d.kind in ("Section",):
            scopes.append(None)
        elif d.kind == "Module" and ":=" not in text[d.start : d.end]:
            head = text[d.start : d.end].split()
            functor = "(" in text[d.start : d.end]
            scopes.append(None if functor or len(head) < 2 else head[1].rstrip("."))
        elif d.kind == "End" and scopes:
            scopes.pop()
        elif d.kind in _THEOREMS and d.name and all(s is not None for s in scopes):
            names.append(".".join([*(s for s in scopes if s), d.name]))
    return names


def coqtop(plugin_dir: Path, work: Path, script: str) -> tuple[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        ["coqtop", "-q", *PROJECT, "-R", ".", "", *plugin.coqtop_args(plugin_dir)],
        input=script,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, cpu


def answers(stdout: str, marker: str) -> dict[str, list[str]]:
    """What each query printed, keyed by the marker label that precedes it."""
    out: dict[str, list[str]] = {}
    label = None
    for line in stdout.splitlines():
        line = re.sub(r"^(Coq < )+", "", line)
        found = re.match(rf"No object of basename {marker}_(\w+)", line)
        if found:
            label = found[1]
            out[label] = []
        elif label is not None and line.strip():
            out[label].append(line.rstrip())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--max-bytes", type=int, default=30000)
    parser.add_argument(
        "--coq-project", type=Path, default=None, help="its _CoqProject's load path (built)"
    )
    args = parser.parse_args()
    if args.coq_project is not None:
        PROJECT.extend(CoqBackend(project_dir=args.coq_project).args)
    plugin_dir = plugin.plugin_folder("coqtop")
    if plugin_dir is None:
        sys.exit("the plugin cannot be built here (see the log); nothing to compare")
    folder = args.folder or stdlib_theories()
    files = sorted(
        p
        for p in folder.rglob("*.v")
        if "Init" not in p.parts and p.stat().st_size <= args.max_bytes
    )
    files = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
    same = differ = files_used = 0
    cpu = {"Print Assumptions": 0.0, "first": 0.0, "again": 0.0}
    for path in files:
        work = Path(tempfile.mkdtemp(prefix="fb-assum-"))
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            (work / "Candidate.v").write_text(text, encoding="utf-8")
            built = subprocess.run(
                ["coqc", "-q", *PROJECT, "-R", ".", "", "Candidate.v"],
                cwd=work,
                capture_output=True,
                timeout=600,
            )
            names = subjects_of(text)
            if built.returncode != 0 or not names:
                continue
            files_used += 1
            head = "\n".join([*preload_sentences(text, ("Candidate",)), plugin.FREEZE])
            head += "\nRequire Candidate.\n"
            script = head
            for k, name in enumerate(names):
                script += f"Locate fbm_p{k}.\nPrint Assumptions Candidate.{name}.\n"
                script += f"Locate fbm_f{k}.\n{plugin.QUERY_VERB} Candidate.{name}.\n"
            script += "Locate fbm_end.\n"
            out, _ = coqtop(plugin_dir, work, script)
            got = answers(out, "fbm")
            for k, name in enumerate(names):
                ours, coqs = got.get(f"f{k}"), got.get(f"p{k}")
                answered = coqs and (coqs[0] == "Axioms:" or coqs[0].startswith("Closed"))
                if not answered:  # not a constant of Candidate (a name read wrong): skipped
                    continue
                if ours == coqs:
                    same += 1
                else:
                    differ += 1
                    print(f"DIFFER {path.name} {name}:\n  coq:  {coqs}\n  ours: {ours}")
            for verb, key in (("Print Assumptions", "Print Assumptions"), (None, "first")):
                asked = verb or plugin.QUERY_VERB
                rounds = 1 if verb else 2
                queries = "".join(f"{asked} Candidate.{n}.\n" for _ in range(rounds) for n in names)
                base, base_cpu = coqtop(plugin_dir, work, head)
                _, total = coqtop(plugin_dir, work, head + queries)
                if verb:
                    cpu[key] += total - base_cpu
                else:  # both rounds of the plugin, split by a third run of one round
                    one = "".join(f"{asked} Candidate.{n}.\n" for n in names)
                    _, first = coqtop(plugin_dir, work, head + one)
                    cpu["first"] += first - base_cpu
                    cpu["again"] += total - first
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"files: {len(files)} sampled, {files_used} compiled with theorems")
    print(f"answers: {same} identical, {differ} different")
    print(
        "coqtop CPU of the queries over all theorems: Print Assumptions "
        f"{cpu['Print Assumptions']:.2f}s; Fb_Print_Assumptions first round "
        f"{cpu['first']:.2f}s, next round {cpu['again']:.2f}s"
    )
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
