"""What the kernel identity check costs per Coq check, and the text pre-filter's speed.

Two sets of candidates per miniF2F-rocq statement: `admitted` (the statement closed with
`Admitted.`: it compiles and `Print Assumptions` of an admitted theorem is instant, the
worst case for the ratio) and `proved` (the first of a few automation tactics that closes
it, as a solver would submit). Three timings each:

- `alone`: coqc of the candidate alone (nothing appended), the baseline;
- `first`: the verifier's assistant route on an attempt at a task never seen (it also
  compiles the original, once per task);
- `warm`: the same for every later attempt (the original's `.vo` comes from the cache):
  the candidate compiled alone, plus its kernel dump (a warm coqtop) and the comparison.

Wall time and coqc CPU time (the children's, steadier on a shared machine). Prints the
medians, the ratio of `warm` to `alone` (target <= 1.3x), and the static
pre-filter's rate in files/s (text layer alone, its parse cache cleared).

    python bench/bench_identity.py --limit 20
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from formalbench.backends.coq import CoqBackend
from formalbench.checking.coq_kernel import KernelCheck
from formalbench.checking.holes import fill_holes, hole_decls
from formalbench.checking.verifier import StrictVerifier
from formalbench.core.config import VerifierPolicy
from formalbench.core.records import Language

# tried in order on each task for the `proved` set (the portfolio's usual winners)
TACTICS = ("intros; lra", "intros; lia", "intros; nia", "reflexivity", "intros; nra")
REQUIRES = "Require Import Lia Lra Psatz."
DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "minif2f-coq"


def load(data: Path, limit: int | None, pattern: str = "*") -> list[str]:
    files = sorted((data / "test").glob(f"{pattern}.v")) + sorted(
        (data / "valid").glob(f"{pattern}.v")
    )
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
        for tactic in TACTICS:
            candidate = fill_holes(text, Language.coq, [f"{REQUIRES}\n{tactic}."])
            result = backend.check(candidate)
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
    parser.add_argument("--pattern", default="*", help="file-name glob, e.g. 'mathd_*'")
    args = parser.parse_args()
    texts = load(args.data.resolve(), args.limit, args.pattern)
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
    kernel = KernelCheck(backend, cache)
    policy = VerifierPolicy()
    rows: dict[str, list[tuple[float, ...]]] = {"wall": [], "cpu": []}
    refused = 0
    try:
        for original, candidate in pairs:
            targets = verifier.targets(original)
            marks = [_clock()]
            alone = backend.check(candidate)
            marks.append(_clock())
            _, first = kernel.check(original, candidate, targets, None, policy)
            marks.append(_clock())
            _, warm = kernel.check(original, candidate, targets, None, policy)
            marks.append(_clock())
            if not alone.compiled:
                continue  # a task that does not compile here measures nothing
            refused += bool(first or warm)
            for i, clock in enumerate(rows):
                rows[clock].append(tuple(marks[k + 1][i] - marks[k][i] for k in range(3)))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if not rows["wall"]:
        print(f"[{name}] no candidate compiled")
        return
    print(f"[{name}] candidates: {len(rows['wall'])}; refused by the kernel route: {refused}")
    for clock, found in rows.items():
        alone_s, first_s, warm_s = (statistics.median(c) for c in zip(*found, strict=True))
        print(
            f"[{name}] {clock:>4} s/check (median): coqc alone {alone_s:.2f}  first attempt "
            f"{first_s:.2f}  warm {warm_s:.2f}"
        )
        ratio = statistics.median(r[2] / r[0] for r in found)
        total = sum(r[2] for r in found) / sum(r[0] for r in found)
        print(
            f"[{name}] {clock:>4} warm over coqc alone: median {ratio:.2f}x, "
            f"total {total:.2f}x (target <= 1.3x)"
        )


def _clock() -> tuple[float, float]:
    """(wall seconds, CPU seconds of finished children: coqc), for timing one phase."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
