"""Records first made by several pool threads at once: the backend builds their validators
before its pool starts, so none is left broken (pydantic builds deferred validators without
a lock). Run in a fresh interpreter: validators are built once per process."""

from __future__ import annotations

import subprocess
import sys

RACE = r"""
import threading
from formalbench.backends.registry import make_backend
from formalbench.core.records import CheckResult, Diagnostic, Severity

backend = make_backend("coq", workers=2)
backend._pool()  # what every threaded check does first
barrier, errors = threading.Barrier(8), []

def first_use():
    barrier.wait()
    try:
        result = CheckResult(backend="coq")
        result.holes = []
        result.diagnostics = [Diagnostic(severity=Severity.error, message="x")]
    except Exception as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=first_use) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
backend.close()
print(len(errors), errors[:1])
"""


def test_records_made_at_once_by_pool_threads_stay_usable() -> None:
    out = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0 []"
