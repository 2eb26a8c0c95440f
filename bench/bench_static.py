"""Throughput of the verifier's text layer (no assistant) over the shipped Lean data.

For each Lean file under ../shared/data (every *.lean with a hole) and, separately, each JSONL
statement, the candidate is the original with its holes filled by `simp`; the figure is
`StrictVerifier.static_findings(original, candidate)` calls per second, the work the verifier
does before it would hand a candidate to Lean. The parse of an original is cached (a run
checks many candidates against one task), so the first pass over distinct originals is cold
and a second pass warm; both are printed. Target: >= 500 files/s cold.

    python bench/bench_static.py            # all files, 1 cold + 1 warm pass
    python bench/bench_static.py --limit 200
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from formalbench.checking.holes import fill_holes, find_holes, hole_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language, TaskKind

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
JSONL = {
    "minif2f-lean4/minif2f_deepseek_v15.jsonl": ("header", "formal_statement"),
    "proofnet-lean4/proofnet_deepseek_v15.jsonl": ("header", "formal_statement"),
    "proofnet-lean4/proofnet_lean4_rahul3613.jsonl": ("header", "formal_statement"),
    "putnambench-lean4/putnambench_lean4_merged.jsonl": (None, "lean4_file"),
}


def lean_files(limit: int | None) -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(DATA.rglob("*.lean"))]
    texts = [t for t in texts if find_holes(t, Language.lean)]
    return texts[:limit]


def jsonl_statements(limit: int | None) -> list[str]:
    texts = []
    for name, (header, body) in JSONL.items():
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.append((row[header] if header else "") + row[body])
    return texts[:limit]


def timed(verifier: StrictVerifier, pairs: list[tuple[str, str]]) -> tuple[float, int]:
    findings = 0
    start = time.perf_counter()
    for original, candidate in pairs:
        findings += len(verifier.static_findings(original, candidate, TaskKind.evaluation))
    return time.perf_counter() - start, findings


def measure(label: str, originals: list[str]) -> None:
    verifier = StrictVerifier(None, language=Language.lean)
    pairs = [(o, fill_holes(o, Language.lean, ["simp"] * len(find_holes(o, Language.lean))))
             for o in originals]  # fmt: skip
    hole_decls.cache_clear()
    cold = timed(verifier, pairs)
    warm_pairs = pairs[:512]  # what the cache holds; their parses are now cached
    for original, _ in warm_pairs:
        hole_decls(original, Language.lean)
    warm = timed(verifier, warm_pairs)
    for run, n, (elapsed, findings) in (
        ("cold", len(pairs), cold),
        ("warm", len(warm_pairs), warm),
    ):
        print(f"{label:<16} {run}: {n:5d} files in {elapsed:6.2f} s = {n / elapsed:7.0f} files/s"
              f" ({findings} findings)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="at most this many per group")
    args = parser.parse_args()
    measure("lean files", lean_files(args.limit))
    measure("jsonl statements", jsonl_statements(args.limit))


if __name__ == "__main__":
    main()
