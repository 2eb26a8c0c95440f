"""What the kernel identity check costs per Coq check, and the text pre-filter's speed.

For each miniF2F-rocq statement (closed with `Admitted.`, so it compiles; a real proof only
makes the candidate's own compile longer and the ratio smaller), three timings:

- `alone`: the backend's ordinary check of the candidate (compile + `Print Assumptions`),
  what the verifier did before;
- `first`: the kernel identity check of an attempt at a task never seen (it also compiles
  the original, once per task);
- `warm`: the same for every later attempt (the original's `.vo` comes from the cache):
  the candidate's check plus the third file.

Prints the medians, the extra time of `warm` over `alone` (target < 30 %), and the static
pre-filter's rate in files/s (text layer alone, its parse cache cleared).

    python bench/bench_identity.py --limit 20
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.checking.coq_identity import KernelIdentity
from formalbench.checking.holes import hole_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "minif2f-coq"


def load(data: Path, limit: int | None) -> list[str]:
    files = sorted((data / "test").glob("*.v")) + sorted((data / "valid").glob("*.v"))
    if not files:
        sys.exit(f"error: no .v files under {data}/test or {data}/valid")
    texts = []
    for path in files[:limit]:
        text = path.read_text(encoding="utf-8")
        if "Admitted" not in text:
            text = text.rstrip() + "\nAdmitted.\n"
        texts.append(text)
    return texts


def static_rate(texts: list[str], repeats: int = 3) -> float:
    verifier = StrictVerifier(None, language=Language.coq)
    start = time.perf_counter()
    for _ in range(repeats):
        hole_decls.cache_clear()
        for text in texts:
            verifier.static_findings(text, text)
    return repeats * len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    texts = load(args.data.resolve(), args.limit)
    print(f"static pre-filter: {static_rate(texts):.0f} files/s ({len(texts)} files)")

    cache = Path(tempfile.mkdtemp(prefix="bench-identity-"))
    backend = CoqBackend(workers=1, timeout=120)
    kernel = KernelIdentity(backend)
    kernel.identity.cache_dir = cache
    verifier = StrictVerifier(None, language=Language.coq)
    rows: list[tuple[float, float, float]] = []
    refused = 0
    try:
        for text in texts:
            targets = verifier.targets(text)
            t0 = time.perf_counter()
            alone = backend.check(text, targets=targets)
            t1 = time.perf_counter()
            _, _, first = kernel.check(text, text, targets, None)
            t2 = time.perf_counter()
            _, _, warm = kernel.check(text, text, targets, None)
            t3 = time.perf_counter()
            if not alone.compiled:
                continue  # a task that does not compile here measures nothing
            refused += bool(first or warm)
            rows.append((t1 - t0, t2 - t1, t3 - t2))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not rows:
        sys.exit("error: no task compiled")
    alone_s, first_s, warm_s = (statistics.median(c) for c in zip(*rows, strict=True))
    ratio = statistics.median(w / a - 1 for a, _, w in rows)
    total = sum(w for *_, w in rows) / sum(a for a, *_ in rows) - 1
    print(f"tasks compiled: {len(rows)} of {len(texts)}; identity refused the original: {refused}")
    print(f"median s/check: alone {alone_s:.2f}  first attempt {first_s:.2f}  warm {warm_s:.2f}")
    print(f"extra time of the identity check (warm) over the check alone: median {ratio:+.0%}, "
          f"total {total:+.0%} (target < +30 %)")  # fmt: skip


if __name__ == "__main__":
    main()
