"""What the kernel identity check costs per Coq check, and the text pre-filter's speed.

Two sets of candidates per miniF2F-rocq statement: `admitted` (the statement closed with
`Admitted.`: it compiles, and `Print Assumptions` of an admitted theorem is instant, so the
candidate's own check is as cheap as it gets and this is the worst case for the ratio), and
`proved` (the first of a few automation tactics that closes it, as a solver would submit:
`Print Assumptions` then walks the proof, as in real use). Three timings each:

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
from formalbench.checking.holes import fill_holes, hole_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.records import Language

# tried in order on each task for the `proved` set (the portfolio's usual winners)
TACTICS = ("intros; lra", "intros; lia", "intros; nia", "reflexivity", "intros; nra")
REQUIRES = "Require Import Lia Lra Psatz."
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


def proved(
    backend: CoqBackend, texts: list[str], verifier: StrictVerifier
) -> list[tuple[str, str]]:
    """(task, candidate) for each task that a tactic of TACTICS proves."""
    found = []
    for text in texts:
        targets = verifier.targets(text)
        for tactic in TACTICS:
            candidate = fill_holes(text, Language.coq, [f"{REQUIRES}\n{tactic}."])
            result = backend.check(candidate, targets=targets)
            if result.compiled and not result.holes:
                found.append((text, candidate))
                break
    return found


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

    backend = CoqBackend(workers=1, timeout=120)
    verifier = StrictVerifier(None, language=Language.coq)
    sets = {"admitted": [(t, t) for t in texts]}
    sets["proved"] = proved(backend, texts, verifier)
    for name, pairs in sets.items():
        measure(name, backend, verifier, pairs)


def measure(
    name: str, backend: CoqBackend, verifier: StrictVerifier, pairs: list[tuple[str, str]]
) -> None:
    cache = Path(tempfile.mkdtemp(prefix="bench-identity-"))
    kernel = KernelIdentity(backend)
    kernel.identity.cache_dir = cache
    rows: list[tuple[float, float, float]] = []
    refused = 0
    try:
        for original, candidate in pairs:
            targets = verifier.targets(original)
            t0 = time.perf_counter()
            alone = backend.check(candidate, targets=targets)
            t1 = time.perf_counter()
            _, _, first = kernel.check(original, candidate, targets, None)
            t2 = time.perf_counter()
            _, _, warm = kernel.check(original, candidate, targets, None)
            t3 = time.perf_counter()
            if not alone.compiled:
                continue  # a task that does not compile here measures nothing
            refused += bool(first or warm)
            rows.append((t1 - t0, t2 - t1, t3 - t2))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not rows:
        print(f"[{name}] no candidate compiled")
        return
    alone_s, first_s, warm_s = (statistics.median(c) for c in zip(*rows, strict=True))
    ratio = statistics.median(w / a - 1 for a, _, w in rows)
    total = sum(w for *_, w in rows) / sum(a for a, *_ in rows) - 1
    print(f"[{name}] candidates: {len(rows)}; refused by the identity check: {refused}")
    print(f"[{name}] median s/check: alone {alone_s:.2f}  first attempt {first_s:.2f}  "
          f"warm {warm_s:.2f}")  # fmt: skip
    print(f"[{name}] extra time of the identity check (warm) over the check alone: median "
          f"{ratio:+.0%}, total {total:+.0%} (target < +30 %)")  # fmt: skip


if __name__ == "__main__":
    main()
