"""Test-wide set-up: the public data folder and what happens when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before tests.shared_data is imported: default the data folder to shared/ beside the checkout,
# and export it so that the subprocesses tests start see the same folder.
_BESIDE = Path(__file__).resolve().parents[2] / "shared"
if not os.environ.get("FORMALBENCH_TEST_DATA") and (_BESIDE / "data").is_dir():
    os.environ["FORMALBENCH_TEST_DATA"] = str(_BESIDE)

from tests.shared_data import REQUIRE_VAR, SHARED, SKIP_REASON  # noqa: E402


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
