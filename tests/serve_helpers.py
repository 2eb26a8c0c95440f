"""A real `formalbench serve` for tests: started on a free loopback port, stopped by its pid."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import formalbench

SRC = Path(formalbench.__file__).resolve().parents[1]
KEY = "test-key-0123456789abcdef"


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    log: Path

    def children(self, name: str) -> list[object]:
        import psutil

        found = []
        with contextlib.suppress(psutil.Error):
            for p in psutil.Process(self.proc.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if p.name() == name:
                        found.append(p)
        return found


@contextlib.contextmanager
def running(
    tmp: Path, *args: str, key: str | None = KEY, extra_env: dict[str, str] | None = None
) -> Iterator[Server]:
    """`formalbench serve --port 0 ARGS` until the block ends (SIGTERM, then a wait); no
    process the service started (coqc, coqtop, coqchk, bwrap) may outlive it. The service runs
    on the host's Coq (a test that compares it with `check` pins `check` to it too): the fault
    tests find and kill its `coqc` processes by name, which Rocq 9 calls `rocqworker`.
    `extra_env`: variables set for the service (the Lean tests' PATH to a stand-in `lake`)."""
    env = dict(os.environ, PYTHONPATH=str(SRC), FORMALBENCH_TOOLCHAIN="host")
    env.update(extra_env or {})
    env.pop("FORMALBENCH_SERVE_API_KEY", None)
    if key is not None:
        env["FORMALBENCH_SERVE_API_KEY"] = key
    log = tmp / f"serve-{time.monotonic_ns()}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "formalbench", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
        )
    left: list[Any] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
        assert found, (line, log.read_text())
        yield Server(proc, found.group(1), log)
    finally:
        import psutil

        with contextlib.suppress(psutil.Error):
            left = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        _, alive = psutil.wait_procs(left, timeout=10)
        assert not alive, f"processes left after the service stopped: {alive}"


def check_json(folder: Path, original: str, candidate: str, toolchain: str = "host") -> dict:
    """`formalbench check --json` of `candidate` against `original` on `toolchain` (the Coq
    the service under test runs: the same Coq must decide both)."""
    (folder / "o.v").write_text(original)
    (folder / "c.v").write_text(candidate)
    out = subprocess.run(
        [sys.executable, "-m", "formalbench", "check", "c.v", "--against", "o.v", "--json"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(SRC), "FORMALBENCH_TOOLCHAIN": toolchain},
    )
    return dict(json.loads(out.stdout))
