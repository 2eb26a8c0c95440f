"""Toolchain-neutral expectations for tests that run on the suite's Coq (tests/conftest.py:
rocq-9.2 where installed, else the host's 8.16).

- `std(name)`: a standard-library name written as Coq 8 prints it (`Coq.Logic.Classical_Prop.
  classic`) as the toolchain the test runs on prints it (Rocq 9: `Stdlib.Logic...`, and
  `Corelib.Init...` for the prelude), so an expectation states the same object on both;
- `coqc(args, cwd)`: compile a library of the test's own with the test's toolchain (a `.vo`
  made by another Coq cannot be loaded: "Error when parsing .vo");
- `COMPILE_PROCESSES`: the names a compiling Coq process has (Rocq 9's `coqc` runs the
  compile in a `rocqworker`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from formalbench.toolchains.toolchain import resolve

COMPILE_PROCESSES = frozenset({"coqc", "rocqworker"})


def rocq9() -> bool:
    """Whether the test's toolchain (FORMALBENCH_TOOLCHAIN as the test runs) is Rocq 9+."""
    return int(resolve().version().split(".", 1)[0]) >= 9


def std(name: str) -> str:
    """`Coq.X` as the test's toolchain prints it (unchanged on Coq 8)."""
    root, _, rest = name.partition(".")
    if root != "Coq" or not rocq9():
        return name
    return f"{'Corelib' if rest.startswith('Init.') else 'Stdlib'}.{rest}"


def coqc(args: Sequence[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the test's toolchain's coqc with `args` in `cwd` (a provisioned one in its root,
    `cwd` writable); `check`: a failed compile raises, with coqc's message."""
    chain = resolve()
    done = chain.run([chain.program("coqc"), *args], cwd=cwd, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"coqc {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done
