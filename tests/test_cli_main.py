"""The `formalbench` entry point: click's usage errors are one line on stderr with exit 2.

The console script is run as a user runs it (a subprocess), because `app()` as the script
calls it is the path where typer used to print its boxed error panel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from formalbench.cli.main import app


def console_script() -> str:
    beside = Path(sys.executable).with_name("formalbench")
    found = str(beside) if beside.is_file() else shutil.which("formalbench")
    if found is None:
        pytest.skip("the formalbench console script is not installed")
    return found


def run_script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script(), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_a_bad_option_value_is_one_line_with_exit_2(tmp_path: Path) -> None:
    done = run_script("check", "a", "--against", "b", "--timeout", "abc", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("formalbench: error: ") and "'--timeout'" in lines[0]
    assert "formalbench check --help" in lines[0]
    assert "╭" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "x", "--no-such-option"], "No such option: --no-such-option"),
        (["check"], "Missing argument"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_usage_errors_in_process_are_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("formalbench: error: ") and message in line


def test_help_and_user_errors_keep_their_exit_codes(tmp_path: Path) -> None:
    shown = CliRunner().invoke(app, ["--help"])
    assert shown.exit_code == 0 and "eval" in shown.output
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "nothing")])
    assert missing.exit_code == 2
    assert " ".join(missing.output.split()) == (
        f"formalbench: error: {tmp_path / 'nothing'}: not a run directory (no run.sqlite in it)"
    )
    bare = CliRunner().invoke(app, [])  # no command: the help, as before
    assert bare.exit_code == 2 and "Usage" in bare.output
