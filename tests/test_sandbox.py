"""The checker sandbox: what environment a child process sees, and its limits."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from formalbench.backends.sandbox import allowed_name, run_limited, scrubbed_env
from formalbench.core.records import CheckStatus

SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai",
    "GITHUB_PAT": "ghp_test_pat",
    "MY_PASSWD": "hunter2",
    "DATABASE_URL": "postgres://u:p@host/db",
    "LAKE_CACHE_KEY": "lake-upload-key",  # an allowed family, but a secret all the same
}
KEPT = {"LEAN_PATH": "/opt/lean/lib", "LC_ALL": "C.UTF-8", "COQPATH": "/opt/coq", "TZ": "UTC"}


@pytest.fixture
def environment(monkeypatch) -> None:
    for name, value in {**SECRETS, **KEPT}.items():
        monkeypatch.setenv(name, value)


def child_env(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def test_child_sees_the_allow_list_and_no_credential(environment, tmp_path: Path) -> None:
    outcome = run_limited(["env"], cwd=tmp_path, timeout=10)
    assert outcome.status == CheckStatus.ok and outcome.returncode == 0
    seen = child_env(outcome.stdout)
    assert not set(SECRETS) & set(seen)
    assert not any(value in outcome.stdout for value in SECRETS.values())
    assert {k: seen.get(k) for k in KEPT} == KEPT
    assert seen["PATH"] and seen["HOME"]


def test_extra_variables_are_added_as_given(environment, tmp_path: Path) -> None:
    env = scrubbed_env({"LEAN_PATH": "/project/.lake/build/lib/lean"})
    seen = child_env(run_limited(["env"], cwd=tmp_path, timeout=10, env=env).stdout)
    assert seen["LEAN_PATH"] == "/project/.lake/build/lib/lean"
    assert "OPENAI_API_KEY" not in seen


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("PATH", True),
        ("LC_CTYPE", True),
        ("ELAN_HOME", True),
        ("LEAN_SYSROOT", True),
        ("OCAMLPATH", True),
        ("ANTHROPIC_API_KEY", False),
        ("GH_TOKEN", False),
        ("AWS_SECRET_ACCESS_KEY", False),
        ("HTTPS_PROXY", False),
        ("LAKE_CACHE_KEY", False),
        ("COQ_AUTH", False),
    ],
)
def test_allowed_names(name: str, allowed: bool) -> None:
    assert allowed_name(name) is allowed


def test_timeout_kills_the_child_and_says_so(tmp_path: Path) -> None:
    code = "import time; time.sleep(30)"
    outcome = run_limited([sys.executable, "-c", code], cwd=tmp_path, timeout=0.5)
    assert outcome.status == CheckStatus.timeout and outcome.elapsed < 5
