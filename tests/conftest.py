"""Test-wide set-up: the public data folder and what happens when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.shared_data import ENV_VAR, REQUIRE_VAR, SHARED, SKIP_REASON

# The suite's Coq is the host's (the coqc on PATH), whatever a developer installed: a run on
# a provisioned toolchain is asked for by name (tests marked `rocq`, `ROCQ` below), or for the
# whole suite by setting FORMALBENCH_TOOLCHAIN before pytest starts.
os.environ.setdefault("FORMALBENCH_TOOLCHAIN", "host")
SUITE_TOOLCHAIN = os.environ["FORMALBENCH_TOOLCHAIN"]
ROCQ = "rocq-9.2"
REQUIRE_ROCQ_VAR = "FORMALBENCH_REQUIRE_ROCQ"  # CI: 1, a missing rocq-9.2 fails, never skips

# Export the data folder tests.shared_data found, so the subprocesses tests start see it too.
if SHARED is not None and not os.environ.get(ENV_VAR):
    os.environ[ENV_VAR] = str(SHARED)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_shared: needs the public benchmark data folder")
    config.addinivalue_line("markers", f"rocq: runs on the provisioned {ROCQ} toolchain")


def _missing() -> None:
    if os.environ.get(REQUIRE_VAR) == "1":
        pytest.fail(SKIP_REASON + f" ({REQUIRE_VAR}=1 forbids skipping)")
    pytest.skip(SKIP_REASON)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if SHARED is None and item.get_closest_marker("needs_shared") is not None:
        _missing()
    if item.get_closest_marker("rocq") is not None:
        from formalbench.toolchains import provision

        if provision.record_of(ROCQ) is None:
            why = f"{ROCQ} is not installed (`formalbench toolchain install {ROCQ}`)"
            if os.environ.get(REQUIRE_ROCQ_VAR) == "1":
                pytest.fail(why + f" ({REQUIRE_ROCQ_VAR}=1 forbids skipping)")
            pytest.skip(why)


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


@pytest.fixture(autouse=True)
def _suite_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts on the suite's toolchain (SUITE_TOOLCHAIN, above): a command run in-process
    with `--toolchain NAME` puts NAME in FORMALBENCH_TOOLCHAIN for the rest of the process,
    and later tests would silently run on it; monkeypatch restores the value after each test."""
    monkeypatch.setenv("FORMALBENCH_TOOLCHAIN", SUITE_TOOLCHAIN)
