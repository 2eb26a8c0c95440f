"""The public-data resolver: absent data skips with one reason, or fails where it is required."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.shared_data import ENV_VAR, REQUIRE_VAR, SKIP_REASON

ROOT = Path(__file__).resolve().parents[1]


def _run_without_data(tmp_path: Path, required: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_VAR}
    env[ENV_VAR] = str(tmp_path / "no-such-folder")
    if required:
        env[REQUIRE_VAR] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs"]
        + [str(ROOT / "tests" / "test_checking_lexer.py"), "-k", "real_files or strip_comments"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_absent_data_skips_those_tests_and_runs_the_rest(tmp_path: Path) -> None:
    done = _run_without_data(tmp_path, required=False)
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout and " passed" in done.stdout, done.stdout
    assert "public benchmark data not found" in done.stdout


def test_required_data_turns_the_skip_into_a_failure(tmp_path: Path) -> None:
    done = _run_without_data(tmp_path, required=True)
    assert done.returncode == 1 and "1 error" in done.stdout, done.stdout
    assert f"{REQUIRE_VAR}=1 forbids skipping" in done.stdout


def test_named_folder_is_used(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    code = "from tests.shared_data import SHARED; print(SHARED)"
    env = {**os.environ, ENV_VAR: str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    assert out == str(tmp_path.resolve())
    assert "FORMALBENCH_TEST_DATA" in SKIP_REASON
