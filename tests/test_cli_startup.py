"""Start-up of the command line: a sub-command imports only what it needs.

`formalbench check --static-only` is a millisecond of work; importing the model SDKs, numpy,
matplotlib or the web stack for it used to cost seconds. These tests run a fresh interpreter
and look at `sys.modules` afterwards (behaviour, not timing; timings are in
bench/bench_startup.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def imported_by(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `python -X importtime -m formalbench ARGV` and read the modules it imported off
    the importtime report (every module, dotted names included)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "formalbench", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    assert "formalbench.cli.main" in names, done.stderr[-2000:]
    return done, names


def heavy_in(names: set[str], heavy: set[str]) -> list[str]:
    """The names of `heavy` (packages or modules) that were imported, submodules included."""
    return sorted(h for h in heavy if any(n == h or n.startswith(h + ".") for n in names))


# Not needed to check one file without an assistant: the model stack and its prompts, the
# formalize pipeline and the judge, plotting, the web stack, Ray, and the backends' own
# modules (coqc's kernel identity, the verdict cache's SQLite).
NOT_FOR_STATIC_CHECK = {
    *HEAVY,
    "jinja2",
    "rich",
    "sqlite3",
    "asyncio",
    "formalbench.llm",
    "formalbench.judge",
    "formalbench.pipelines.formalize",
    "formalbench.pipelines.evaluate",
    "formalbench.pipelines.ape",
    "formalbench.checking.coq_kernel",
    "formalbench.checking.coq_compare",
    "formalbench.store",
}


def test_importtime_of_a_static_json_check_names_no_heavy_module() -> None:
    args = [str(CHECK / "candidate.v"), "--against", str(CHECK / "original.v")]
    done, names = imported_by(["check", *args, "--static-only", "--json"])
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1])["candidate"] == args[0]
    assert "formalbench.checking.verifier" in names  # the check did run
    assert not heavy_in(names, NOT_FOR_STATIC_CHECK), heavy_in(names, NOT_FOR_STATIC_CHECK)


def test_report_of_an_eval_run_imports_no_model_or_formalize_stack(tmp_path: Path) -> None:
    from formalbench.backends.base import Backend
    from formalbench.cli.main import app
    from formalbench.core.records import CheckResult, Language, Task
    from formalbench.llm.replay import ScriptedModel
    from formalbench.pipelines.evaluate import run_evaluation
    from formalbench.pipelines.run_config import EvalConfig

    class InstantBackend(Backend):  # stand-in for coqc: the report is what is tested
        name = "instant"
        language = Language.coq

        def check(self, source: str, *, targets: Any = (), timeout: Any = None) -> CheckResult:
            return CheckResult(backend=self.name, axioms={t: [] for t in targets})

        def version(self) -> str:
            return "instant 0"

    task = Task(id="t0", language=Language.coq, formal="Theorem t : 1 = 1.\nProof.\nAdmitted.\n")
    data = tmp_path / "tasks.jsonl"
    data.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    run_dir = tmp_path / "run"
    answer = "```coq\nProof.\n  reflexivity.\nQed.\n```"
    run_evaluation(
        EvalConfig(dataset=str(data), solver="whole", samples=1),
        run_dir,
        backend=InstantBackend(),
        model=ScriptedModel(lambda call: answer, spec="scripted"),
    )
    # writes report.html once; the command below finds it up to date
    with contextlib.suppress(SystemExit):
        app(["report", str(run_dir)], standalone_mode=False)
    done, names = imported_by(["report", str(run_dir)])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pass@1" in done.stdout
    heavy = {*HEAVY, "jinja2", "rapidfuzz", "formalbench.llm", "formalbench.judge"}
    heavy |= {"formalbench.pipelines.formalize", "formalbench.pipelines.ape.mining"}
    assert not heavy_in(names, heavy), heavy_in(names, heavy)


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
