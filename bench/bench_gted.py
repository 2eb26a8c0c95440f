"""GTED and BEq speed.

- GTED from the authors' trees (gted-minif2f.jsonl, 205 pairs): pairs/s per distance engine
  (our numpy Zhang-Shasha, the default; APTED, the reference; edist when the optional
  `gted-fast` extra is installed), wall clock and CPU time (the machine may be shared).
  Target: >= 200/s for the default engine.
- GTED from statement text (our Lean grammar, then the distance): pairs/s.
- BEq in Coq (tier 1): seconds per pair over the written pairs of
  tests/test_comparison_beq_coq.py, one coqc run per batch, and one pair alone.
- `--table`: only the README's agreement table (GTED against human labels: 5-fold
  cross-validated and in-sample figures), as Markdown rows. Its first two rows are what
  `formalbench metrics gted ../shared/data/gted-minif2f.jsonl [--from-text] --json` prints;
  tests/test_readme.py checks that the README holds these rows.

    python bench/bench_gted.py [--data ../shared/data] [--no-beq] [--table]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from formalbench.comparison.beq_human import beq_human_pairs
from formalbench.comparison.gted_pairs import read_pairs, score_pairs, summarize
from formalbench.metrics.gted import engines, gted
from formalbench.metrics.optree import tree_from_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("FORMALBENCH_TEST_DATA", ROOT / ".." / "shared")) / "data"


TABLE_HEAD = (
    "| data | trees | κ (5-fold CV) | precision | recall | accuracy | κ in-sample (t) |\n"
    "|---|---|---|---|---|---|---|"
)


def agreement_rows(data: Path) -> list[str]:
    """The README's agreement rows: GTED against the human labels of the GTED authors'
    miniF2F pairs (their trees; our Lean parser) and of BEq's ProofNet pairs (our parser)."""
    minif2f = read_pairs(data / "gted-minif2f.jsonl")
    sets = [
        ("miniF2F", "authors'", minif2f, False),
        ("miniF2F", "our Lean parser", minif2f, True),
        ("BEq ProofNet", "our Lean parser", beq_human_pairs(data / "beq-human"), True),
    ]
    rows = []
    for name, trees, records, from_text in sets:
        s = summarize(list(score_pairs(records, from_text=from_text)))
        cv, ins = s["cross_validated"], s["in_sample"]
        source = trees if not from_text else f"{trees}, {s['unparseable']} unparseable"
        rows.append(
            f"| {name}, {s['pairs']} pairs | {source} | {cv['kappa']:.3f} | "
            f"{cv['precision']:.3f} | {cv['recall']:.3f} | {cv['accuracy']:.3f} | "
            f"{ins['kappa']:.3f} ({ins['threshold']:.3f}) |"
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--no-beq", action="store_true")
    ap.add_argument("--table", action="store_true", help="print only the agreement table")
    args = ap.parse_args()
    if args.table:
        print(TABLE_HEAD)
        print("\n".join(agreement_rows(args.data)))
        return
    records = read_pairs(args.data / "gted-minif2f.jsonl")
    trees = [
        (tree_from_json(r["label_tree"]), tree_from_json(r["prediction_tree"])) for r in records
    ]
    for engine in engines():
        t0, c0 = time.perf_counter(), time.process_time()
        for a, b in trees:
            gted(a, b, engine)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        print(
            f"gted from trees [{engine}]: {len(trees) / dt:.1f} pairs/s wall, "
            f"{len(trees) / dc:.1f} pairs/s cpu ({len(trees)} pairs, {dt:.2f} s)"
        )
    t0 = time.perf_counter()
    scored = list(score_pairs(records, from_text=True))
    dt = time.perf_counter() - t0
    print(f"gted from text [parse + {engines()[0]}]: {len(scored) / dt:.1f} pairs/s ({dt:.2f} s)")
    if args.no_beq or shutil.which("coqc") is None:
        print("beq coq: skipped (no coqc or --no-beq)")
        return
    sys.path.insert(0, str(ROOT))
    from formalbench.comparison.beq_coq import CoqBeq
    from tests.test_comparison_beq_coq import PAIRS, header_for, thm

    pairs = [(thm(p, header_for(p)), thm(q, header_for(q))) for _, p, q, _ in PAIRS]
    beq = CoqBeq(timeout=60)
    t0 = time.perf_counter()
    beq.compare_many(pairs)
    dt = time.perf_counter() - t0
    print(f"beq coq, batched: {dt / len(pairs):.2f} s/pair ({len(pairs)} pairs, {dt:.1f} s)")
    t0 = time.perf_counter()
    for ref, cand in pairs[:3]:
        beq.compare(ref, cand)
    dt = time.perf_counter() - t0
    print(f"beq coq, one pair per run: {dt / 3:.2f} s/pair")


if __name__ == "__main__":
    main()
