"""Where the tests find the public benchmark data (`shared/` of the project's workplace).

One place resolves it, so that a plain clone without the data still runs every other test:
``FORMALBENCH_TEST_DATA`` names the folder (the one holding ``data/`` and ``fixtures/``); where it
is unset, the shared folder beside the checkout is used when it exists (``conftest.py`` exports
the answer for the subprocesses tests start). Tests that need it use :data:`needs_shared` (or the
``shared`` fixture of ``conftest.py``); when the folder is absent they skip with one reason, and
``FORMALBENCH_REQUIRE_DATA=1`` (set by ``.ci/run``) turns that skip into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV_VAR = "FORMALBENCH_TEST_DATA"
REQUIRE_VAR = "FORMALBENCH_REQUIRE_DATA"
SKIP_REASON = (
    "public benchmark data not found: set FORMALBENCH_TEST_DATA to the folder holding "
    "data/ and fixtures/ (or place shared/ beside the checkout)"
)


def _resolve() -> Path | None:
    """The folder named by the variable, else shared/ beside the checkout (the same answer
    for tests and for the bench scripts that import this module)."""
    named = os.environ.get(ENV_VAR) or str(Path(__file__).resolve().parents[2] / "shared")
    return Path(named).resolve() if (Path(named) / "data").is_dir() else None


SHARED: Path | None = _resolve()
#: ``shared/`` or a path that does not exist, so module-level paths can be built either way.
ROOT: Path = SHARED if SHARED is not None else Path("/nonexistent-formalbench-shared")
DATA: Path = ROOT / "data"
FIXTURES: Path = ROOT / "fixtures"

needs_shared = pytest.mark.needs_shared


def read_or_empty(path: Path) -> str:
    """The text of a data file at import time, or "" when the data is absent (tests skip)."""
    return path.read_text(encoding="utf-8") if SHARED is not None else ""
