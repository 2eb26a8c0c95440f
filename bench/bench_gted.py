"""GTED and BEq speed.

- GTED from the authors' trees (gted-minif2f.jsonl, 205 pairs): pairs/s per distance engine
  (our numpy Zhang-Shasha, the default; APTED, the reference; edist when the optional
  `gted-fast` extra is installed), wall clock and CPU time (the machine may be shared).
  Target: >= 200/s for the default engine.
- GTED from statement text (our Lean grammar, then the distance): pairs/s.
- BEq in Coq (tier 1): seconds per pair over the written pairs of
  tests/test_comparison_beq_coq.py, one coqc run per batch, and one pair alone.

    python bench/bench_gted.py [--data ../shared/data] [--no-beq]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from formalbench.comparison.gted_pairs import read_pairs, score_pairs
from formalbench.metrics.gted import engines, gted
from formalbench.metrics.optree import tree_from_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("FORMALBENCH_TEST_DATA", ROOT / ".." / "shared")) / "data"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--no-beq", action="store_true")
    args = ap.parse_args()
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
