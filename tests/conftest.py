"""Test-wide set-up: the public data folder and what happens when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from formalbench.toolchains.toolchain import default_name
from tests.shared_data import ENV_VAR, REQUIRE_VAR, SHARED, SKIP_REASON

# The suite's Coq is the product's default toolchain (the newest installed: rocq-9.2 where
# `scripts/install.sh` provisioned it, else the host's coqc), decided once here and exported,
# so every test and every subprocess a test starts runs on the same one. Tests marked `host`
# run on the host's coqc (8.16 here) whatever the suite's toolchain (the kernel bugs 8.16 gets
# wrong, the plugin against 8.16's API, a few end-to-end verdicts); tests marked `rocq` name
# rocq-9.2. FORMALBENCH_TOOLCHAIN set before pytest starts picks the suite's toolchain instead.
# CI sets FORMALBENCH_REQUIRE_ROCQ=1: the suite must then run on rocq-9.2, never silently on
# the host.
ROCQ = "rocq-9.2"
HOST = "host"
REQUIRE_ROCQ_VAR = "FORMALBENCH_REQUIRE_ROCQ"  # CI: 1, a missing rocq-9.2 fails, never skips
os.environ["FORMALBENCH_TOOLCHAIN"] = os.environ.get("FORMALBENCH_TOOLCHAIN", "").strip() or (
    default_name()
)
SUITE_TOOLCHAIN = os.environ["FORMALBENCH_TOOLCHAIN"]

# Export the data folder tests.shared_data found, so the subprocesses tests start see it too.
if SHARED is not None and not os.environ.get(ENV_VAR):
    os.environ[ENV_VAR] = str(SHARED)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_shared: needs the public benchmark data folder")
    config.addinivalue_line("markers", f"rocq: runs on the provisioned {ROCQ} toolchain")
    config.addinivalue_line(
        "markers",
        "host(reason): runs on the host's coqc (8.16 here) whatever the suite's toolchain; "
        "the reason says why this test is about that Coq",
    )
    if os.environ.get(REQUIRE_ROCQ_VAR) == "1":
        from formalbench.toolchains import provision

        if provision.record_of(ROCQ) is None or SUITE_TOOLCHAIN == HOST:
            raise pytest.UsageError(
                f"{REQUIRE_ROCQ_VAR}=1: the suite must run on {ROCQ}, but it would run on "
                f"{SUITE_TOOLCHAIN} ({ROCQ} installed: {provision.record_of(ROCQ) is not None}; "
                f"`formalbench toolchain install {ROCQ}`)"
            )


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


@pytest.fixture(params=sorted({SUITE_TOOLCHAIN, HOST}))
def suite_and_host(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """An end-to-end verdict that must hold on the host's Coq (8.16 here) too: the test runs
    on the suite's toolchain and on the host's (once where they are the same); the name."""
    monkeypatch.setenv("FORMALBENCH_TOOLCHAIN", request.param)
    return str(request.param)


def toolchain_of(item: pytest.Item) -> str:
    """The toolchain a test runs on: the host's for a test marked `host`, else the suite's."""
    return HOST if item.get_closest_marker("host") is not None else SUITE_TOOLCHAIN


@pytest.fixture(autouse=True)
def _suite_toolchain(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts on its toolchain (`toolchain_of`): a command run in-process with
    `--toolchain NAME` puts NAME in FORMALBENCH_TOOLCHAIN for the rest of the process, and
    later tests would silently run on it; monkeypatch restores the value after each test.
    (A fixture of a wider scope is made before this one runs: a `host` test that shares a
    module- or session-scoped backend names `toolchain="host"` there, or marks the module.)"""
    monkeypatch.setenv("FORMALBENCH_TOOLCHAIN", toolchain_of(request.node))
