"""The Lean static layer on real library files: genuine proofs accepted, task texts refused.

Real files are cut into tasks the way APE-style mining does: one theorem of the file has its
proof replaced by `sorry` (the task, "original"), and the real file is the candidate. For every
such task the static layer (the gate, then `StrictVerifier(None).static_findings`, the same
checks a run makes before any Lean process) must accept the real file, except for documented
rules, and must refuse the task text offered as its own proof (it still says `sorry`).

Files: every `.lean` file of a batteries checkout (`--batteries DIR`; by default the history
bundle `../shared/data/git-histories/batteries.bundle` is cloned to a temporary folder at its
head) and of `--mathlib DIR` (Mathlib files fetched with the search tools' `read_file`; the
fixtures in `tests/fixtures/lean_real_files/` are a small set kept with their provenance).
Theorems proved by `|` pattern arms or `where` are left out (no single `:=` body to cut), and so
are files that already contain `sorry`/`admit` (test files: each `sorry` would be a hole of the
task too).

    python bench/bench_lean_real_files.py --limit-files 120 --per-file 3
    python bench/bench_lean_real_files.py --mathlib tests/fixtures/lean_real_files

It prints files, tasks, genuine files accepted (and refused, by rule), task texts accepted
(must be 0) and tasks/s.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from formalbench.checking.decls import split_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.gate import gate_findings
from formalbench.core.records import Finding, Language

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.shared_data import DATA  # noqa: E402 (the one place the public data is found)

BUNDLE = DATA / "git-histories" / "batteries.bundle"
FIXTURES = ROOT / "tests" / "fixtures" / "lean_real_files"
LEAN = Language.lean
# Rules that refuse a genuine library file on purpose (docs/decisions.md): a file that uses
# them is not a valid candidate for an evaluation task.
DOCUMENTED = {
    "native_decide": "trusts the compiler, not the kernel",
    "implemented_by": "replaces a definition's code at run time",
    "extern": "native code",
    "unsafe": "an `unsafe` declaration",
    "opaque": "a constant nothing can unfold",
    "axiom": "a new axiom",
    "elab": "a new elaborator",
    "macro": "a new macro",
    "syntax": "new syntax",
    "initialize": "code run when the module loads",
}


def tasks(text: str, per_file: int) -> list[tuple[str, str]]:
    """(theorem name, task text) for up to `per_file` theorems of the file with a `:=` proof,
    spread over the file."""
    decls = split_decls(text, LEAN)
    cut: list[tuple[str, str]] = []
    for d in decls:
        if d.kind != "theorem" or not d.name or d.body_start >= len(d.tokens):
            continue
        if d.tokens[d.body_start].text != ":=":
            continue
        at = d.tokens[d.body_start].offset
        cut.append((d.name, text[:at] + ":= sorry" + text[d.end :]))
    if len(cut) <= per_file:
        return cut
    step = len(cut) / per_file
    return [cut[int(i * step)] for i in range(per_file)]


# The gate refuses code run at elaboration time and the names of I/O (`IO`, `EIO`, `BaseIO`,
# `IO.*`) wherever they stand (docs/decisions.md, "Security": a deny-list that errs towards
# refusing): a library's test files run `#eval`/`run_meta`, and lemmas about the IO monad name
# `BaseIO`; such files are no candidates for a task.
GATE_WORDS = ("#eval", "#eval!", "run_cmd", "run_elab", "run_meta", "run_tac", "#exit")
IO_NAMES = re.compile(r"^(_root_\.)?(IO|EIO|BaseIO)(\.|$)")


def rule_of(f: Finding) -> str | None:
    """The documented rule behind a finding, or None (a false rejection)."""
    subject = f.subject or ""
    if subject in DOCUMENTED or subject in GATE_WORDS:
        return subject
    if IO_NAMES.match(subject):
        return "IO names (gate)"
    return None


def documented(findings: list[Finding]) -> bool:
    return bool(findings) and all(rule_of(f) is not None for f in findings)


def files(batteries: Path | None, mathlib: Path | None) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    if batteries is not None:
        out += [
            ("batteries", p) for p in sorted(batteries.rglob("*.lean")) if ".lake" not in p.parts
        ]
    if mathlib is not None:
        out += [("mathlib", p) for p in sorted(mathlib.rglob("*.lean"))]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batteries", type=Path, help="a batteries checkout (default: clone")
    parser.add_argument("--mathlib", type=Path, default=FIXTURES, help="Mathlib files")
    parser.add_argument("--no-batteries", action="store_true")
    parser.add_argument("--limit-files", type=int, default=0, help="0: all")
    parser.add_argument("--per-file", type=int, default=3)
    parser.add_argument("--show", type=int, default=10, help="refusals to print")
    args = parser.parse_args()
    batteries = args.batteries
    tmp = None
    if batteries is None and not args.no_batteries:
        if not BUNDLE.is_file():
            sys.exit(f"{BUNDLE}: no batteries history (give --batteries DIR or --no-batteries)")
        tmp = tempfile.TemporaryDirectory(prefix="fb-batteries-")
        batteries = Path(tmp.name) / "batteries"
        subprocess.run(["git", "clone", "-q", str(BUNDLE), str(batteries)], check=True)
    chosen = files(None if args.no_batteries else batteries, args.mathlib)
    if args.limit_files:
        step = max(1, len(chosen) // args.limit_files)
        chosen = chosen[::step][: args.limit_files]
    verifier = StrictVerifier(None, language=LEAN)
    per_source: dict[str, Counter[str]] = {}
    refused_by: Counter[str] = Counter()
    shown: list[str] = []
    t0 = time.perf_counter()
    n_tasks = 0
    for source, path in chosen:
        text = path.read_text(encoding="utf-8")
        counts = per_source.setdefault(source, Counter())
        counts["files"] += 1
        if re.search(r"\b(sorry|admit)\b", text):
            counts["skipped (the file has its own sorry)"] += 1
            continue  # every `sorry` of a task is a hole: such a file cannot be cut
        for name, task in tasks(text, args.per_file):
            n_tasks += 1
            counts["tasks"] += 1
            genuine = gate_findings(text, LEAN) + verifier.static_findings(task, text)
            if not genuine:
                counts["genuine accepted"] += 1
            elif documented(genuine):
                counts["genuine refused (documented rule)"] += 1
                refused_by.update({rule_of(f) or "?" for f in genuine})
            else:
                counts["genuine refused (FALSE REJECTION)"] += 1
                if len(shown) < args.show:
                    shown.append(f"  {path.name} {name}: {genuine[0].message[:150]}")
            own = gate_findings(task, LEAN) + verifier.static_findings(task, task)
            counts["task text accepted" if not own else "task text refused"] += 1
    elapsed = time.perf_counter() - t0
    for source, counts in per_source.items():
        print(f"{source}: " + " · ".join(f"{k} {v}" for k, v in counts.items()))
    if refused_by:
        print("documented rules: " + ", ".join(f"{k} {v}" for k, v in refused_by.most_common()))
    if shown:
        print("false rejections (first ones):")
        print("\n".join(shown))
    print(f"{n_tasks} tasks in {elapsed:.1f} s ({n_tasks / max(elapsed, 1e-9):.1f} tasks/s)")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
