"""What the coqchk replay (checking/coq_replay.py) costs on real proofs.

For a sample of standard-library files (copied, never compiled in place), one theorem per
file becomes a task (`bench_real_proofs.tasks_of`); its genuine proof is checked warm (the
original's `.vo` already cached, as in `eval`) with the replay off and then on, and both are
compared with coqc of the candidate alone. Printed: per-task seconds, the replay's added
CPU and wall (total and per task), and the ratios to coqc alone. Times are children's CPU
(steadier on a shared machine) and wall; on a loaded machine say "under load".

    python bench/bench_replay.py --sample 12 --max-bytes 20000
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_real_proofs import stdlib_theories, tasks_of, timed  # noqa: E402
from formalbench.backends import coq_session  # noqa: E402
from formalbench.backends.coq import CoqBackend  # noqa: E402
from formalbench.checking.verifier import StrictVerifier  # noqa: E402
from formalbench.core.config import VerifierPolicy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="Coq sources (default: stdlib)")
    parser.add_argument("--sample", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-bytes", type=int, default=20000)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    folder = args.folder or stdlib_theories()
    files = sorted(p for p in folder.rglob("*.v") if "Init" not in p.parts)
    files = [p for p in files if p.stat().st_size <= args.max_bytes]
    files = sorted(random.Random(args.seed).sample(files, min(args.sample, len(files))))
    backend = CoqBackend(timeout=args.timeout, workers=1)
    off = StrictVerifier(backend, VerifierPolicy(replay=False))
    on = StrictVerifier(backend, VerifierPolicy(replay=True))
    total = {"alone": 0.0, "off": 0.0, "on": 0.0, "alone_w": 0.0, "off_w": 0.0, "on_w": 0.0}
    tasks = refused = 0
    scratch = Path(tempfile.mkdtemp(prefix="fb-replay-bench-"))
    try:
        for path in files:
            copy = scratch / path.name
            shutil.copy(path, copy)
            text = copy.read_text(encoding="utf-8", errors="replace")
            alone, alone_cpu, alone_wall = timed(backend.check, text)
            found = tasks_of(path.name, text)[:1]
            if not alone.compiled or not found:
                continue
            task = found[0]
            first = off.verify(task.original, task.real)  # builds and caches the original
            if not first.passed:
                continue
            without, off_cpu, off_wall = timed(off.verify, task.original, task.real)
            with_replay, on_cpu, on_wall = timed(on.verify, task.original, task.real)
            refused += not with_replay.passed
            tasks += 1
            for key, value in (
                ("alone", alone_cpu), ("off", off_cpu), ("on", on_cpu),
                ("alone_w", alone_wall), ("off_w", off_wall), ("on_w", on_wall),
            ):  # fmt: skip
                total[key] += value
            print(
                f"{path.name} {task.theorem}: alone {alone_wall:.2f}s, check {off_wall:.2f}s, "
                f"check+replay {on_wall:.2f}s" + ("" if with_replay.passed else " REFUSED"),
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        coq_session.close_all()
    if not tasks:
        sys.exit("no task compiled and passed")
    added_cpu, added_wall = total["on"] - total["off"], total["on_w"] - total["off_w"]
    print(f"\n{tasks} genuine proofs, {refused} refused by the replay")
    print(
        f"replay adds {added_cpu / tasks:.2f}s CPU, {added_wall / tasks:.2f}s wall per check; "
        f"replay alone = {added_cpu / total['alone']:.2f}x coqc alone (CPU), "
        f"{added_wall / total['alone_w']:.2f}x (wall)"
    )
    print(
        f"check (warm) vs coqc alone, CPU: without replay {total['off'] / total['alone']:.2f}x, "
        f"with {total['on'] / total['alone']:.2f}x; wall: {total['off_w'] / total['alone_w']:.2f}x"
        f" -> {total['on_w'] / total['alone_w']:.2f}x"
    )


if __name__ == "__main__":
    main()
