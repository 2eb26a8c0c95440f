"""Finding the proof-assistant processes a test started, to assert that none outlives a run."""

from __future__ import annotations

from pathlib import Path

import psutil


def coqc_under(folder: Path) -> list[psutil.Process]:
    """Live coqc processes whose working directory lies under `folder`."""
    found = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "coqc" and proc.cwd().startswith(str(folder)):
                found.append(proc)
        except psutil.Error:
            continue
    return found
