"""Finding the proof-assistant processes a test started, to assert that none outlives a run."""

from __future__ import annotations

from pathlib import Path

import psutil

from tests.suite_coq import COMPILE_PROCESSES


def coqc_under(folder: Path, compiling: str | None = None) -> list[psutil.Process]:
    """Live compiling Coq processes (`coqc`; Rocq 9's `rocqworker`) whose working directory
    lies under `folder` (and, if given, whose command line names the file `compiling`: the
    candidate, not the original built first)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.info["name"] not in COMPILE_PROCESSES or not proc.cwd().startswith(str(folder)):
                continue
            if compiling is None or compiling in (proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def naming(marker: str) -> dict[int, str]:
    """pid -> command line of every live process whose command line names `marker` (a
    zygote's spool folder names the pid of the process that started it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            if marker in line:
                found[int(entry.name)] = line
    return found
