"""Start-up of the command line: a sub-command imports only what it needs.

`formalbench check --static-only` is a millisecond of work; importing the model SDKs, numpy,
matplotlib or the web stack for it used to cost seconds. These tests run a fresh interpreter
and look at `sys.modules` afterwards (behaviour, not timing; timings are in
bench/bench_startup.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import formalbench

HEAVY = ["openai", "anthropic", "matplotlib", "numpy", "fastapi", "uvicorn", "ray", "httpx"]
CHECK = Path(formalbench.__file__).parent / "datasets" / "examples" / "check"
SRC = str(Path(formalbench.__file__).resolve().parents[1])


def loaded_after(code: str) -> set[str]:
    """The top-level packages imported by `code` run in a new interpreter."""
    script = (
        "import sys, json\n"
        f"{code}\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    marker = done.stderr.rfind("MODULES ")
    assert marker >= 0, done.stderr
    return set(json.loads(done.stderr[marker + len("MODULES ") :]))


def test_importing_the_cli_loads_no_heavy_library() -> None:
    loaded = loaded_after("import formalbench.cli.main")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_report_module_loads_no_heavy_library() -> None:
    loaded = loaded_after("import formalbench.cli.main, formalbench.cli.report")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_a_static_check_runs_without_heavy_libraries() -> None:
    args = [str(CHECK / "candidate.v"), "--against", str(CHECK / "original.v"), "--static-only"]
    code = (
        "from formalbench.cli.main import app\n"
        "try:\n"
        f"    app(['check', *{args!r}, '--json'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )
    loaded = loaded_after(code)
    assert "formalbench" in loaded
    assert not loaded & {*HEAVY, "asyncio"}, sorted(loaded & {*HEAVY, "asyncio"})


def test_help_still_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "formalbench", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC, "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr
    for name in ("check", "eval", "report", "formalize", "review"):
        assert f" {name} " in done.stdout, name
