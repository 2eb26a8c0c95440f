"""Test-wide set-up: the public data folder and what happens when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.shared_data import ENV_VAR, REQUIRE_VAR, SHARED, SKIP_REASON

# Export the data folder tests.shared_data found, so the subprocesses tests start see it too.
if SHARED is not None and not os.environ.get(ENV_VAR):
    os.environ[ENV_VAR] = str(SHARED)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_shared: needs the public benchmark data folder")


def _missing() -> None:
    if os.environ.get(REQUIRE_VAR) == "1":
        pytest.fail(SKIP_REASON + f" ({REQUIRE_VAR}=1 forbids skipping)")
    pytest.skip(SKIP_REASON)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if SHARED is None and item.get_closest_marker("needs_shared") is not None:
        _missing()


@pytest.fixture(scope="session")
def shared() -> Path:
    """The public data folder (holding data/ and fixtures/); skips the test when absent."""
    if SHARED is None:
        _missing()
    assert SHARED is not None
    return SHARED


@pytest.fixture(autouse=True)
def _sandbox_may_write_test_folders(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stand-in assistants (the fake REPL) write their logs into the test's own folder, which
    the bwrap sandbox would show read-only; tests of the sandbox itself unset this."""
    monkeypatch.setenv("FORMALBENCH_SANDBOX_WRITABLE", str(tmp_path_factory.getbasetemp()))
