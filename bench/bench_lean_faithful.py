"""False rejections of the Lean text layer on real proofs and on harmless rewrites of them.

Two measurements, both with `StrictVerifier(None, language=lean).static_findings`:

1. Published proofs (`--proofs DIR`): every `NAME.lean` in DIR (a machine proof of miniF2F
   problem NAME, as published, e.g. Kimina-Prover-Preview's `minif2f_test_solved/src/`) is
   checked against its original, the miniF2F statement of
   `../shared/data/minif2f-lean4/minif2f_deepseek_v15.jsonl` (header + statement + `sorry`),
   and, where present, `lean4_files/MiniF2F/**/NAME.lean`. A rejection only for a documented
   rule (a policy-forbidden word such as `native_decide`) is counted apart.
2. Harmless rewrites of every miniF2F statement (no published proof needed): the original with
   its hole filled (`simp`), then the same with each rewrite a real proof file shows: the first
   hypothesis renamed (`h₀` -> `_h₀`), the module-system form (`module`, `public import`,
   `@[expose] public section` ... `end`), a helper in a closed `section` with its own `open`,
   the imports and the `open` list reordered. Each must pass.

It prints counts per source, the rejected names with their first finding, and files/s.

    python bench/bench_lean_faithful.py --proofs /path/to/minif2f_test_solved/src
    python bench/bench_lean_faithful.py --limit 100
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from formalbench.checking.holes import fill_holes
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Finding, Language, Reason

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "minif2f-lean4"
DOCUMENTED = {"native_decide"}  # refused by the default policy on purpose (docs/decisions.md)
LEAN = Language.lean


def originals() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (DATA / "minif2f_deepseek_v15.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        out[row["name"]] = row["header"] + row["formal_statement"] + "  sorry\n"
    return out


def file_originals() -> dict[str, str]:
    root = DATA / "lean4_files"
    return {p.stem: p.read_text(encoding="utf-8") for p in root.rglob("*.lean")
            if ".lake" not in p.parts and "sorry" in p.read_text(encoding="utf-8")}  # fmt: skip


def documented(findings: list[Finding]) -> bool:
    return all(f.reason == Reason.forbidden_construct and f.subject in DOCUMENTED
               for f in findings)  # fmt: skip


def rewrites(solved: str) -> dict[str, str]:
    """Harmless rewrites a published proof file may show (see the module docstring)."""
    out = {"filled": solved}
    m = re.search(r"\((h[₀-₉0-9]*) :", solved)
    if m:
        name = m.group(1)
        out["renamed binder"] = re.sub(rf"(?<![\w.']){re.escape(name)}(?![\w'])", "_" + name,
                                       solved)  # fmt: skip
    at = solved.index("theorem ")
    head, rest = solved[:at], solved[at:]
    imports = [ln for ln in head.splitlines() if ln.startswith("import ")]
    others = "\n".join(ln for ln in head.splitlines() if not ln.startswith("import "))
    public = "".join(f"public {ln}\n" for ln in imports)
    out["module system"] = (
        f"module\n\n{public}{others}\n@[expose] public section\n\n{rest.rstrip()}\n\nend\n"
    )
    helper = "section\nopen Finset\nlemma helper_aux : True := trivial\nend\n\n"
    out["helper in closed section"] = head + helper + rest
    reordered = "\n".join(reversed(imports)) + "\n" + others
    opens = re.search(r"^open ([\w ]+)$", reordered, re.M)
    if opens:
        names = opens.group(1).split()
        reordered = reordered.replace(opens.group(0), "open " + " ".join(reversed(names)))
    out["imports/open reordered"] = reordered + "\n" + rest
    return out


def report(title: str, results: dict[str, list[Finding]], seconds: float) -> None:
    bad = {k: v for k, v in results.items() if v and not documented(v)}
    doc = sum(1 for v in results.values() if v and documented(v))
    rate = len(results) / seconds if seconds else float("inf")
    print(f"{title}: {len(results)} checked, {len(results) - len(bad) - doc} passed, "
          f"{doc} refused by a documented rule, {len(bad)} false rejections "
          f"({rate:.0f} files/s)")  # fmt: skip
    for name, findings in sorted(bad.items())[:10]:
        print(f"    {name}: {findings[0].reason.value}: {findings[0].message[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proofs", type=Path, help="folder of published NAME.lean proofs")
    parser.add_argument("--limit", type=int, default=0, help="statements for the rewrites")
    args = parser.parse_args()
    verifier = StrictVerifier(None, language=LEAN)
    statements = originals()
    if args.proofs:
        for label, table in (("jsonl", statements), ("lean4_files", file_originals())):
            results: dict[str, list[Finding]] = {}
            t0 = time.perf_counter()
            for path in sorted(args.proofs.glob("*.lean")):
                if path.stem in table:
                    proof = path.read_text(encoding="utf-8")
                    results[path.stem] = verifier.static_findings(table[path.stem], proof)
            report(f"published proofs vs miniF2F {label}", results, time.perf_counter() - t0)
    names = sorted(statements)[: args.limit or None]
    per_kind: dict[str, dict[str, list[Finding]]] = {}
    elapsed: Counter[str] = Counter()
    for name in names:
        original = statements[name]
        for kind, text in rewrites(fill_holes(original, LEAN, ["simp"])).items():
            t0 = time.perf_counter()
            per_kind.setdefault(kind, {})[name] = verifier.static_findings(original, text)
            elapsed[kind] += time.perf_counter() - t0
    for kind, results in per_kind.items():
        report(f"miniF2F statements, {kind}", results, elapsed[kind])


if __name__ == "__main__":
    main()
