"""What the kernel dump costs next to coqc of the candidate, on real library files.

For each named `.v` file (default: two of the standard library that comes with coqc; a copy
is compiled as the library `Candidate`, never the source): coqc of the copy, the one-shot
`targets` dump of every top-level `Lemma`/`Theorem`, the `library` dump, and the same
`targets` dump twice through a warm session that preloaded the file's `Require`s (the
second is what the next candidate over the same libraries pays). Wall-clock seconds; the
two session dumps must equal the one-shot dump.

    python bench/bench_kernel_dump.py [FILE.v ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from formalbench.backends import coq_kernel_dump as kd
from formalbench.backends.coq import CoqBackend
from formalbench.backends.coq_session import CoqSession, preload_sentences

_THEOREM = re.compile(r"^(?:Lemma|Theorem)\s+([A-Za-z_][\w']*)", re.MULTILINE)


def stdlib(relative: str) -> Path:
    where = subprocess.run(["coqc", "-where"], capture_output=True, text=True, check=True)
    return Path(where.stdout.strip()) / "theories" / relative


def measure(source: Path, backend: CoqBackend) -> str:
    text = source.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="fb-kdump-bench-") as tmp:
        work = Path(tmp)
        (work / "Candidate.v").write_text(text, encoding="utf-8")
        started = time.perf_counter()
        subprocess.run(["coqc", "-q", "Candidate.v"], cwd=work, check=True)
        coqc = time.perf_counter() - started
        names = [f"Candidate.{n}" for n in sorted(set(_THEOREM.findall(text)))]
        started = time.perf_counter()
        dump = kd.dump_targets(backend, work, names, timeout=600)
        one_shot = time.perf_counter() - started
        started = time.perf_counter()
        library = kd.dump_library(backend, work, timeout=600)
        whole = time.perf_counter() - started
        session = CoqSession(backend, "coqtop")
        warm: list[float] = []
        try:
            session.start()
            session.prepare(preload_sentences(text, ["Candidate"]), time.monotonic() + 600)
            for _ in range(2):
                started = time.perf_counter()
                again = kd.session_dump_targets(
                    session, [work / "Candidate.vo"], names, time.monotonic() + 600
                )
                warm.append(time.perf_counter() - started)
                assert again == dump, "the session's dump differs from the one-shot dump"
        finally:
            session.close()
    return (
        f"{source.name}: {len(names)} targets, coqc {coqc:.2f}s, one-shot dump {one_shot:.2f}s, "
        f"library dump {whole:.2f}s ({len(library.objects)} objects), session dump "
        f"{warm[0]:.2f}s then {warm[1]:.2f}s; closure {len(dump.closure.constants)} constants "
        f"+ {len(dump.closure.inductives)} inductives, {len(dump.universes.levels)} levels"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or [stdlib("Arith/PeanoNat.v"), stdlib("Reals/Rtrigo_fun.v")]
    if shutil.which("coqc") is None:
        raise SystemExit("coqc is not installed")
    backend = CoqBackend()
    for source in files:
        print(measure(source, backend), flush=True)


if __name__ == "__main__":
    main()
